// Package zerocode links the tracer into programs that never import it
// (zero-code mode): the main package of every instrumented program gets a
// blank import of the tracer package, which starts the trace plugin when
// MATRIX_REPORT is set: [blacklist.LocalTracerPkg], or
// [blacklist.AutoTracerPkg] when the build asks for the OTLP sink.
//
// The package is built by a nested "go list -export" in the directory the
// build runs in, with the parent build's flags, so it is resolved in the
// user's own module graph: "go get -tool <module>/cmd/matrixexec" puts this
// module in go.mod and pins the runtime's version. Packages the program
// already has are shared (same flags, same cache entries); the others are
// added to the program's link (PrepareLink).
package zerocode

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/gocmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/statcache"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/importcfg"
	"github.com/matrixgo/matrix/internal/self"
)

// EnvModule is MATRIX_ZEROCODE_MODULE: the absolute path of a
// module (a checkout of this module, or any module whose graph has it) in
// which zero-code mode resolves and builds the tracer instead of the
// program's module graph. Zero-code mode then works for programs whose
// module does not require this one and must not be changed, such as
// third-party test suites (integration/corpus records theirs with it).
//
// The nested build runs in that directory with GOWORK=off, with the
// parent's build flags and GOFLAGS except -mod and -modfile (they belong to
// the program's module), and with the parent's map and blacklist. The
// program's own module graph is left as it is, so the tracer's
// dependencies outside the standard library (the OTLP sink's protobuf
// encoder; with MATRIX_ZEROCODE_MODULE the sink is left out unless
// MATRIX_OTLP=on, and the tracer without it has none) come from
// that module's graph: a program that links another build of one of them
// fails to link, with a message naming the package.
//
// It is read from the environment only: the tool id (-V=full), computed
// before any flag reaches the compile, has to include the tracer it names.
const EnvModule = "MATRIX_ZEROCODE_MODULE"

// Module returns MATRIX_ZEROCODE_MODULE (see CheckModule).
func Module() string { return os.Getenv(EnvModule) }

// CheckModule validates a MATRIX_ZEROCODE_MODULE value.
func CheckModule(dir string) error {
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("bad zero-code module %q (%s): want an absolute path", dir, EnvModule)
	}
	if !exists(filepath.Join(dir, "go.mod")) {
		return fmt.Errorf("bad zero-code module %q (%s): no go.mod there", dir, EnvModule)
	}
	return nil
}

