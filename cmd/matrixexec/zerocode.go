package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/blacklist"
)

// Zero-code mode links the tracer into programs that never import it: the
// main package of every instrumented program gets a blank import of
// autoPkg, which starts the trace plugin when MATRIX_REPORT is set.
//
// The package is built by a nested "go list -export" in the directory the
// build runs in, with the parent build's flags, so it is resolved in the
// user's own module graph: "go get -tool <module>/cmd/matrixexec" puts this
// module in go.mod and pins the runtime's version. Packages the program
// already has are shared (same flags, same cache entries); the others are
// added to the link.
const autoPkg = blacklist.SelfModule + "/tracer/auto"

// envZeroCodeModule is MATRIX_ZEROCODE_MODULE: the absolute path of a
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
// dependencies (zerolog, uuid, x/sys, go-isatty, go-colorable) come from
// that module's graph: a program that links another build of one of them
// fails to link, with a message naming the package.
//
// It is read from the environment only: the tool id (-V=full), computed
// before any flag reaches the compile, has to include the tracer it names.
const envZeroCodeModule = "MATRIX_ZEROCODE_MODULE"

// zeroCodeModule returns MATRIX_ZEROCODE_MODULE (checked by parseConfig).
func zeroCodeModule() string { return os.Getenv(envZeroCodeModule) }

// checkZeroCodeModule validates a MATRIX_ZEROCODE_MODULE value.
func checkZeroCodeModule(dir string) error {
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("bad zero-code module %q (%s): want an absolute path", dir, envZeroCodeModule)
	}
	if !exists(filepath.Join(dir, "go.mod")) {
		return fmt.Errorf("bad zero-code module %q (%s): no go.mod there", dir, envZeroCodeModule)
	}
	return nil
}

// nestedGo returns the go command that zero-code mode runs to resolve the
// tracer: in the build's directory, or in MATRIX_ZEROCODE_MODULE's module
// without the program's module flags. env is added to the environment.
func nestedGo(goTool string, args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(goTool, args...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if dir := zeroCodeModule(); dir != "" {
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

// zeroCodeMode values (-zerocode, MATRIX_ZEROCODE).
const (
	zeroAuto = "auto" // link the tracer when the module graph has it
	zeroOn   = "on"   // link it or fail the build saying what to run
	zeroOff  = "off"
)

const zeroCodeHint = "zero-code mode needs " + blacklist.SelfModule + " in the program's module graph: run \"go get -tool " + blacklist.SelfModule + "/cmd/matrixexec\""

// autoExports builds autoPkg and its dependencies with the parent build's
// flags and returns "import path → export file" for each.
func autoExports(cfg *config, goTool, pgo string) (map[string]string, error) {
	args := []string{"list", "-deps", "-export", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}"}
	module := zeroCodeModule()
	var env []string
	if module == "" {
		args = append(args, parentBuildFlags()...)
	} else {
		args = append(args, slices.DeleteFunc(parentBuildFlags(), isModuleFlag)...)
		// The same map and blacklist as the parent build, not the
		// defaults under the other module's root: the packages the
		// program shares with the tracer are then the same archives.
		env = append(env, "MATRIX_MAP="+cfg.mapPath)
		if cfg.blacklistSet || exists(cfg.blacklistPath) {
			env = append(env, "MATRIX_BLACKLIST="+cfg.blacklistPath)
		}
	}
	if pgo != "" {
		args = append(args, pgo)
	}
	args = append(args, autoPkg)
	cmd := nestedGo(goTool, args, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cfg.log.Debug().Strs("args", args).Str("module", module).Msg("building the zero-code tracer")
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if module != "" {
			return nil, fmt.Errorf("zero-code mode: building %s in %s (%s): %w\n%s", autoPkg, module, envZeroCodeModule, err, msg)
		}
		if strings.Contains(msg, "no required module provides") || strings.Contains(msg, "cannot find module providing") ||
			strings.Contains(msg, "is replaced but not required") || strings.Contains(msg, "is not in std") ||
			strings.Contains(msg, "not in GOROOT") || strings.Contains(msg, "go.mod file not found") {
			return nil, errNoModule
		}
		return nil, fmt.Errorf("zero-code mode: building %s: %w\n%s", autoPkg, err, msg)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "="); ok {
			exports[path] = file
		}
	}
	if exports[autoPkg] == "" {
		return nil, fmt.Errorf("zero-code mode: go list gave no export data for %s", autoPkg)
	}
	return exports, nil
}

var errNoModule = errors.New(zeroCodeHint)

// mentionsSelf is a cheap first test of the module graph: the go.mod (or
// go.work and its modules' go.mod files) of the build names this module,
// or MATRIX_ZEROCODE_MODULE names a module to resolve the tracer in.
func mentionsSelf() bool {
	if zeroCodeModule() != "" {
		return true
	}
	root := moduleRoot(os.Getenv)
	var files []string
	if work, err := os.ReadFile(filepath.Join(root, "go.work")); err == nil {
		files = append(files, filepath.Join(root, "go.work"))
		for _, line := range strings.Split(string(work), "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "use"))
			if len(f) == 1 && f[0] != "(" && f[0] != ")" {
				files = append(files, filepath.Join(root, f[0], "go.mod"))
			}
		}
	} else {
		files = append(files, filepath.Join(root, "go.mod"))
	}
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(blacklist.SelfModule)) {
			return true
		}
	}
	return false
}

