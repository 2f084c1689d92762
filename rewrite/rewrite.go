// Package rewrite instruments the Go source files of one package for the
// Matrix recorder.
//
// It is the source-to-source half of matrixexec: given the files that cmd/go
// hands to the compiler, it decides which functions to instrument (the
// filters of Tencent Matrix's Trace Canary, translated to Go: no calls,
// trivial accessors, inlinable functions, compiler pragmas, cgo output and
// blacklisted functions are skipped), and inserts an enter hook at the
// opening brace of every function that passes and an exit hook at each of
// its returns (see exits.go; a few functions keep a deferred exit hook).
//
// Rewriting never moves an original token: the hooks are inserted on the
// lines of the tokens they precede, block line directives restore the
// position of the text that follows them, and a //line directive at the top of each rewritten
// file restores its original name, exactly as cmd/cover does. The hooks reach
// the recorder through bodyless linkname declarations in one generated file
// per package (see HooksFile), so no import is added to user files.
//
// Rewriting happens in two steps so that the caller can allocate stable ids
// between them: NewPlan parses and filters, Plan.Apply renders.
package rewrite

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/inlinecost"
)

// Kinds of instrumented functions, as written to the mapping file.
const (
	KindFunc    = "func"
	KindMethod  = "method"
	KindClosure = "closure"
	KindInit    = "init"
)

// Skip reasons, as written to the skipped-functions file.
const (
	ReasonBodyless  = "bodyless"
	ReasonNoCalls   = "no-calls"
	ReasonBounded   = "bounded"
	ReasonTrivial   = "trivial"
	ReasonInlinable = "inlinable"
	ReasonSmallLeaf = "small-leaf"
	ReasonPGOHot    = "pgo-hot"
	ReasonPragma    = "pragma" // followed by ":go:<name>"
	ReasonBlacklist = "blacklist"
	ReasonCgo       = "cgo"
	// ReasonRouteWrapper: a closure a route hook added around a handler
	// as a router registers it (see PatchRoutes); the handler it calls
	// has hooks of its own.
	ReasonRouteWrapper = "route-wrapper"
)

// Options configure the instrumentation of one package.
type Options struct {
	// PkgPath is the import path of the package (the compiler's -p flag).
	PkgPath string
	// Keep, if non-nil, is consulted for every function that passed the
	// built-in filters; it returns false to leave the function alone.
	Keep func(fn string) bool
	// InlineBudget is the inlining cost at or below which a function is
	// considered inlinable and skipped. Zero means DefaultInlineBudget;
	// a negative value disables the filter.
	InlineBudget int
	// TrimPath is the compiler's -trimpath argument, applied to the file
	// names carried in the binary so that they match the binary's own
	// stack traces.
	TrimPath string
	// Types, if non-nil, has the package type-checked against the export
	// data its compile is given before the filters run. The inlining
	// estimate then follows every call to the function it really calls,
	// prices calls the compiler never inlines (interface methods, function
	// values) as such, and prices calls into other packages at the costs
	// the compiler recorded in their export data (see package inlinecost).
	// Without it, calls are resolved by name and a call into another
	// package is priced as a call that is not inlined.
	Types *TypesConfig
	// Hot, if non-nil, reports whether a function of the package (named
	// as in Func.Name) is a callee of a hot call edge of the build's PGO
	// profile (see package pgohot). The compiler inlines such
	// functions at their hot call sites up to HotInlineBudget, so those
	// estimated within it are skipped like other inlinable functions.
	Hot func(linkName string) bool
	// ReturnExits records each function's exit at its returns instead of
	// with a deferred call (see exitEdits): less code on the path that
	// does not record. Functions that cannot take it keep the deferred
	// exit and are listed in Plan.Deferred.
	ReturnExits bool
	// Reject, if non-nil, names functions (as in Func.Name) whose rewrite
	// is made to fail to compile: a test of what a build does when the
	// compiler rejects an instrumented package.
	Reject func(name string) bool
	// CopyBudget, with ReturnExits, is the estimated inlining cost at or
	// below which a function also keeps a hook-free copy of its body, run
	// while the recorder is off (see copyEdits): the functions whose hooks
	// are a noticeable part of a call. Zero or negative: none.
	CopyBudget int
	// HookBounded instruments the functions that are bounded (see
	// boundProver) like any other, instead of skipping them with the
	// reason ReasonBounded; the other rules still apply.
	HookBounded bool
	// GoRelease is the minor version of the Go release whose compiler
	// compiles the package (27 for Go 1.27; see GoRelease): releases
	// differ in how they name function literals in the body of a range
	// over a function, and in how they resolve relative file names in
	// line directives, and the rewrite follows the compiler. Zero stands
	// for a release before Go 1.27.
	GoRelease int
}