// nestedGo returns the go command that zero-code mode runs to resolve the
// tracer: in the build's directory, or in MATRIX_ZEROCODE_MODULE's module
// without the program's module flags. env is added to the environment.
func nestedGo(goTool string, args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(goTool, args...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if dir := Module(); dir != "" {
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, "GOWORK=off", "GOFLAGS="+withoutModuleFlags(os.Getenv("GOFLAGS")))
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// isModuleFlag reports whether a "-name=value" build flag selects how the
// program's own module is loaded (-mod, -modfile).
func isModuleFlag(f string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
	return name == "mod" || name == "modfile"
}

// withoutModuleFlags returns GOFLAGS without its -mod and -modfile flags.
func withoutModuleFlags(goflags string) string {
	fields := strings.Fields(goflags)
	if !slices.ContainsFunc(fields, isModuleFlag) {
		return goflags
	}
	return strings.Join(slices.DeleteFunc(fields, isModuleFlag), " ")
}

// Modes of zero-code mode (matrixexec's -zerocode, MATRIX_ZEROCODE).
const (
	// Auto links the tracer when the module graph has it.
	Auto = "auto"
	// On links it or fails the build saying what to run.
	On = "on"
	// Off never links it.
	Off = "off"
)

// Config is what zero-code mode takes from matrixexec's configuration.
type Config struct {
	// Mode is Auto, On or Off.
	Mode string
	// OTLP links the tracer with the OTLP sink (blacklist.AutoTracerPkg)
	// rather than without it (blacklist.LocalTracerPkg).
	OTLP bool
	// MapPath is the build's method mapping file, which the nested build
	// of MATRIX_ZEROCODE_MODULE uses too.
	MapPath string
	// Blacklist is the build's blacklist file, "" if it has none.
	Blacklist string
	// Log receives debug and warning messages.
	Log *slog.Logger
	// ConfigHash returns the hash of matrixexec's configuration that its
	// -V=full answer carries (executable, blacklist, filters, map
	// identity, tracer sources): part of the key under which the
	// tracer's export files are kept between builds (see autoExports).
	// Nil keeps nothing.
	ConfigHash func() (string, error)
}

// TracerPkg returns the tracer package that zero-code mode links.
func (cfg *Config) TracerPkg() string {
	if cfg.OTLP {
		return blacklist.AutoTracerPkg
	}
	return blacklist.LocalTracerPkg
}

// Hint says what a module needs for zero-code mode.
const Hint = "zero-code mode needs " + self.Module + " in the program's module graph: run \"go get -tool " + self.Module + "/cmd/matrixexec\""

// autoExports builds the tracer package (cfg.TracerPkg) and its dependencies with the
// parent build's flags and returns "import path → export file" for each.
func autoExports(cfg *Config, goTool, pgo string) (map[string]string, error) {
	args := []string{"list", "-deps", "-export", "-f", exportsFormat}
	module := Module()
	var env []string
	if module == "" {
		args = append(args, gocmd.BuildFlags()...)
	} else {
		args = append(args, slices.DeleteFunc(gocmd.BuildFlags(), isModuleFlag)...)
		// The same map and blacklist as the parent build, not the
		// defaults under the other module's root: the packages the
		// program shares with the tracer are then the same archives.
		env = append(env, "MATRIX_MAP="+cfg.MapPath)
		if cfg.Blacklist != "" {
			env = append(env, "MATRIX_BLACKLIST="+cfg.Blacklist)
		}
	}
	if pgo != "" {
		args = append(args, pgo)
	}
	pkg := cfg.TracerPkg()
	args = append(args, pkg)
	var key *statcache.Key
	if cfg.ConfigHash != nil && !slices.ContainsFunc(args, isOverlayFlag) {
		// (An overlay's files can change without the overlay; such
		// builds list the tracer every time.)
		if h, err := cfg.ConfigHash(); err == nil {
			key = graphKey(statcache.NewKey("zerocode-exports"), goTool).String(h)
			for _, a := range args {
				key.String(a)
				if _, v, ok := strings.Cut(a, "="); ok && filepath.IsAbs(v) {
					key.File(v) // -pgo=FILE
				}
			}
			for _, e := range env {
				key.String(e)
			}
			if exports := cachedExports(key, pkg); exports != nil {
				cfg.Log.Debug("zero-code tracer's export files from the cache", "deps", len(exports))
				return exports, nil
			}
		}
	}
	cmd := nestedGo(goTool, args, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cfg.Log.Debug("building the zero-code tracer", "args", args, "module", module)
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if module != "" {
			return nil, fmt.Errorf("zero-code mode: building %s in %s (%s): %w\n%s", pkg, module, EnvModule, err, msg)
		}
		if strings.Contains(msg, "no required module provides") || strings.Contains(msg, "cannot find module providing") ||
			strings.Contains(msg, "is replaced but not required") || strings.Contains(msg, "is not in std") ||
			strings.Contains(msg, "not in GOROOT") || strings.Contains(msg, "go.mod file not found") {
			return nil, errNoModule
		}
		if pkgPath := missingSumPackage(msg); pkgPath != "" {
			return nil, &MissingSumError{Package: pkgPath, Module: moduleOf(goTool, pkgPath), Tracer: pkg}
		}
		return nil, fmt.Errorf("zero-code mode: building %s: %w\n%s", pkg, err, msg)
	}
	exports := map[string]string{}
	var mutable []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		line, dir, hasDir := strings.Cut(sc.Text(), "\t")
		if path, file, ok := strings.Cut(line, "="); ok {
			exports[path] = file
			if hasDir {
				mutable = append(mutable, dir)
			}
		}
	}
	if exports[pkg] == "" {
		return nil, fmt.Errorf("zero-code mode: go list gave no export data for %s", pkg)
	}
	if key != nil {
		storeExports(key, exports, mutable)
	}
	return exports, nil
}

// isOverlayFlag reports whether a build flag is -overlay.
func isOverlayFlag(f string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
	return name == "overlay"
}

// exportsFormat is the go list template of autoExports: "path=export" for
// each package with export data, followed by a tab and the package's
// directory when its sources can change without a change to the files
// that declare the modules (the main module's packages, those of a module
// replaced by a directory, vendored ones): not the standard library's,
// and not those of a module in the module cache, which never change.
const exportsFormat = `{{if .Export}}{{.ImportPath}}={{.Export}}{{if not .Standard}}{{if not .Module}}{{"\t"}}{{.Dir}}` +
	`{{else if or .Module.Main (not .Module.Dir) (and .Module.Replace (not .Module.Replace.Version))}}{{"\t"}}{{.Dir}}{{end}}{{end}}{{end}}`

// graphKey adds to k what resolving packages in the build's module graph
// depends on besides their sources: the go command, the directory and
// environment the nested go command runs with, the parent build's flags,
// and the files that declare the modules and their sums (go.mod, go.sum,
// go.work, go.work.sum, vendor/modules.txt, the go command's environment
// file), each by path, size and modification time.
func graphKey(k *statcache.Key, goTool string) *statcache.Key {
	k.File(goTool)
	wd, _ := os.Getwd()
	k.String(wd)
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		// Which package cmd/go runs the tool for, and where matrixexec
		// logs, change nothing that is resolved; nor do the shell's own
		// variables, which change with every cd in the user's shell
		// (PWD, OLDPWD) or every nested shell (SHLVL, _): the directory
		// itself is part of the key.
		name, _, _ := strings.Cut(e, "=")
		switch name {
		case "TOOLEXEC_IMPORTPATH", "MATRIX_LOG", "PWD", "OLDPWD", "SHLVL", "_":
			return true
		}
		return false
	})
	slices.Sort(env)
	for _, e := range env {
		k.String(e)
	}
	for _, f := range gocmd.BuildFlags() {
		k.String("flag " + f)
		if _, v, ok := strings.Cut(f, "="); ok && filepath.IsAbs(v) {
			k.File(v) // -pgo=FILE, -modfile=FILE, …
		}
	}
	files := moduleFiles(os.Getenv, gocmd.BuildFlags)
	if dir := Module(); dir != "" {
		files = append(files, filepath.Join(dir, "go.mod"))
	}
	for _, f := range files {
		k.File(f)
		k.File(strings.TrimSuffix(f, filepath.Ext(f)) + ".sum")
		k.File(filepath.Join(filepath.Dir(f), "go.work.sum"))
		k.File(filepath.Join(filepath.Dir(f), "vendor", "modules.txt"))
	}
	if env := os.Getenv("GOENV"); env != "" {
		k.File(env)
	} else if dir, err := os.UserConfigDir(); err == nil {
		k.File(filepath.Join(dir, "go", "env"))
	}
	return k
}