// goToolFor returns the go command of the toolchain that owns a tool path
// ($GOROOT/pkg/tool/$GOOS_$GOARCH/compile).
func goToolFor(tool string) string {
	goroot := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(tool))))
	exe := "go"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	return filepath.Join(goroot, "bin", exe)
}

// buildFlagArity lists the go command's flags that change how packages are
// compiled, and whether they take a value. The nested build mirrors them so
// that the packages it shares with the parent build are the same archives.
var buildFlagArity = map[string]bool{
	"race": false, "msan": false, "asan": false, "trimpath": false, "linkshared": false, "cover": false,
	"covermode": true, "coverpkg": true, "tags": true, "gcflags": true, "asmflags": true,
	"buildmode": true, "pgo": true, "mod": true, "modfile": true, "overlay": true,
	"toolexec": true, "installsuffix": true, "compiler": true, "gccgoflags": true,
}

// otherValueFlags are the flags of go build, run and test, other than the
// build flags above, that take a value as the next argument.
var otherValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "pkgdir": true, "ldflags": true, "exec": true,
	"run": true, "skip": true, "bench": true, "benchtime": true, "count": true, "cpu": true,
	"parallel": true, "timeout": true, "shuffle": true, "fuzz": true, "fuzztime": true,
	"fuzzminimizetime": true, "list": true, "vet": true, "outputdir": true,
	"coverprofile": true, "cpuprofile": true, "memprofile": true, "memprofilerate": true,
	"blockprofile": true, "blockprofilerate": true, "mutexprofile": true,
	"mutexprofilefraction": true, "trace": true,
}

// parentBuildFlags returns the build flags of the go command that runs us,
// as far as the OS lets us see them (see goCommandOf). GOFLAGS and the
// GOOS/GOARCH/CGO environment reach the nested build by inheritance.
func parentBuildFlags() []string { return filterBuildFlags(goCommandLine(), goCommandDir()) }

// pathFlags are the build flags whose value is a file, relative to the go
// command's directory.
var pathFlags = map[string]bool{"pgo": true, "modfile": true, "overlay": true}