// TypesConfig is what type checking a package needs from its compile.
type TypesConfig struct {
	// Importcfg is the content of the compile's -importcfg file: the
	// export data of every package it imports.
	Importcfg []byte
	// GoVersion is the compile's -lang version ("go1.24"), if any.
	GoVersion string
	// Sizes are the target's type sizes (types.SizesFor("gc", GOARCH)).
	Sizes types.Sizes
}

// Func is a function chosen for instrumentation.
type Func struct {
	Name string // as in the compiler's symbol, without package: F, (*T).M, T.M, F.func1, init.0
	Kind string // KindFunc, KindMethod, KindClosure or KindInit
	Pos  string // file:line of the func keyword, honouring //line directives
}

// Skip is a function left alone, with the reason.
type Skip struct {
	Name, Reason, Pos string
}

// Plan is the result of analysing one package: what will be instrumented and
// what was skipped. It is rendered by Apply once ids are known.
type Plan struct {
	// PkgName is the package clause name (main, foo, foo_test).
	PkgName string
	// Funcs lists the functions to instrument, in file and source order.
	Funcs []Func
	// Skips lists the functions left alone.
	Skips []Skip
	// Deferred lists the instrumented functions that keep a deferred exit
	// hook, with the reason (DeferDefer, …), rather than an exit at each
	// return.
	Deferred []Skip
	// Copied lists the instrumented functions that keep a hook-free copy
	// of their body (Options.CopyBudget).
	Copied []string
	// GoCalls lists the go statements the compiler wraps, with the
	// function each calls, in source order (see GoCall).
	GoCalls []GoCall

	opts    Options
	fset    *token.FileSet
	files   []*srcFile
	helpers int    // enter helpers declared so far (see passEnter)
	spans   []span // of Funcs, in the same order
}

// span is where a function's source is, from its func keyword to its
// closing brace, as the compiler reports positions (//line directives
// honoured).
type span struct {
	file       string
	start, end int // lines
}

// Rejected is the identifier that Options.Reject puts into a function's
// rewrite: an undefined name, which the compiler reports at the function's
// opening brace.
const Rejected = "__matrix_rejected"

// FuncAt returns the instrumented function (as in Func.Name) whose source
// holds line line of file, as the compiler reports a position; the
// innermost if several do (a function literal inside a function). A file
// matches by its path, or by its base name if no function's path is file.
func (p *Plan) FuncAt(file string, line int) (string, bool) {
	best := -1
	for _, pass := range []func(string) bool{
		func(f string) bool { return f == file },
		func(f string) bool { return filepath.Base(f) == filepath.Base(file) },
	} {
		for i, sp := range p.spans {
			if !pass(sp.file) || line < sp.start || line > sp.end {
				continue
			}
			if best < 0 || sp.end-sp.start < p.spans[best].end-p.spans[best].start {
				best = i
			}
		}
		if best >= 0 {
			return p.Funcs[best].Name, true
		}
	}
	return "", false
}

// Pos returns the position of an instrumented function (Func.Pos), or "".
func (p *Plan) Pos(name string) string {
	for _, f := range p.Funcs {
		if f.Name == name {
			return f.Pos
		}
	}
	return ""
}