// cachedExports returns the export files of pkg and its dependencies kept
// under key by storeExports, nil if there are none or they no longer hold:
// a directory of sources that can change has changed, or an export file is
// gone (the build cache was trimmed).
func cachedExports(key *statcache.Key, pkg string) map[string]string {
	_, data := statcache.Lookup(key)
	if data == nil {
		return nil
	}
	exports := map[string]string{}
	var dirs []string
	stamp := ""
	for _, line := range strings.Split(string(data), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "stamp":
			stamp = rest
		case "dir":
			dirs = append(dirs, rest)
		case "pkg":
			if path, file, ok := strings.Cut(rest, "="); ok {
				exports[path] = file
			}
		}
	}
	if stamp == "" || stamp != dirsStamp(dirs) || exports[pkg] == "" || !recordFilesExist(linkRecord(exports)) {
		return nil
	}
	return exports
}

// storeExports keeps exports under key, with the directories of sources
// that can change (see exportsFormat) and their stamp.
func storeExports(key *statcache.Key, exports map[string]string, dirs []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "stamp %s\n", dirsStamp(dirs))
	for _, d := range dirs {
		fmt.Fprintf(&b, "dir %s\n", d)
	}
	for _, path := range slices.Sorted(maps.Keys(exports)) {
		fmt.Fprintf(&b, "pkg %s=%s\n", path, exports[path])
	}
	statcache.Write(key.Path(), []byte(b.String()))
}

// dirsStamp returns the stamp of the files in dirs: their paths, sizes
// and modification times.
func dirsStamp(dirs []string) string {
	k := statcache.NewKey("dirs")
	for _, d := range dirs {
		k.Dir(d)
	}
	return k.Sum()
}

var errNoModule = errors.New(Hint)