// filterBuildFlags returns the build flags of a go command line as
// "-name" or "-name=value". Relative file values are made absolute against
// dir, the go command's directory, when it is known, so that they name the
// same files wherever the nested build runs.
func filterBuildFlags(args []string, dir string) []string {
	if len(args) < 2 {
		return nil
	}
	var out []string
	// go test takes flags after its packages, up to -args; the other
	// commands stop at the first package or file, and what follows (go
	// run's program arguments) is not theirs.
	flagsAfterPackages := args[1] == "test"
	for i := 2; i < len(args); i++ { // args[0] = go, args[1] = build/test/run/...
		a := args[i]
		if a == "--" || a == "-args" || a == "--args" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			if flagsAfterPackages {
				continue
			}
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := buildFlagArity[name]
		if !known {
			if otherValueFlags[name] && !hasValue {
				i++ // its value is not a package
			}
			continue
		}
		switch {
		case takesValue && !hasValue && i+1 < len(args):
			i++
			value, hasValue = args[i], true
		case !takesValue:
			out = append(out, a)
			continue
		}
		if name == "pgo" && value == "auto" {
			// auto resolves against the main package, which the nested
			// build does not have: the compile flags carry the profile.
			continue
		}
		if pathFlags[name] && dir != "" && value != "" && !filepath.IsAbs(value) && !(name == "pgo" && value == "off") {
			value = filepath.Join(dir, value)
		}
		if hasValue {
			out = append(out, "-"+name+"="+value)
		}
	}
	return out
}