// Mode returns how an instrumented function's exit is recorded: "copy"
// (a hook-free copy beside a recording one), "defer" (a deferred exit
// hook) or "returns" (an exit at each return, or one exit site).
func (p *Plan) Mode(name string) string {
	for _, c := range p.Copied {
		if c == name {
			return "copy"
		}
	}
	for _, d := range p.Deferred {
		if d.Name == name {
			return "defer"
		}
	}
	if !p.opts.ReturnExits {
		return "defer"
	}
	return "returns"
}

type srcFile struct {
	editBuffer // path, src and the file's edits
	// lineNames maps the file names of the file's line directives, as
	// go/scanner reports them (made absolute), back to their text: before
	// Go 1.27 the compiler keeps relative names relative.
	lineNames map[string]string
	// lineFixes, from Go 1.27 on, are the edits that make the relative
	// file names of the file's line directives absolute (see
	// absoluteLineNames); made only if the file is rewritten anyway.
	lineFixes []edit
	ast       *ast.File
	cgo       bool
	// helpers maps the parameter types of an enter helper declared in the
	// file to its name; helperDecls holds their declarations, added at the
	// end of the file (see passEnter).
	helpers     map[string]string
	helperDecls strings.Builder
}

// Output is one file to hand to the compiler.
type Output struct {
	// Path is the file's original path.
	Path string
	// Src is the rewritten content, or nil when the file is unchanged.
	Src []byte
}

// NewPlan parses the package's files and decides what to instrument.
//
// If any file does not parse, the returned plan instruments nothing, so
// that the compiler reports the user's own syntax error unchanged.
func NewPlan(paths []string, opts Options) (*Plan, error) {
	p := &Plan{opts: opts, fset: token.NewFileSet()}
	var imp *inlinecost.Importer
	if tc := opts.Types; tc != nil {
		// A malformed importcfg leaves the package untyped: the
		// compiler will report it. Imported objects keep their
		// positions in a file set of their own, so that the files'
		// positions do not depend on how reading them interleaves with
		// parsing.
		imp, _ = inlinecost.NewImporter(token.NewFileSet(), tc.Importcfg)
	}
	// The export data is read while the files are parsed.
	loaded := make(chan struct{})
	defer func() { <-loaded }() // on every return
	if imp != nil {
		go func() {
			defer close(loaded)
			imp.Preload()
		}()
	} else {
		close(loaded)
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("rewrite: %w", err)
		}
		f, err := parser.ParseFile(p.fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			unchanged := &Plan{opts: opts, fset: p.fset}
			for _, path := range paths {
				unchanged.files = append(unchanged.files, &srcFile{editBuffer: editBuffer{path: path}})
			}
			return unchanged, nil
		}
		if p.PkgName == "" {
			p.PkgName = f.Name.Name
		}
		sf := &srcFile{editBuffer: editBuffer{path: path, src: src}, ast: f, cgo: isCgoOutput(path, src)}
		if opts.GoRelease >= lineDirRelease {
			// The block line directives the rewrite adds name files
			// as go/scanner does, absolute, as the compiler then
			// resolves them too.
			sf.lineFixes = absoluteLineNames(p.fset, f, path)
		} else {
			sf.lineNames = lineDirectiveNames(f, path)
		}
		p.files = append(p.files, sf)
	}
	<-loaded
	p.analyse(imp)
	return p, nil
}

// isCgoOutput reports whether a file was produced by cgo. Such files carry
// the user's code with line directives, but their calls into C go through
// generated wrappers that must not be disturbed.
func isCgoOutput(path string, src []byte) bool {
	base := filepath.Base(path)
	if strings.HasPrefix(base, "_cgo_") || strings.HasSuffix(base, ".cgo1.go") || strings.HasSuffix(base, ".cgo2.go") {
		return true
	}
	return bytes.HasPrefix(src, []byte("// Code generated by cmd/cgo"))
}