// MissingSumError is the error of a build whose module has the tracer in
// its graph but not the go.sum entries of a module the tracer needs (the
// OTLP sink's protobuf encoder, in a module that pinned only matrixexec).
// It fails the build in every mode: a build that went on without the
// tracer would be kept in the build cache, and the next build, after the
// entries are added, would reuse it.
type MissingSumError struct {
	Package string // the package whose module has no go.sum entry
	Module  string // its module, "" if it could not be told
	Tracer  string // the tracer package zero-code mode builds
}

func (e *MissingSumError) Error() string {
	fix := "add the go.sum entries of the module that provides it (go mod download MODULE)"
	if e.Module != "" {
		fix = "run \"go mod download " + e.Module + "\" in the module, and build again"
	}
	return "zero-code mode: the tracer (" + e.Tracer + ") needs " + e.Package + ", and the module's go.sum has no entry for its module: " + fix
}

// missingSumPackage returns the package a go command's message says has no
// go.sum entry for its module, or "".
func missingSumPackage(msg string) string {
	const prefix = "missing go.sum entry for module providing package "
	_, rest, ok := strings.Cut(msg, prefix)
	if !ok {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ";")
}

// moduleOf returns the module of the build's graph that provides package
// path (the longest module path that is a prefix of it), or "". Listing the
// graph needs only the modules' go.mod entries in go.sum.
func moduleOf(goTool, path string) string {
	out, err := nestedGo(goTool, []string{"list", "-m", "-f", "{{.Path}}", "all"}).Output()
	if err != nil {
		return ""
	}
	best := ""
	for _, m := range strings.Fields(string(out)) {
		if (path == m || strings.HasPrefix(path, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// MentionsSelf is a cheap first test of the module graph: the files that
// declare the build's modules (see moduleFiles) name this module, or
// MATRIX_ZEROCODE_MODULE names a module to resolve the tracer in.
func MentionsSelf() bool { return mentionsSelf(os.Getenv, gocmd.BuildFlags) }

func mentionsSelf(getenv func(string) string, buildFlags func() []string) bool {
	if getenv(EnvModule) != "" {
		return true
	}
	for _, f := range moduleFiles(getenv, buildFlags) {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(self.Module)) {
			return true
		}
	}
	return false
}

// moduleFiles returns the files the go command reads the build's modules
// from, as it finds them: the workspace file (GOWORK's, or a go.work from
// the current directory up unless GOWORK=off) and the go.mod of every module
// it uses; otherwise the main module's go.mod, or the file a -modfile flag
// names instead (in GOFLAGS, or on the go command's line: buildFlags, as
// gocmd.BuildFlags sees it).
func moduleFiles(getenv func(string) string, buildFlags func() []string) []string {
	root := gocmd.ModuleRoot(getenv) // GOWORK's directory, if it names a file
	work := ""
	if w := getenv("GOWORK"); w != "off" {
		if w != "" && filepath.IsAbs(w) {
			work = w
		} else if exists(filepath.Join(root, "go.work")) {
			work = filepath.Join(root, "go.work")
		}
	}
	if work != "" {
		data, err := os.ReadFile(work)
		if err != nil {
			return nil
		}
		files := []string{work}
		block := false
		for _, line := range strings.Split(string(data), "\n") {
			line, _, _ = strings.Cut(line, "//")
			f := strings.Fields(line)
			switch {
			case len(f) == 0:
			case block && f[0] == ")":
				block = false
			case block:
				files = append(files, filepath.Join(filepath.Dir(work), strings.Trim(f[0], `"`), "go.mod"))
			case f[0] == "use" && len(f) == 2 && f[1] == "(":
				block = true
			case f[0] == "use" && len(f) == 2:
				files = append(files, filepath.Join(filepath.Dir(work), strings.Trim(f[1], `"`), "go.mod"))
			}
		}
		return files
	}
	modfile := filepath.Join(root, "go.mod")
	// The command line's flags override GOFLAGS'.
	for _, f := range append(strings.Fields(getenv("GOFLAGS")), buildFlags()...) {
		if v, ok := strings.CutPrefix(strings.TrimLeft(f, "-"), "modfile="); ok && v != "" {
			if !filepath.IsAbs(v) {
				if wd, err := os.Getwd(); err == nil {
					v = filepath.Join(wd, v)
				}
			}
			modfile = v
		}
	}
	return []string{modfile}
}

// nestedPGO returns the -pgo flag the nested build needs so that the
// packages it shares with the program are compiled with the program's
// profile, and so are the same archives. The compile's own -pgoprofile
// cannot serve: it is the go command's preprocessed copy, and a profile
// given in that form gives other archives. When the go command was given
// -pgo=FILE (on its command line or in GOFLAGS), the nested build has it
// already. Otherwise the profile is -pgo=auto's (the default): default.pgo
// in the main package's directory (mainDir).
func nestedPGO(c *toolcmd.Cmd, parent []string, mainDir func() (string, error)) (string, error) {
	if _, ok := c.Flag("pgoprofile"); !ok {
		return "", nil
	}
	for _, f := range append(slices.Clone(parent), strings.Fields(os.Getenv("GOFLAGS"))...) {
		if v, ok := strings.CutPrefix(strings.TrimLeft(f, "-"), "pgo="); ok && v != "auto" && v != "off" {
			return "", nil
		}
	}
	dir, err := mainDir()
	if err != nil {
		return "", fmt.Errorf("zero-code mode: the build has a PGO profile, and the main package's directory is unknown: %w", err)
	}
	profile := filepath.Join(dir, "default.pgo")
	if !exists(profile) {
		return "", fmt.Errorf("zero-code mode: the build has a PGO profile, but the go command's -pgo flag cannot be read here and %s does not exist", profile)
	}
	return "-pgo=" + profile, nil
}

// mainPackageDir returns the directory of the main package a compile
// builds: that of its Go files, or for the main package go test generates
// (_testmain.go alone, in the build's temporary directory), the directory
// of the package under test, which the go command resolves.
func mainPackageDir(goTool string, files []string) (string, error) {
	for _, f := range files {
		if strings.HasSuffix(f, ".go") && filepath.Base(f) != "_testmain.go" {
			return filepath.Abs(filepath.Dir(f))
		}
	}
	tested, ok := strings.CutSuffix(os.Getenv("TOOLEXEC_IMPORTPATH"), ".test")
	if !ok {
		return "", fmt.Errorf("no Go file names it, and TOOLEXEC_IMPORTPATH (%q) is not a test's", os.Getenv("TOOLEXEC_IMPORTPATH"))
	}
	args := append([]string{"list"}, slices.DeleteFunc(gocmd.BuildFlags(), func(f string) bool { return strings.HasPrefix(f, "-pgo=") })...)
	cmd := exec.Command(goTool, append(args, "-f", "{{.Dir}}", tested)...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", tested, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// variantConflict says what it means that the main package of importPath
// imports pkg with another archive than the tracer was built against
// (sharedVariant): nothing in a test binary of one of the tracer's own
// dependencies, which links that package's test variant; otherwise an
// error, since the two builds of pkg then came from different sources
// (changed while the build ran).
func variantConflict(pkg, importPath string) error {
	if strings.HasSuffix(importPath, ".test") {
		return nil
	}
	return fmt.Errorf("zero-code mode: the tracer was compiled against another build of %s than the one %s imports (did its sources change while the build ran? build again)", pkg, importPath)
}

// sharedVariant returns a package the main package imports directly with
// another archive than the tracer was built against, or "".
func sharedVariant(cfg *importcfg.Config, exports map[string]string) string {
	if ip := os.Getenv("TOOLEXEC_IMPORTPATH"); strings.HasSuffix(ip, ".test") {
		if _, ok := exports[strings.TrimSuffix(ip, ".test")]; ok {
			return strings.TrimSuffix(ip, ".test")
		}
	}
	for _, path := range cfg.Files() {
		file, _ := cfg.File(path)
		first, _, _ := strings.Cut(path, "/")
		if want, ok := exports[path]; ok && want != file && strings.Contains(first, ".") && !sameContent(want, file) {
			return path
		}
	}
	return ""
}

func sameContent(a, b string) bool {
	ha, err1 := fileHash(a)
	hb, err2 := fileHash(b)
	return err1 == nil && err2 == nil && ha == hb
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// linkMember is the archive member, added to a zero-code main package's
// archive after its compile, that lists the export files of the tracer's
// packages ("packagefile path=file" lines) for its link. The record
// travels with the archive through the build cache, so a link of a cached
// compile finds it, and no directory shared with other users or builds is
// trusted. The linker skips members with short names that are neither
// ".o" nor ".syso" files, as it does for other build tools' members.
const linkMember = "matrix.deps"

// addLinkRecord appends the link record of exports to archive.
func addLinkRecord(archive string, exports map[string]string) error {
	if err := appendArMember(archive, linkMember, linkRecord(exports).Render()); err != nil {
		return fmt.Errorf("zero-code mode: adding the link record to %s: %w", archive, err)
	}
	return nil
}

// linkRecord returns exports as an importcfg, its packages in order.
func linkRecord(exports map[string]string) *importcfg.Config {
	rec := importcfg.New()
	for _, path := range slices.Sorted(maps.Keys(exports)) {
		rec.SetFile(path, exports[path])
	}
	return rec
}

// readLinkRecord returns the link record of a main package's archive, nil
// if it has none (compiled without zero-code mode, or by an older
// matrixexec).
func readLinkRecord(archive string) (*importcfg.Config, error) {
	data, err := readArMember(archive, linkMember)
	if errors.Is(err, errNotArchive) || err == nil && data == nil {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("link: reading the link record: %w", err)
	}
	rec, err := importcfg.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("link: reading the link record of %s: %w", archive, err)
	}
	return rec, nil
}

// recordFilesExist reports whether every export file a link record names
// is still there (the build cache may have been trimmed since).
func recordFilesExist(rec *importcfg.Config) bool {
	for _, path := range rec.Files() {
		file, _ := rec.File(path)
		if _, err := os.Stat(file); err != nil {
			return false
		}
	}
	return true
}

// Inject prepares the compile of a main package for zero-code mode: it
// returns the extra source file and the importcfg to use instead, and a
// function to call after a successful compile. It returns nils when
// zero-code mode is off or unavailable.
func Inject(cfg *Config, c *toolcmd.Cmd, dir string) (extra, importcfg string, after func(out string) error, err error) {
	if cfg.Mode == Off {
		return "", "", nil, nil
	}
	if cfg.Mode == Auto && !MentionsSelf() {
		cfg.Log.Debug("zero-code mode unavailable: " + Hint)
		return "", "", nil, nil
	}
	goTool := gocmd.ToolGo(c.Tool)
	pgo, err := nestedPGO(c, gocmd.BuildFlags(), func() (string, error) { return mainPackageDir(goTool, c.Operands) })
	var exports map[string]string
	if err == nil {
		exports, err = autoExports(cfg, goTool, pgo)
	}
	var missing *MissingSumError
	if err != nil && cfg.Mode == Auto && !errors.As(err, &missing) {
		// Best effort: never fail a build that works without it, but
		// say so. The module asked for zero-code mode (it has this
		// module in its graph), and a program that silently records
		// nothing would be taken for one that has nothing to report.
		cfg.Log.Warn("zero-code mode unavailable", "error", err)
		fmt.Fprintf(os.Stderr, "matrixexec: zero-code mode unavailable, the program is built without the tracer (MATRIX_ZEROCODE=on makes this an error, off silences it): %v\n", err)
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, err
	}
	orig, err := c.Importcfg()
	if err != nil {
		return "", "", nil, fmt.Errorf("zero-code mode: %w", err)
	}
	if orig == nil {
		return "", "", nil, nil
	}
	if importsTracer(orig) {
		return "", "", nil, nil // the program starts the tracer itself
	}
	if conflict := sharedVariant(orig, exports); conflict != "" {
		err := variantConflict(conflict, os.Getenv("TOOLEXEC_IMPORTPATH"))
		if err == nil {
			cfg.Log.Debug("zero-code mode skipped: test variant of a tracer dependency", "pkg", conflict)
			return "", "", nil, nil
		}
		if cfg.Mode == On {
			return "", "", nil, err
		}
		cfg.Log.Warn("zero-code mode unavailable", "error", err)
		fmt.Fprintf(os.Stderr, "matrixexec: zero-code mode unavailable, the program is built without the tracer (MATRIX_ZEROCODE=on makes this an error, off silences it): %v\n", err)
		return "", "", nil, nil
	}
	cfgWith := orig.Clone()
	cfgWith.SetFile(cfg.TracerPkg(), exports[cfg.TracerPkg()])
	importcfg = filepath.Join(dir, "importcfg")
	if err := cfgWith.Write(importcfg); err != nil {
		return "", "", nil, fmt.Errorf("zero-code mode: %w", err)
	}
	extra = filepath.Join(dir, "zz_matrix_auto.go")
	src := inject.Header + "package main\n\nimport _ \"" + cfg.TracerPkg() + "\"\n"
	if err := os.WriteFile(extra, []byte(src), 0o600); err != nil {
		return "", "", nil, fmt.Errorf("zero-code mode: %w", err)
	}
	after = func(out string) error {
		return addLinkRecord(out, exports)
	}
	cfg.Log.Debug("zero-code tracer linked into main", "auto", exports[cfg.TracerPkg()], "deps", len(exports))
	return extra, importcfg, after, nil
}

// PrepareLink adds the packages of the zero-code tracer to c, the link of
// a main package that imports it: its importcfg is replaced by one written
// to dir. It leaves other links unchanged.
func PrepareLink(cfg *Config, c *toolcmd.Cmd, dir string) error {
	mainArchive := c.MainArchive()
	if !strings.HasSuffix(mainArchive, ".a") && !strings.HasSuffix(mainArchive, "-d") {
		return nil
	}
	have, err := c.Importcfg()
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if have == nil {
		return nil
	}
	if importsTracer(have) {
		return nil // the program imports it itself
	}
	extra, err := readLinkRecord(mainArchive)
	if err != nil {
		return err
	}
	if extra == nil || !recordFilesExist(extra) {
		archive, err := os.ReadFile(mainArchive)
		if err != nil {
			return fmt.Errorf("link: %w", err)
		}
		// (Either tracer package's path begins with AutoTracerPkg.)
		if !bytes.Contains(archive, []byte(blacklist.AutoTracerPkg)) {
			return nil
		}
		// No record (an archive from an older matrixexec), or the
		// files it names are gone (the cache was trimmed): list them
		// anew.
		exports, err := autoExports(cfg, gocmd.ToolGo(c.Tool), "")
		if err != nil {
			return err
		}
		extra = linkRecord(exports)
	}
	merged := have.Clone()
	for _, path := range extra.Files() {
		file, _ := extra.File(path)
		if prog, dup := have.File(path); dup {
			if err := checkSameBuild(path, prog, file); err != nil {
				return err
			}
			continue
		}
		merged.SetFile(path, file)
	}
	if err := c.SetImportcfg(merged, filepath.Join(dir, "importcfg.link")); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	return nil
}

// importsTracer reports whether an importcfg names one of the packages
// that start the tracer: the program imports it itself.
func importsTracer(cfg *importcfg.Config) bool {
	for _, pkg := range []string{blacklist.AutoTracerPkg, blacklist.LocalTracerPkg} {
		if _, ok := cfg.File(pkg); ok {
			return true
		}
	}
	return false
}

// checkSameBuild reports a package that the program links from another
// build (progFile) than the zero-code tracer was compiled against
// (tracerFile) when the tracer comes from MATRIX_ZEROCODE_MODULE: another
// version of one of its dependencies, which the linker would refuse with a
// fingerprint mismatch. In the program's own module graph the two are the
// same archives (or, for the test variant of a dependency, sharedVariant
// has already left the tracer out).
func checkSameBuild(path, progFile, tracerFile string) error {
	module := Module()
	if module == "" || progFile == tracerFile || !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") || sameContent(progFile, tracerFile) {
		return nil
	}
	return fmt.Errorf("zero-code mode: the program links another build of %s than the tracer from %s (%s) was compiled against, probably another version: add the tracer to the program's module instead (go get -tool %s/cmd/matrixexec)",
		path, module, EnvModule, self.Module)
}

// TracerSourceHash hashes the sources of the packages zero-code mode links
// (this module's beat, tracer and internal trees and its go.mod) as
// resolved in the build's module graph, or in MATRIX_ZEROCODE_MODULE's.
func TracerSourceHash(goTool string) (string, error) {
	m, err := selfModule(goTool)
	if err != nil {
		return "", err
	}
	return hashKept(m)
}

// hashKept returns hashTracerSources(m.dir), kept in the user cache
// directory.
func hashKept(m moduleDir) (string, error) {
	// cmd/go asks for the compiler's and the linker's tool ids on every
	// build: the hash is kept in the user cache directory. A module in the
	// module cache never changes (its directory is its version's), so its
	// directory is the key; sources that can change (the main module, a
	// replacement by a directory) are keyed by the path, size and
	// modification time of every file the hash covers and of their
	// directories, so that an unchanged tree is listed but not read.
	key := statcache.NewKey("zerocode-tracersrc").String(m.dir).File(filepath.Join(m.dir, "go.mod"))
	if !m.immutable {
		// The directory's modification time covers a file added,
		// removed or renamed.
		_ = walkTracerSources(m.dir, func(dir string, entries []fs.DirEntry) error {
			key.File(dir)
			for _, e := range entries {
				if e.Type().IsRegular() && isTracerSource(e.Name()) {
					key.File(filepath.Join(dir, e.Name()))
				}
			}
			return nil
		})
	}
	file, kept := statcache.Lookup(key)
	if len(kept) == 16 {
		return string(kept), nil
	}
	sum, err := hashTracerSources(m.dir)
	if err == nil {
		statcache.Write(file, []byte(sum))
	}
	return sum, err
}

// walkTracerSources calls visit for each directory under dir's tracer
// source roots (beat, tracer and internal) that may hold a package (not
// testdata, nor one the go command ignores: ".name", "_name"), with its
// entries, read once. The walk stops at visit's first error.
func walkTracerSources(dir string, visit func(dir string, entries []fs.DirEntry) error) error {
	var walk func(path string) error
	walk = func(path string) error {
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		if err := visit(path, entries); err != nil {
			return err
		}
		for _, e := range entries {
			if name := e.Name(); e.IsDir() && name != "testdata" && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") {
				if err := walk(filepath.Join(path, name)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// internal whole: the tracer links several of its packages (abi,
	// observe, sqlnorm, uuidv4), and hashing the others costs only their
	// few files.
	for _, root := range []string{"beat", "tracer", "internal"} {
		err := walk(filepath.Join(dir, root))
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // a version of the module without it
			return err
		}
	}
	return nil
}

// isTracerSource reports whether a file name is one hashTracerSources
// covers: Go files, not tests.
func isTracerSource(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
}

// hashTracerSources hashes the Go files (not tests) of the directories
// walkTracerSources visits in dir, with their paths and sizes, and dir's
// go.mod.
func hashTracerSources(dir string) (string, error) {
	h := sha256.New()
	err := walkTracerSources(dir, func(pkg string, entries []fs.DirEntry) error {
		for _, e := range entries {
			if !e.Type().IsRegular() || !isTracerSource(e.Name()) {
				continue
			}
			path := filepath.Join(pkg, e.Name())
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(strings.TrimPrefix(path, dir)), len(data))
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash %s sources: %w", self.Module, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// moduleDir is where the build's module graph resolves this module.
type moduleDir struct {
	dir string
	// immutable: dir is in the module cache (a version of the module, or
	// a replacement by a version), whose contents never change.
	immutable bool
}

// selfModuleFormat is the go list -m template selfModule reads: the
// module's directory, then "\tmodcache" when it is a module cache
// directory (neither the main module nor a replacement by a directory).
const selfModuleFormat = `{{.Dir}}{{if and (not .Main) (or (and .Replace .Replace.Version) (and (not .Replace) .Version))}}{{"\t"}}modcache{{end}}`

// selfModule returns the directory of this module as the build's module
// graph (or MATRIX_ZEROCODE_MODULE's) resolves it. cmd/go asks for the
// compiler's and the linker's tool ids on every build, and each answer
// needs it: it is kept in the user cache directory under graphKey, so that
// the go command is run only when what decides the answer changes.
func selfModule(goTool string) (moduleDir, error) {
	file, b := statcache.Lookup(graphKey(statcache.NewKey("zerocode-moddir"), goTool))
	if m := parseSelfModule(string(b)); m.dir != "" && exists(filepath.Join(m.dir, "go.mod")) {
		return m, nil
	}
	cmd := nestedGo(goTool, []string{"list", "-m", "-f", selfModuleFormat, self.Module})
	out, err := cmd.Output()
	if err != nil {
		return moduleDir{}, fmt.Errorf("locate %s: %w", self.Module, err)
	}
	line := strings.TrimSpace(string(out))
	m := parseSelfModule(line)
	if m.dir != "" {
		statcache.Write(file, []byte(line))
	}
	return m, nil
}

// parseSelfModule parses a line of selfModuleFormat. A module cache
// directory is named for its version (path@version): one that is not is
// taken as sources that can change.
func parseSelfModule(line string) moduleDir {
	dir, tag, _ := strings.Cut(line, "\t")
	return moduleDir{dir: dir, immutable: tag == "modcache" && strings.Contains(filepath.Base(dir), "@")}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