// nestedPGO returns the -pgo flag the nested build needs so that the
// packages it shares with the program are compiled with the program's
// profile, and so are the same archives. The compile's own -pgoprofile
// cannot serve: it is the go command's preprocessed copy, and a profile
// given in that form gives other archives. When the go command was given
// -pgo=FILE (on its command line or in GOFLAGS), the nested build has it
// already. Otherwise the profile is -pgo=auto's (the default): default.pgo
// in the main package's directory (mainDir).
func nestedPGO(compileFlags, parent []string, mainDir func() (string, error)) (string, error) {
	if _, ok := flagValue(compileFlags, "pgoprofile"); !ok {
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
	args := append([]string{"list"}, slices.DeleteFunc(parentBuildFlags(), func(f string) bool { return strings.HasPrefix(f, "-pgo=") })...)
	cmd := exec.Command(goTool, append(args, "-f", "{{.Dir}}", tested)...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", tested, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// A process is what goCommandOf needs to know of a process.
type process struct {
	ppid int      // its parent
	exe  string   // its program file, "" if unknown
	args []string // its command line
	cwd  string   // its working directory, "" if unknown
}

// goCommands are the go commands that build packages and so may run a
// -toolexec tool.
var goCommands = map[string]bool{"build": true, "install": true, "run": true, "test": true, "vet": true, "list": true, "get": true}

// goCommandOf returns the go command that runs this tool: the nearest
// ancestor process, from pid up, whose program is named go and whose first
// argument is a go command that builds. A wrapper in between (a -toolexec
// of "strace matrixexec", say) is passed over. It returns the zero process
// where the command line cannot be read (read reads Linux's /proc;
// elsewhere there is none), or when no ancestor is the go command.
func goCommandOf(read func(pid int) (process, error), pid int) process {
	for range 16 {
		if pid <= 1 {
			return process{}
		}
		p, err := read(pid)
		if err != nil {
			return process{}
		}
		name := p.exe
		if name == "" && len(p.args) > 0 {
			name = p.args[0]
		}
		if name = filepath.Base(name); (name == "go" || name == "go.exe") && len(p.args) > 1 && goCommands[p.args[1]] {
			return p
		}
		pid = p.ppid
	}
	return process{}
}

// readProcess reads a process's parent, program and command line from
// /proc.
func readProcess(pid int) (process, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	cmdline, err := os.ReadFile(dir + "/cmdline")
	if err != nil {
		return process{}, err
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return process{}, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return process{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return process{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return process{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	exe, _ := os.Readlink(dir + "/exe") // only for our own user's processes
	cwd, _ := os.Readlink(dir + "/cwd")
	return process{ppid: ppid, exe: exe, cwd: cwd, args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}, nil
}

// sharedVariant returns a package the main package imports directly with
// another archive than the tracer was built against, or "".
func sharedVariant(importcfg []byte, exports map[string]string) string {
	if ip := os.Getenv("TOOLEXEC_IMPORTPATH"); strings.HasSuffix(ip, ".test") {
		if _, ok := exports[strings.TrimSuffix(ip, ".test")]; ok {
			return strings.TrimSuffix(ip, ".test")
		}
	}
	for _, line := range strings.Split(string(importcfg), "\n") {
		rest, ok := strings.CutPrefix(line, "packagefile ")
		if !ok {
			continue
		}
		path, file, _ := strings.Cut(rest, "=")
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
	if err := appendArMember(archive, linkMember, linkRecord(exports)); err != nil {
		return fmt.Errorf("zero-code mode: adding the link record to %s: %w", archive, err)
	}
	return nil
}

// linkRecord renders exports as importcfg lines.
func linkRecord(exports map[string]string) []byte {
	var b bytes.Buffer
	for path, file := range exports {
		fmt.Fprintf(&b, "packagefile %s=%s\n", path, file)
	}
	return b.Bytes()
}

// readLinkRecord returns the link record of a main package's archive, nil
// if it has none (compiled without zero-code mode, or by an older
// matrixexec).
func readLinkRecord(archive string) ([]byte, error) {
	rec, err := readArMember(archive, linkMember)
	if errors.Is(err, errNotArchive) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("link: reading the link record: %w", err)
	}
	return rec, nil
}

// recordFilesExist reports whether every export file a link record names
// is still there (the build cache may have been trimmed since).
func recordFilesExist(rec []byte) bool {
	for _, line := range strings.Split(string(rec), "\n") {
		if _, file, ok := strings.Cut(strings.TrimPrefix(line, "packagefile "), "="); ok {
			if _, err := os.Stat(file); err != nil {
				return false
			}
		}
	}
	return true
}

// injectAuto prepares the compile of a main package for zero-code mode: it
// returns the extra source file and the importcfg to use instead, and a
// function to call after a successful compile. It returns nils when zero-
// code mode is off or unavailable.
func injectAuto(cfg *config, tool string, flags, files []string, dir string) (extra, importcfg string, after func(out string) error, err error) {
	if cfg.zeroCode == zeroOff {
		return "", "", nil, nil
	}
	if cfg.zeroCode == zeroAuto && !mentionsSelf() {
		cfg.log.Debug().Msg("zero-code mode unavailable: " + zeroCodeHint)
		return "", "", nil, nil
	}
	goTool := goToolFor(tool)
	pgo, err := nestedPGO(flags, parentBuildFlags(), func() (string, error) { return mainPackageDir(goTool, files) })
	var exports map[string]string
	if err == nil {
		exports, err = autoExports(cfg, goTool, pgo)
	}
	if err != nil && cfg.zeroCode == zeroAuto {
		// Best effort: never fail a build that works without it, but
		// say so. The module asked for zero-code mode (it has this
		// module in its graph), and a program that silently records
		// nothing would be taken for one that has nothing to report.
		cfg.log.Warn().Err(err).Msg("zero-code mode unavailable")
		fmt.Fprintf(os.Stderr, "matrixexec: zero-code mode unavailable, the program is built without the tracer (MATRIX_ZEROCODE=on makes this an error, off silences it): %v\n", err)
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, err
	}
	orig, ok := flagValue(flags, "importcfg")
	if !ok {
		return "", "", nil, nil
	}
	data, err := os.ReadFile(orig)
	if err != nil {
		return "", "", nil, fmt.Errorf("zero-code mode: %w", err)
	}
	if conflict := sharedVariant(data, exports); conflict != "" {
		// A test binary of one of the tracer's own dependencies links
		// that package's test variant, which the tracer was not compiled
		// against.
		cfg.log.Debug().Str("pkg", conflict).Msg("zero-code mode skipped: test variant of a tracer dependency")
		return "", "", nil, nil
	}
	data = fmt.Appendf(bytes.Clone(data), "\npackagefile %s=%s\n", autoPkg, exports[autoPkg])
	importcfg = filepath.Join(dir, "importcfg")
	if err := os.WriteFile(importcfg, data, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("zero-code mode: %w", err)
	}
	extra = filepath.Join(dir, "zz_matrix_auto.go")
	src := "// Code generated by matrixexec. DO NOT EDIT.\n\npackage main\n\nimport _ \"" + autoPkg + "\"\n"
	if err := os.WriteFile(extra, []byte(src), 0o600); err != nil {
		return "", "", nil, fmt.Errorf("zero-code mode: %w", err)
	}
	after = func(out string) error {
		return addLinkRecord(out, exports)
	}
	cfg.log.Debug().Str("auto", exports[autoPkg]).Int("deps", len(exports)).Msg("zero-code tracer linked into main")
	return extra, importcfg, after, nil
}

// link adds the packages of the zero-code tracer to the link of a main
// package that imports it, then runs the linker.
func link(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parseLink(args)
	if err != nil {
		return err
	}
	importcfg, ok := c.flag("importcfg")
	mainArchive := c.mainArchive()
	if !ok || !strings.HasSuffix(mainArchive, ".a") && !strings.HasSuffix(mainArchive, "-d") {
		return runTool(c.args(), stdin, stdout, stderr)
	}
	data, err := os.ReadFile(importcfg)
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	if bytes.Contains(data, []byte("packagefile "+autoPkg+"=")) {
		return runTool(c.args(), stdin, stdout, stderr) // the program imports it itself
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
		if !bytes.Contains(archive, []byte(autoPkg)) {
			return runTool(c.args(), stdin, stdout, stderr)
		}
		// No record (an archive from an older matrixexec), or the
		// files it names are gone (the cache was trimmed): list them
		// anew.
		exports, err := autoExports(cfg, goToolFor(c.tool), "")
		if err != nil {
			return err
		}
		extra = linkRecord(exports)
	}
	have := map[string]string{} // import path → archive
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "packagefile "); ok {
			path, file, _ := strings.Cut(rest, "=")
			have[path] = file
		}
	}
	var b bytes.Buffer
	b.Write(data)
	b.WriteByte('\n')
	for _, line := range strings.Split(string(extra), "\n") {
		path, file, ok := strings.Cut(strings.TrimPrefix(line, "packagefile "), "=")
		if !ok {
			continue
		}
		if prog, dup := have[path]; dup {
			if err := checkSameBuild(path, prog, file); err != nil {
				return err
			}
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	tmp, err := os.MkdirTemp("", "matrixexec-link-")
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	defer os.RemoveAll(tmp)
	newCfg := filepath.Join(tmp, "importcfg.link")
	if err := os.WriteFile(newCfg, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("link: %w", err)
	}
	c.set("importcfg", newCfg)
	args, err = toolArgs(c.args(), tmp)
	if err != nil {
		return err
	}
	return runTool(args, stdin, stdout, stderr)
}

// checkSameBuild reports a package that the program links from another
// build (progFile) than the zero-code tracer was compiled against
// (tracerFile) when the tracer comes from MATRIX_ZEROCODE_MODULE: another
// version of one of its dependencies, which the linker would refuse with a
// fingerprint mismatch. In the program's own module graph the two are the
// same archives (or, for the test variant of a dependency, sharedVariant
// has already left the tracer out).
func checkSameBuild(path, progFile, tracerFile string) error {
	module := zeroCodeModule()
	if module == "" || progFile == tracerFile || !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") || sameContent(progFile, tracerFile) {
		return nil
	}
	return fmt.Errorf("zero-code mode: the program links another build of %s than the tracer from %s (%s) was compiled against, probably another version: add the tracer to the program's module instead (go get -tool %s/cmd/matrixexec)",
		path, module, envZeroCodeModule, blacklist.SelfModule)
}

// tracerSourceHash hashes the sources of the packages zero-code mode links
// (this module's beat and tracer trees and its go.mod) as resolved in the
// build's module graph, or in MATRIX_ZEROCODE_MODULE's.
func tracerSourceHash(goTool string) (string, error) {
	cmd := nestedGo(goTool, []string{"list", "-m", "-f", "{{.Dir}}", blacklist.SelfModule})
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate %s: %w", blacklist.SelfModule, err)
	}
	dir := strings.TrimSpace(string(out))
	h := sha256.New()
	for _, sub := range []string{"beat", "tracer"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(strings.TrimPrefix(path, dir)), len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("hash %s sources: %w", blacklist.SelfModule, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