// analyse type-checks the package with imp, if not nil, and decides what to
// instrument.
func (p *Plan) analyse(imp *inlinecost.Importer) {
	astFiles := make([]*ast.File, len(p.files))
	for i, f := range p.files {
		astFiles[i] = f.ast
	}
	pkgInfo := collectPackageInfo(astFiles)
	if tc := p.opts.Types; tc != nil && imp != nil {
		conf := types.Config{Importer: imp, GoVersion: tc.GoVersion, Sizes: tc.Sizes}
		pkgInfo.typeCheck(p.fset, astFiles, p.opts.PkgPath, conf, imp.Func)
	}
	budget := p.opts.InlineBudget
	if budget == 0 {
		budget = DefaultInlineBudget
	}
	est := newEstimator(pkgInfo)
	prover := newBoundProver(pkgInfo)

	namer := newNamer(p.opts.GoRelease)
	for _, f := range p.files {
		namer.scan(f.ast, pkgInfo.rangesOverFunc)
		linknamed := linknamedNames(f.ast)
		// skipOuter records function nodes whose closures must be left
		// alone too (a pragma such as //go:norace or //go:nosplit on the
		// enclosing function).
		skipOuter := map[ast.Node]string{}
		walkFuncs(f.ast, func(n ast.Node, stack []ast.Node) bool {
			var (
				name, kind string
				body       *ast.BlockStmt
				ftype      *ast.FuncType
				recv       *ast.FieldList
				pos        token.Pos
				pragma     string
			)
			switch n := n.(type) {
			case *ast.FuncDecl:
				name, kind = namer.decl(n)
				body, ftype, pos, recv = n.Body, n.Type, n.Type.Func, n.Recv
				pragma = skipPragma(n.Doc)
				if pragma == "" && linknamed[n.Name.Name] {
					pragma = "go:linkname"
				}
			case *ast.FuncLit:
				name = namer.lit(n)
				kind = KindClosure
				body, ftype, pos = n.Body, n.Type, n.Type.Func
				for _, outer := range stack[:len(stack)-1] {
					if r, ok := skipOuter[outer]; ok {
						pragma = r
					}
				}
			}
			position := p.position(pos)
			skip := func(reason string) bool {
				p.Skips = append(p.Skips, Skip{Name: name, Reason: reason, Pos: position})
				return true
			}
			if pragma != "" {
				skipOuter[n] = pragma
				return skip(ReasonPragma + ":" + pragma)
			}
			isMain := p.PkgName == "main" && kind == KindFunc && name == "main"
			switch {
			case body == nil:
				return skip(ReasonBodyless)
			case isMain:
				// Always: its hook also ends the start-up phase.
			case f.cgo:
				return skip(ReasonCgo)
			case kind == KindClosure && isRouteWrapper(body):
				return skip(ReasonRouteWrapper)
			case isTrivial(body):
				return skip(ReasonTrivial)
			case !p.opts.HookBounded && prover.bounded(n):
				return skip(ReasonBounded)
			case !hasCalls(body, pkgInfo):
				return skip(ReasonNoCalls)
			case budget > 0 && inlinable(kind, name, p.PkgName) && est.cost(n, budget) <= budget:
				return skip(ReasonInlinable)
			case budget > 0 && p.opts.Hot != nil && inlinable(kind, name, p.PkgName) &&
				p.opts.Hot(name) && est.hotCost(n) <= HotInlineBudget:
				return skip(ReasonPGOHot)
			case budget > 0 && est.smallLeaf(body, budget*SmallLeafFactor/2):
				return skip(ReasonSmallLeaf)
			case p.opts.Keep != nil && !p.opts.Keep(name):
				return skip(ReasonBlacklist)
			}
			p.Funcs = append(p.Funcs, Func{Name: name, Kind: kind, Pos: position})
			start, end := p.fset.Position(pos), p.fset.Position(body.Rbrace)
			p.spans = append(p.spans, span{file: start.Filename, start: start.Line, end: end.Line})
			prefix := ""
			if isMain {
				prefix = hookMainEntered + "(); "
			}
			fn := len(p.Funcs) - 1
			// The bounded guards at the start of the body run before the
			// entry hook (see "A bounded prefix"), but in main.main and
			// init functions, whose hooks mark the phases of start-up.
			guard := 0
			if !p.opts.HookBounded && !isMain && kind != KindInit {
				guard = prover.prefix(body)
			}
			reason := ""
			if p.opts.ReturnExits {
				reason = DeferOnce
				if !isMain && kind != KindInit {
					reason = exitDeferReason(body)
				}
			}
			if !p.opts.ReturnExits || reason != "" {
				if reason != "" {
					p.Deferred = append(p.Deferred, Skip{Name: name, Reason: ReasonDeferredExit + ":" + reason, Pos: position})
				}
				// Nested ifs, not "on && enter": with the deferred
				// call's block to join, the compiler built the boolean of
				// the && and tested it again, four more instructions on
				// every call while the recorder is off (as at the returns,
				// see splitEdits).
				text := fmt.Sprintf("%sif %s.v != 0 { if %s(%s) { defer %s(%s) } }; ", prefix, HookActive, HookEnter, idMark, HookExit, idMark)
				if guard > 0 && reason == DeferDefer {
					f.add(p.afterGuards(f, fn, body, guard, text))
				} else {
					lbrace := p.offset(body.Lbrace) + 1
					f.add(edit{offset: lbrace, end: lbrace, fn: fn, text: text + resumeDirective(p.fset, f, body.Lbrace)})
				}
				p.reject(f, fn, name, body)
				return true
			}
			// Edits at one offset (the end of a result type and the
			// opening brace that follows it) keep their order.
			var edits []edit
			if cb := p.opts.CopyBudget; cb > 0 && est.body(body, cb) <= cb && copyable(body, pkgInfo) {
				var enter func(bool) string
				if fd, ok := n.(*ast.FuncDecl); ok {
					enter = p.passEnter(f, fd)
				}
				edits = p.copyEdits(f, fn, recv, ftype, body, p.exitEdits(f, fn, recv, ftype, body, prefix, enter, true, 0))
				p.Copied = append(p.Copied, name)
			} else {
				edits = p.exitEdits(f, fn, recv, ftype, body, prefix, nil, false, guard)
			}
			for _, e := range edits {
				f.add(e)
			}
			p.reject(f, fn, name, body)
			return true
		})
		if f.helperDecls.Len() > 0 {
			f.insert(len(f.src), "\n"+f.helperDecls.String())
		}
		if f.changed() {
			for _, e := range f.lineFixes {
				f.add(e)
			}
		}
	}
	p.GoCalls = p.goCalls(namer, pkgInfo)
}

