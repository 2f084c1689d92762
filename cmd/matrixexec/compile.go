package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/gocmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/zerocode"
	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/self"
	"github.com/matrixgo/matrix/pgohot"
	"github.com/matrixgo/matrix/rewrite"
)

// beatPkg is the recorder's public package. Under matrixexec its plain
// (no-op) binding to the runtime is swapped for the linked one.
const (
	beatPkg        = self.Module + "/beat"
	abiPkg         = self.Module + "/internal/abi"
	beatPlainFile  = "runtime_plain.go"
	beatLinkedFile = "runtime_linked.go"
	// The start-up tracer's binding to the runtime's serve hook.
	tracerPkg        = self.Module + "/tracer"
	tracerPlainFile  = "serve_plain.go"
	tracerLinkedFile = "serve_linked.go"
	compileToolName  = "compile"
)

// compile instruments one package and runs the real compiler on the result.
//
// A router or RPC server package gets its route hooks (rewrite.PatchRoutes)
// too. Their rules check the shape of the code they hook, but if the
// compiler still rejects the package with them, it is compiled again
// without them, with a note: route hooks never fail a build that succeeds
// without them.
func compile(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := toolcmd.ParseCompile(args)
	if err != nil {
		return err
	}
	if !rewrite.HasRouteHooks(c.ImportPath()) {
		return compilePackage(cfg, args, true, stdin, stdout, stderr)
	}
	var out, errOut bytes.Buffer
	err = compilePackage(cfg, args, true, stdin, &out, &errOut)
	var exit exitError
	if !errors.As(err, &exit) {
		if _, werr := stdout.Write(out.Bytes()); werr != nil && err == nil {
			err = werr
		}
		if _, werr := stderr.Write(errOut.Bytes()); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	fmt.Fprintf(stderr, "matrixexec: note: %s left without route hooks: the compiler rejected them (%s): %s\n", c.ImportPath(), firstLine(append(out.Bytes(), errOut.Bytes()...)), rewrite.RouteHooksMissing(c.ImportPath()))
	return compilePackage(cfg, args, false, stdin, stdout, stderr)
}

// compilePackage is compile's one attempt, with the route hooks of the
// package or without them.
func compilePackage(cfg *config, args []string, routes bool, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := toolcmd.ParseCompile(args)
	if err != nil {
		return err
	}
	pkg := c.ImportPath()
	files := c.Operands
	log := cfg.log.With("pkg", pkg)

	tmp, err := os.MkdirTemp("", "matrixexec-")
	if err != nil {
		return fmt.Errorf("compile %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)

	var newFiles []string
	var inst *instrumented
	var failure *rewriteFailure // the rewriter's, when the package is built from its own files
	switch {
	case pkg == "runtime":
		// The release and the target were checked (unsupportedTarget);
		// a release that cannot be told is refused here.
		if cfg.goMinor == 0 {
			if err := rewrite.CheckGoRelease(toolGoroot(c.Tool)); err != nil {
				return err
			}
		}
		newFiles, err = rewrite.PatchRuntime(files, tmp, cfg.debugHooks, !cfg.returnExits)
		log.Debug("patched runtime", "error", err)
	case pkg == abiPkg:
		if err := checkABI(files); err != nil {
			return err
		}
	case rewrite.HasStdHooks(pkg):
		newFiles, err = rewrite.PatchStd(pkg, files, tmp)
		log.Debug("added dispatch hooks", "error", err)
	case pkg == beatPkg:
		if err := checkBeatABI(c); err != nil {
			return err
		}
		newFiles = linkFiles(files, beatPlainFile, beatLinkedFile)
		log.Debug("linked beat to the runtime")
	case pkg == tracerPkg:
		newFiles = linkFiles(files, tracerPlainFile, tracerLinkedFile)
		log.Debug("linked the tracer to the runtime")
	default:
		if routes && rewrite.HasRouteHooks(pkg) {
			routed, note, rerr := rewrite.PatchRoutes(pkg, files, tmp)
			if rerr != nil {
				return rerr
			}
			if note != "" {
				fmt.Fprintf(stderr, "matrixexec: note: %s left without route hooks (%s): %s\n", pkg, note, rewrite.RouteHooksMissing(pkg))
			}
			log.Debug("added route hooks", "note", note)
			// The hooked files are the package's sources from here on,
			// instrumented or not.
			files = routed
			c.Operands = routed
		}
		inst, err = instrumentSafely(cfg, c, tmp, nil)
		if err != nil && !cfg.strict {
			if errors.As(err, &failure) {
				// Built from its own files: a plain build's errors, if
				// the package has any, are shown as a plain build shows
				// them; otherwise a warning says what was lost.
				inst, err = nil, nil
			}
		}
		if err == nil && (inst == nil || inst.files == nil) {
			// compileInstrumented patches an instrumented package's.
			newFiles, err = patchTestMain(files, nil, tmp)
			if newFiles == nil && routes && rewrite.HasRouteHooks(pkg) {
				newFiles = files
			}
		}
	}
	if err != nil {
		return err
	}
	var after func(string) error
	var extra string
	if c.IsMain() && !c.Has("std") {
		var importcfg string
		var fn func(string) error
		extra, importcfg, fn, err = zerocode.Inject(cfg.zeroCodeConfig(), c, tmp)
		if err != nil {
			return err
		}
		if extra != "" {
			c.Set("importcfg", importcfg)
			after = fn
		}
	}
	// operands returns the files to compile: those given, with the
	// zero-code tracer's file, if any.
	operands := func(newFiles []string) []string {
		if extra == "" {
			return newFiles
		}
		if newFiles == nil {
			newFiles = files
		}
		return append(newFiles[:len(newFiles):len(newFiles)], extra)
	}
	if newFiles != nil || extra != "" || (inst != nil && inst.files != nil) {
		c.TrimDir(tmp)
	}
	if omitsDWARF(c) {
		c.AddFlag("-dwarf=false")
	}
	out, _ := c.Flag("o")
	if inst != nil && inst.files != nil {
		err = cfg.compileInstrumented(c, inst, operands, stdin, stdout, stderr)
	} else {
		err = runCompile(c, operands(newFiles), tmp, stdin, stdout, stderr)
	}
	if err != nil {
		return err
	}
	if failure != nil {
		fmt.Fprintf(stderr, "matrixexec: warning: package %s left uninstrumented: %v (MATRIX_STRICT=1 fails the build instead, with the details)\n", pkg, failure.err)
		log.Warn("rewrite failed: package left uninstrumented", "error", failure.err)
	}
	if after != nil {
		return after(out)
	}
	return nil
}

// omitsDWARF reports whether a compile builds one of this module's own
// packages that matrixexec links into programs (the recorder's API, the
// tracer and what they import), which it compiles without DWARF: writing
// and compressing their debug information was a quarter of what zero-code
// mode added to the link of a small service, and a debugger has nothing in
// them for a user to step through. Their functions keep their names and lines in stack traces,
// profiles and reports (those come from the line table, not DWARF). A
// build for a debugger (-N) or that sets -dwarf itself keeps its flags, and
// so do the module's commands.
func omitsDWARF(c *toolcmd.Cmd) bool {
	pkg := c.SymbolPkg()
	if !strings.HasPrefix(pkg, self.Module+"/") || strings.HasPrefix(pkg, self.Module+"/cmd/") {
		return false
	}
	for _, f := range c.Flags {
		if f == "-N" || f == "-dwarf" || strings.HasPrefix(f, "-dwarf=") {
			return false
		}
	}
	return true
}

// runCompile runs the compile c on the files operands.
func runCompile(c *toolcmd.Cmd, operands []string, tmp string, stdin io.Reader, stdout, stderr io.Writer) error {
	if operands != nil {
		c.Operands = operands
	}
	args, err := c.Argv(tmp)
	if err != nil {
		return err
	}
	return runTool(args, stdin, stdout, stderr)
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

// instrumented is a package as instrument rewrote it.
type instrumented struct {
	// files is the list of files to compile, or nil to compile the
	// package unchanged.
	files []string
	// plan is the rewrite's plan; nil if the package is not instrumented.
	plan *rewrite.Plan
	// skippedPath is the id map's file of skipped functions.
	skippedPath string
	// dir holds the rewritten files.
	dir string
	// heapFlag is the compiler flag that raises its starting heap, if
	// instrumenting asks for one (see startHeapFlag).
	heapFlag string
}

// A rewriteFailure is the rewriter's failure on a package: an error of
// its planning or rewriting (one of the package's files does not parse,
// say), or a panic, a defect of matrixexec. The package can still be
// built from its own files, and is, unless MATRIX_STRICT=1.
type rewriteFailure struct {
	pkg   string
	err   error
	stack []byte // a panic's
}

func (f *rewriteFailure) Error() string {
	if f.stack != nil {
		return fmt.Sprintf("instrument %s: %v\n%s", f.pkg, f.err, f.stack)
	}
	return fmt.Sprintf("instrument %s: %v", f.pkg, f.err)
}

func (f *rewriteFailure) Unwrap() error { return f.err }

// instrumentSafely is instrument with a panic of the rewriter returned as
// a rewriteFailure, so that a defect of matrixexec does not break a
// build.
func instrumentSafely(cfg *config, c *toolcmd.Cmd, dir string, exclude map[string]string) (inst *instrumented, err error) {
	defer func() {
		if r := recover(); r != nil {
			inst, err = nil, &rewriteFailure{pkg: c.ImportPath(), err: fmt.Errorf("matrixexec panicked: %v", r), stack: debug.Stack()}
		}
	}()
	return instrument(cfg, c, dir, exclude)
}

// instrument rewrites the files of the package c compiles into dir and
// returns them, leaving the functions named in exclude uninstrumented
// (rewrite.Func.Name; listed as skipped with the reason given).
func instrument(cfg *config, c *toolcmd.Cmd, dir string, exclude map[string]string) (*instrumented, error) {
	pkg, files := c.ImportPath(), c.Operands
	if cfg.debugPanic[pkg] {
		panic("MATRIX_DEBUG_PANIC names " + pkg)
	}
	rules, err := loadRules(cfg)
	if err != nil {
		return nil, err
	}
	if ok, reason := rules.Package(pkg, c.Has("std")); !ok {
		cfg.log.Debug("package not instrumented", "pkg", pkg, "reason", reason)
		return &instrumented{}, nil
	}
	var srcs []string
	for _, f := range files {
		if filepath.Base(f) == rewrite.TestMainFile {
			continue // generated by go test
		}
		if inject.IsDecls(filepath.Base(f)) && filepath.Dir(f) == dir {
			continue // the hooks' declarations, not the package's code
		}
		srcs = append(srcs, f)
	}
	trim, _ := c.Flag("trimpath")
	tc, err := typesConfig(c)
	if err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	profile, err := pgoProfile(c)
	if err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	var hot func(string) bool
	if profile != nil {
		// The profile names functions by linker symbol, whose package
		// part is the compiler's -p (main for commands).
		linkPkg := c.SymbolPkg()
		hot = func(name string) bool { return profile.Hot(linkPkg + "." + name) }
	}
	plan, err := rewrite.NewPlan(srcs, rewrite.Options{
		PkgPath:      pkg,
		InlineBudget: cfg.inlineBudget,
		ReturnExits:  cfg.returnExits,
		CopyBudget:   cfg.copyBudget,
		HookBounded:  cfg.hookBounded,
		GoRelease:    cfg.goMinor,
		TrimPath:     trim,
		Types:        tc,
		Hot:          hot,
		Keep: func(fn string) bool {
			if _, ok := exclude[fn]; ok {
				return false
			}
			ok, _ := rules.Func(pkg, fn)
			return ok
		},
		Reject: cfg.rejects(pkg),
	})
	if err != nil {
		return nil, &rewriteFailure{pkg: pkg, err: err}
	}
	m, err := cfg.openMap()
	if err != nil {
		return nil, err
	}
	for i, s := range plan.Skips {
		if reason, ok := exclude[s.Name]; ok && s.Reason == rewrite.ReasonBlacklist {
			plan.Skips[i].Reason = reason
		}
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
	inst := &instrumented{skippedPath: m.SkippedPath(), dir: dir}
	if len(plan.Funcs) == 0 {
		cfg.log.Debug("nothing to instrument", "pkg", pkg, "skipped", len(plan.Skips))
		return inst, nil
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
		return nil, &rewriteFailure{pkg: pkg, err: err}
	}
	inst.heapFlag = startHeapFlag(c, plan.Growth(outs), cfg.getenv)
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
	srcDir := filepath.Dir(srcs[0])
	for _, f := range srcs {
		if filepath.Dir(f) != dir { // not a file with route hooks
			srcDir = filepath.Dir(f)
			break
		}
	}
	hooks := fmt.Appendf(nil, "//line %s:1:1\n", filepath.Join(srcDir, rewrite.HooksFileName))
	hooks = append(hooks, plan.HooksFile(ids)...)
	hooksPath := filepath.Join(dir, rewrite.HooksFileName)
	if err := os.WriteFile(hooksPath, hooks, 0o600); err != nil {
		return nil, fmt.Errorf("instrument %s: %w", pkg, err)
	}
	cfg.log.Debug("instrumented", "pkg", pkg, "instrumented", len(plan.Funcs), "skipped", len(plan.Skips), "copied", len(plan.Copied))
	// First: it declares __matrix_on, which must precede the package's own
	// variables in declaration order (see rewrite.Plan.HooksFile).
	inst.files = append([]string{hooksPath}, newFiles...)
	inst.plan = plan
	return inst, nil
}

// typesConfig returns what type checking the package needs from its
// compile: the importcfg's content, the -lang version and the target's
// sizes. It returns nil for a compile without an importcfg.
func typesConfig(c *toolcmd.Cmd) (*rewrite.TypesConfig, error) {
	cfg, err := c.Importcfg()
	if cfg == nil || err != nil {
		return nil, err
	}
	lang, _ := c.Flag("lang")
	goarch := os.Getenv("GOARCH")
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	return &rewrite.TypesConfig{Importcfg: cfg.Render(), GoVersion: lang, Sizes: types.SizesFor("gc", goarch)}, nil
}

// pgoProfile reads the compile's -pgoprofile, if it is a preprocessed
// profile (cmd/go passes one from Go 1.23 on). It returns nil otherwise:
// then no function is taken for hot.
func pgoProfile(c *toolcmd.Cmd) (*pgohot.Profile, error) {
	path, ok := c.Flag("pgoprofile")
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
	if cfg.posBases == nil {
		// Once per compile: finding the module root walks up the
		// directory tree.
		getenv := cfg.getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		cfg.posBases = []string{getenv("GOMODCACHE"), goRootSrc(getenv), gocmd.ModuleRoot(getenv)}
	}
	for _, base := range cfg.posBases {
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
