package main

import (
	"bytes"
	"fmt"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/pgohot"
	"github.com/matrixgo/matrix/rewrite"
)

// beatPkg is the recorder's public package. Under matrixexec its plain
// (no-op) binding to the runtime is swapped for the linked one.
const (
	beatPkg        = blacklist.SelfModule + "/beat"
	abiPkg         = blacklist.SelfModule + "/internal/abi"
	beatPlainFile  = "runtime_plain.go"
	beatLinkedFile = "runtime_linked.go"
	// The start-up tracer's binding to the runtime's serve hook.
	tracerPkg        = blacklist.SelfModule + "/tracer"
	tracerPlainFile  = "serve_plain.go"
	tracerLinkedFile = "serve_linked.go"
	compileToolName  = "compile"
)

// compile instruments one package and runs the real compiler on the result.
func compile(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parseCompile(args)
	if err != nil {
		return err
	}
	pkg := c.importPath()
	files := c.operands
	log := cfg.log.With().Str("pkg", pkg).Logger()

	tmp, err := os.MkdirTemp("", "matrixexec-")
	if err != nil {
		return fmt.Errorf("compile %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)

	var newFiles []string
	switch {
	case pkg == "runtime":
		if err := checkTarget(c.tool); err != nil {
			return err
		}
		newFiles, err = rewrite.PatchRuntime(files, tmp, cfg.debugHooks)
		log.Debug().Err(err).Msg("patched runtime")
	case pkg == abiPkg:
		if err := checkABI(files); err != nil {
			return err
		}
	case rewrite.HasStdHooks(pkg):
		newFiles, err = rewrite.PatchStd(pkg, files, tmp)
		log.Debug().Err(err).Msg("added dispatch hooks")
	case pkg == beatPkg:
		if err := checkBeatABI(c.flags); err != nil {
			return err
		}
		newFiles = linkFiles(files, beatPlainFile, beatLinkedFile)
		log.Debug().Msg("linked beat to the runtime")
	case pkg == tracerPkg:
		newFiles = linkFiles(files, tracerPlainFile, tracerLinkedFile)
		log.Debug().Msg("linked the tracer to the runtime")
	default:
		newFiles, err = instrument(cfg, pkg, c.flags, files, tmp)
		if err == nil {
			newFiles, err = patchTestMain(files, newFiles, tmp)
		}
	}
	if err != nil {
		return err
	}
	var after func(string) error
	if p, _ := c.flag("p"); p == "main" && !c.has("std") {
		extra, importcfg, fn, err := injectAuto(cfg, c.tool, c.flags, files, tmp)
		if err != nil {
			return err
		}
		if extra != "" {
			if newFiles == nil {
				newFiles = files
			}
			newFiles = append(newFiles, extra)
			c.set("importcfg", importcfg)
			after = fn
		}
	}
	if newFiles != nil {
		c.flags = trimTemp(c.flags, tmp)
		c.operands = newFiles
	}
	out, _ := c.flag("o")
	args, err = toolArgs(c.args(), tmp)
	if err != nil {
		return err
	}
	if err := runTool(args, stdin, stdout, stderr); err != nil {
		return err
	}
	if after != nil {
		return after(out)
	}
	return nil
}

// trimTemp returns the compiler flags with dir, where the rewritten files
// are, trimmed from file names (as cmd/go trims the $WORK directory where
// cmd/cover writes its files). Untrimmed, the random directory name would
// be in the export data, whose hash identifies the package: separate
// compiles of one package would differ, and plugin.Open would refuse a
// plugin ("built with a different version of package runtime").
func trimTemp(flags []string, dir string) []string {
	rule := dir + "=>"
	out := append([]string(nil), flags...)
	for i, a := range out {
		if a == "-trimpath" && i+1 < len(out) {
			out[i+1] = rule + ";" + out[i+1]
			return out
		}
		if v, ok := strings.CutPrefix(a, "-trimpath="); ok {
			out[i] = "-trimpath=" + rule + ";" + v
			return out
		}
	}
	return append(out, "-trimpath", rule)
}

// patchTestMain makes the main function of a test binary end the start-up
// phase (see rewrite.PatchTestMain). files are the package's files, newFiles
// what instrumenting made of them (nil: unchanged).
func patchTestMain(files, newFiles []string, dir string) ([]string, error) {
	for _, f := range files {
		if filepath.Base(f) != rewrite.TestMainFile {
			continue
		}
		patched, err := rewrite.PatchTestMain(f, dir)
		if err != nil {
			return nil, err
		}
		if newFiles == nil {
			newFiles = files
		}
		var out []string
		for _, nf := range newFiles {
			if nf == f {
				out = append(out, patched...)
			} else {
				out = append(out, nf)
			}
		}
		return out, nil
	}
	return newFiles, nil
}

// linkFiles swaps a package's no-op runtime binding (the file plain) for the
// one that reaches the patched runtime (linked): beat's, the tracer's.
func linkFiles(files []string, plain, linked string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		if filepath.Base(f) == plain {
			f = filepath.Join(filepath.Dir(f), linked)
		}
		out[i] = f
	}
	return out
}

// instrument rewrites the package's files into dir and returns the new file
// list, or nil to compile the package unchanged.
func instrument(cfg *config, pkg string, flags, files []string, dir string) ([]string, error) {
	rules, err := loadRules(cfg)
	if err != nil {
		return nil, err
	}
	if ok, reason := rules.Package(pkg, hasFlag(flags, "std")); !ok {
		cfg.log.Debug().Str("pkg", pkg).Str("reason", reason).Msg("package not instrumented")
		return nil, nil
	}
	var srcs []string
	for _, f := range files {
		if filepath.Base(f) == rewrite.TestMainFile {
			continue // generated by go test
		}
		srcs = append(srcs, f)
	}
	trim, _ := flagValue(flags, "trimpath")
	tc, err := typesConfig(flags)
	if err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	profile, err := pgoProfile(flags)
	if err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	var hot func(string) bool
	if profile != nil {
		// The profile names functions by linker symbol, whose package
		// part is the compiler's -p (main for commands).
		linkPkg, _ := flagValue(flags, "p")
		hot = func(name string) bool { return profile.Hot(linkPkg + "." + name) }
	}
	plan, err := rewrite.NewPlan(srcs, rewrite.Options{
		PkgPath:      pkg,
		InlineBudget: cfg.inlineBudget,
		ReturnExits:  cfg.returnExits,
		TrimPath:     trim,
		Types:        tc,
		Hot:          hot,
		Keep:         func(fn string) bool { ok, _ := rules.Func(pkg, fn); return ok },
	})
	if err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	m, err := cfg.openMap()
	if err != nil {
		return nil, err
	}
	if len(plan.Skips)+len(plan.Deferred) > 0 {
		// Functions that keep a deferred exit hook are listed too, with
		// a reason that says so (exit-defer:…).
		skips := make([]idalloc.Skip, 0, len(plan.Skips)+len(plan.Deferred))
		for _, s := range append(plan.Skips[:len(plan.Skips):len(plan.Skips)], plan.Deferred...) {
			skips = append(skips, idalloc.Skip{Name: s.Name, Reason: s.Reason, Pos: cfg.mapPos(s.Pos)})
		}
		if err := m.RecordSkipped(pkg, skips); err != nil {
			return nil, mapError(err)
		}
	}
	if len(plan.Funcs) == 0 {
		cfg.log.Debug().Str("pkg", pkg).Int("skipped", len(plan.Skips)).Msg("nothing to instrument")
		return nil, nil
	}
	funcs := make([]idalloc.Func, len(plan.Funcs))
	for i, f := range plan.Funcs {
		funcs[i] = idalloc.Func{Name: f.Name, Kind: idalloc.Kind(f.Kind), Pos: cfg.mapPos(f.Pos)}
	}
	ids, err := m.Allocate(pkg, funcs)
	if err != nil {
		return nil, mapError(err)
	}
	outs, err := plan.Apply(ids)
	if err != nil {
		return nil, err
	}
	newFiles := append([]string(nil), files...)
	for i, o := range outs {
		if o.Src == nil {
			continue
		}
		dst := filepath.Join(dir, fmt.Sprintf("%d_%s", i, filepath.Base(o.Path)))
		if err := os.WriteFile(dst, o.Src, 0o600); err != nil {
			return nil, fmt.Errorf("instrument %s: %w", pkg, err)
		}
		for j, f := range newFiles {
			if f == o.Path {
				newFiles[j] = dst
			}
		}
	}
	// The hooks file claims a stable name next to the package's sources so
	// that binaries stay reproducible.
	hooks := fmt.Appendf(nil, "//line %s:1:1\n", filepath.Join(filepath.Dir(srcs[0]), rewrite.HooksFileName))
	hooks = append(hooks, plan.HooksFile(ids)...)
	hooksPath := filepath.Join(dir, rewrite.HooksFileName)
	if err := os.WriteFile(hooksPath, hooks, 0o600); err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	cfg.log.Debug().Str("pkg", pkg).Int("instrumented", len(plan.Funcs)).Int("skipped", len(plan.Skips)).Msg("instrumented")
	// First: it declares __matrix_on, which must precede the package's own
	// variables in declaration order (see rewrite.Plan.HooksFile).
	return append([]string{hooksPath}, newFiles...), nil
}

// pkgKey is the package path under which functions are recorded in the
// map: test variants ("p [p.test]") share the ids of their package.
func pkgKey(pkg string) string {
	if i := strings.Index(pkg, " ["); i >= 0 {
		return pkg[:i]
	}
	return pkg
}

// typesConfig returns what type checking the package needs from its
// compile: the importcfg's content, the -lang version and the target's
// sizes. It returns nil for a compile without an importcfg.
func typesConfig(flags []string) (*rewrite.TypesConfig, error) {
	path, ok := flagValue(flags, "importcfg")
	if !ok {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read importcfg: %w", err)
	}
	lang, _ := flagValue(flags, "lang")
	goarch := os.Getenv("GOARCH")
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	return &rewrite.TypesConfig{Importcfg: data, GoVersion: lang, Sizes: types.SizesFor("gc", goarch)}, nil
}

// pgoProfile reads the compile's -pgoprofile, if it is a preprocessed
// profile (cmd/go passes one from Go 1.23 on). It returns nil otherwise:
// then no function is taken for hot.
func pgoProfile(flags []string) (*pgohot.Profile, error) {
	path, ok := flagValue(flags, "pgoprofile")
	if !ok || path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pgo profile: %w", err)
	}
	if !pgohot.IsPreprocessed(data) {
		return nil, nil
	}
	p, err := pgohot.Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// mapPos returns the position of a function as the map and the skipped
// file keep it: the same on every machine, so that a committed map does
// not change with the checkout's directory or name the user's home. A file
// of a dependency in the module cache is "<module>@<version>/file.go:line"
// (its directory in the module cache), one of the main module (or workspace) is
// relative to its root, one of the standard library relative to
// GOROOT/src. Anything else (a replace directory outside the module) and
// positions that are already relative are kept as they are. The binary
// keeps the compiler's own file names, so reports still point at the
// files.
func (cfg *config) mapPos(pos string) string {
	if !filepath.IsAbs(pos) {
		return pos
	}
	getenv := cfg.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, base := range []string{getenv("GOMODCACHE"), goRootSrc(getenv), moduleRoot(getenv)} {
		if base == "" {
			continue
		}
		if rel, err := filepath.Rel(base, pos); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return pos
}

// goRootSrc returns GOROOT/src as cmd/go tells its tools, or "".
func goRootSrc(getenv func(string) string) string {
	if r := getenv("GOROOT"); r != "" {
		return filepath.Join(r, "src")
	}
	return ""
}