// reject makes the rewrite of function fn fail to compile if
// Options.Reject names it: it refers to Rejected after its other edits at
// the opening brace, where the compiler reports the error.
func (p *Plan) reject(f *srcFile, fn int, name string, body *ast.BlockStmt) {
	if p.opts.Reject == nil || !p.opts.Reject(name) {
		return
	}
	lbrace := p.offset(body.Lbrace) + 1
	f.add(edit{offset: lbrace, end: lbrace, fn: fn, text: "_ = " + Rejected + "; " + resumeDirective(p.fset, f, body.Lbrace)})
}

// walkFuncs calls visit for every function declaration and function
// literal of f, in source order, with the functions that enclose it,
// outermost first and itself last. If visit returns false, the functions
// inside n are not visited.
func walkFuncs(f *ast.File, visit func(n ast.Node, stack []ast.Node) bool) {
	var stack []ast.Node
	var funcs []bool // for each node being visited: whether it is on stack
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			if funcs[len(funcs)-1] {
				stack = stack[:len(stack)-1]
			}
			funcs = funcs[:len(funcs)-1]
			return true
		}
		switch n.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			stack = append(stack, n)
			if !visit(n, stack) {
				stack = stack[:len(stack)-1]
				return false
			}
			funcs = append(funcs, true)
		default:
			funcs = append(funcs, false)
		}
		return true
	})
}

// inlinable reports whether the compiler could inline a function at all:
// closures are only inlined where they are called directly, and init
// functions and main.main are called by the runtime.
func inlinable(kind, name, pkgName string) bool {
	return kind != KindClosure && kind != KindInit && !(pkgName == "main" && name == "main")
}

// position renders pos as file:line honouring //line directives, with the
// file name rewritten by -trimpath like the compiler does.
func (p *Plan) position(pos token.Pos) string {
	ps := p.fset.Position(pos)
	return trimPath(ps.Filename, p.opts.TrimPath) + ":" + strconv.Itoa(ps.Line)
}

// resumeDirective returns the block line directive that gives the character
// after an opening brace its original position back.
func resumeDirective(fset *token.FileSet, f *srcFile, lbrace token.Pos) string {
	ps := fset.Position(lbrace) // adjusted by //line directives
	if raw, ok := f.lineNames[ps.Filename]; ok {
		ps.Filename = raw
	}
	if ps.Column == 0 {
		// A line-only //line directive leaves columns unknown: keep it so.
		return fmt.Sprintf("/*line %s:%d*/", ps.Filename, ps.Line)
	}
	return fmt.Sprintf("/*line %s:%d:%d*/", ps.Filename, ps.Line, ps.Column+1)
}

// Apply renders the plan. ids[i] is the function id of p.Funcs[i]. Files
// without instrumented functions are returned with a nil Src.
func (p *Plan) Apply(ids []uint32) ([]Output, error) {
	if len(ids) != len(p.Funcs) {
		return nil, fmt.Errorf("rewrite: %d ids for %d functions", len(ids), len(p.Funcs))
	}
	out := make([]Output, len(p.files))
	for i, f := range p.files {
		out[i].Path = f.path
		if f.changed() {
			out[i].Src = f.render(func(e edit) string {
				if e.fn < 0 {
					return e.text
				}
				return strings.ReplaceAll(e.text, idMark, strconv.FormatUint(uint64(ids[e.fn]), 10))
			})
		}
	}
	return out, nil
}

// lineDirectiveNames returns the file names of a file's line directives,
// keyed by the name go/scanner gives them.
func lineDirectiveNames(f *ast.File, path string) map[string]string {
	var names map[string]string
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			name, _, ok := directiveName(c.Text)
			if !ok {
				continue
			}
			abs := filepath.Clean(name)
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(filepath.Dir(path), abs)
			}
			if names == nil {
				names = map[string]string{}
			}
			names[abs] = name
		}
	}
	return names
}

// absoluteLineNames returns the edits that replace the relative file names
// of a file's line directives with the names the compiler resolves them to
// from Go 1.27 on: relative to the directory of the file the directive is
// in, here path. A rewritten file is compiled from another directory,
// against which its directives would resolve otherwise.
func absoluteLineNames(fset *token.FileSet, f *ast.File, path string) []edit {
	dir := filepath.Dir(path)
	if dir == "." {
		return nil // the compiler keeps them relative
	}
	var edits []edit
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			name, at, ok := directiveName(c.Text)
			if !ok || filepath.IsAbs(name) {
				continue
			}
			off := fset.Position(c.Slash).Offset + at
			edits = append(edits, edit{offset: off, end: off + len(name), fn: -1, text: filepath.Join(dir, filepath.Clean(name))})
		}
	}
	return edits
}

// directiveName returns the file name of a line directive (the text of a
// "//line" or "/*line" comment: filename:line or filename:line:col, where
// the name may contain colons) and its byte offset in the text; ok is
// false for other comments and for directives without a name.
func directiveName(text string) (name string, at int, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(text, "//line "):
		rest = text[len("//line "):]
	case strings.HasPrefix(text, "/*line "):
		rest = strings.TrimSuffix(text[len("/*line "):], "*/")
	default:
		return "", 0, false
	}
	name = rest
	for range 2 {
		if i := strings.LastIndexByte(name, ':'); i >= 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
	}
	if name == "" || name == rest {
		return "", 0, false
	}
	return name, len("//line "), true
}

func trimPath(name, rules string) string {
	if rules == "" {
		return name
	}
	for _, rule := range strings.Split(rules, ";") {
		from, to, ok := strings.Cut(rule, "=>")
		if !ok {
			from, to = rule, ""
		}
		if from == "" {
			continue
		}
		if name == from {
			return to
		}
		if strings.HasPrefix(name, from) && (name[len(from)] == '/' || name[len(from)] == filepath.Separator) {
			rest := name[len(from)+1:]
			if to == "" {
				return rest
			}
			return to + "/" + filepath.ToSlash(rest)
		}
	}
	return name
}
