package rewrite

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// Exit hooks.
//
// An instrumented function records its exit at its returns: every return
// statement of the function (not those of the function literals it
// contains) becomes
//
//	r0, r1 = <results>; if __matrix_on.v == 0 { return }; __matrix_o(id); return
//
// so that the results are evaluated, and the calls they make are counted,
// before the exit is recorded (why two returns: see "The path that does not
// record"). The check at a return reads the recorder's
// flag again rather than a flag the entry left in the frame: such a flag
// lives across every call the function makes, so it costs a store, a
// reload after calls and a register on the path that does not record. The
// two are the same but in a frame that begins or ends a dispatch: the
// runtime records an exit only on a goroutine that records (as it does an
// entry), and the analysis drops an exit without its entry (the frame that
// began the dispatch, returning before its deferred End) and closes an
// entry without its exit. Unnamed results are named __matrix_r0, … for
// this, and so are results named _ (callers see the same type; nothing in
// the body can refer to those names); named results are assigned as a
// return statement assigns them. A function without results that can fall
// off its end records its exit before the closing brace.
//
// One exit site. A function with more than MaxExitReturns returns gets one
// exit site, after its body:
//
//	{ if __matrix_on.v != 0 { __matrix_i(id) }; {
//		...; r0, r1 = <results>; goto __matrix_x
//		...
//	}; __matrix_x: if __matrix_on.v == 0 { return }; __matrix_o(id); return }
//
// Each exit site is a branch and a call, across which the register
// allocator spills what is live, and which the compiler builds, allocates
// and encodes once per site: one site instead of one per return makes such
// a function cheap to compile, where it used to keep a deferred exit hook.
// Other functions keep a site at each return: one site makes every return
// pass its results through it, a few moves and a jump on each call, which
// a parser whose hot functions have a dozen returns measures, and in a
// function with a hook-free copy the shape of the recording copy changes
// how the compiler lays out the other. The body is wrapped in a block so
// that the goto jumps over no declaration in the label's scope (the goto
// leaves blocks, which Go allows); a short variable declaration that
// reused a parameter or result at the body's top level keeps doing so (see
// "Scopes").
//
// A result name declared again inside the body could make a return's
// assignment reach the wrong variable. Such a function's returns assign
// temporaries instead, __matrix_t0, … declared after the entry check
// (where no declaration of the body is in scope: __matrix_t0 := err), and
// the exit sites return them.
//
// Every original token keeps its position through block line directives; a
// return's keyword is emitted after its results, at its own position, and
// so is the goto that replaces it at one exit site.
//
// A frame left by a panic or runtime.Goexit records no exit: the analysis
// closes it at the exit of the nearest frame that records one. Functions
// for which this would misplace calls keep a deferred exit hook (see
// exitDeferReason).

// Identifiers of the returns rewriting. Users' code never contains them.
const (
	exitFlag     = "__matrix_e"
	resultPrefix = "__matrix_r"
	tempPrefix   = "__matrix_t"
	exitLabel    = "__matrix_x"
)

// idMark stands for the function id in rendered edits until Apply knows it.
const idMark = "\x00"

// Reasons for keeping a deferred exit hook, as written to the skipped file
// with ReasonDeferredExit.
const (
	// ReasonDeferredExit prefixes the reason of a function instrumented
	// with a deferred exit hook ("exit-defer:defer").
	ReasonDeferredExit = "exit-defer"
	// DeferDefer: the function defers calls; one of them may recover a
	// panic, after which the function returns without a return statement.
	DeferDefer = "defer"
	// DeferRecover: the function calls recover itself.
	DeferRecover = "recover"
	// DeferOnce: main.main and init functions run once, so the deferred
	// hook costs nothing that matters, and it records their exit when a
	// panic ends the program.
	DeferOnce = "once"
)

// MaxExitReturns is the number of return statements above which a function
// has one exit site rather than one at each return (see "One exit site"
// above).
const MaxExitReturns = 64

// exitDeferReason returns why the function with this body keeps a deferred
// exit hook, or "" if its returns can be rewritten.
func exitDeferReason(body *ast.BlockStmt) string {
	reason := ""
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its defers and recovers are its own
		case *ast.DeferStmt:
			reason = DeferDefer
		case *ast.CallExpr:
			if isRecover(n) {
				reason = DeferRecover
			}
		}
		return reason == ""
	})
	return reason
}

// isRecover reports whether c calls the builtin recover.
func isRecover(c *ast.CallExpr) bool {
	id, ok := ast.Unparen(c.Fun).(*ast.Ident)
	return ok && id.Name == "recover" && len(c.Args) == 0
}

// shadowsResult reports whether body declares one of the result names
// again, so that an assignment to that name in a return could reach the
// wrong variable. Function literals are checked too, which is conservative:
// their returns are their own.
func shadowsResult(names map[string]bool, body *ast.BlockStmt) bool {
	if len(names) == 0 {
		return false
	}
	shadowed := false
	ast.Inspect(body, func(n ast.Node) bool {
		declares(names, n, &shadowed)
		return !shadowed
	})
	return shadowed
}

// declares sets *found if n declares one of names.
func declares(names map[string]bool, n ast.Node, found *bool) {
	check := func(ids ...*ast.Ident) {
		for _, id := range ids {
			if id != nil && names[id.Name] {
				*found = true
			}
		}
	}
	checkExprs := func(xs ...ast.Expr) {
		for _, x := range xs {
			if id, ok := x.(*ast.Ident); ok {
				check(id)
			}
		}
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok == token.DEFINE {
			checkExprs(n.Lhs...)
		}
	case *ast.RangeStmt:
		if n.Tok == token.DEFINE {
			checkExprs(n.Key, n.Value)
		}
	case *ast.ValueSpec:
		check(n.Names...)
	case *ast.TypeSpec:
		check(n.Name)
	case *ast.FuncType:
		for _, fl := range []*ast.FieldList{n.TypeParams, n.Params, n.Results} {
			if fl != nil {
				for _, f := range fl.List {
					check(f.Names...)
				}
			}
		}
	}
}

// exitEdits returns the edits that give function fn (type ft, body body)
// exit hooks at its returns: prefix and the entry check after the opening
// brace, names for unnamed and blank results, every return statement
// rewritten, and the exit sites: before each return, or, if the function
// has more than MaxExitReturns returns, once after its body.
//
// enter, if not nil, renders the entry check of a recording copy instead
// (see passEnter): it gets whether the function has an exit site, and
// returns statements that declare the frame's flag (exitFlag) if so, which
// the exits then test. copied says that the body is the recording copy of
// copyEdits, which moves it into a block; recv is the function's receiver,
// if any (see "Scopes" below). The first guard statements of the body run
// before the entry check, as they are (see "A bounded prefix").
func (p *Plan) exitEdits(f *srcFile, fn int, recv *ast.FieldList, ft *ast.FuncType, body *ast.BlockStmt, prefix string, enter func(flag bool) string, copied bool, guard int) []edit {
	var returns []*ast.ReturnStmt
	for _, s := range body.List[guard:] {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				returns = append(returns, n)
			}
			return true
		})
	}
	var results []string
	var edits []edit
	// name gives a result without a usable name one of ours: the text at
	// [off, end) (empty for an unnamed result) becomes its name.
	name := func(off, end int, paren bool) {
		n := resultPrefix + strconv.Itoa(len(results))
		results = append(results, n)
		text := n + p.directive(f, end)
		if off == end {
			text = n + " " + p.directive(f, off)
		}
		if !paren {
			text = "(" + text
		}
		edits = append(edits, edit{offset: off, end: end, fn: fn, text: text})
	}
	named := map[string]bool{}
	if ft.Results != nil {
		paren := ft.Results.Opening.IsValid()
		for _, fld := range ft.Results.List {
			if len(fld.Names) == 0 {
				off := p.offset(fld.Type.Pos())
				name(off, off, paren)
				if !paren {
					end := p.offset(fld.Type.End())
					edits = append(edits, edit{offset: end, end: end, fn: fn, text: ")" + p.directive(f, end)})
				}
				continue
			}
			for _, n := range fld.Names {
				if n.Name == "_" {
					// Nothing can refer to a blank result, so naming it
					// changes nothing but what a return can assign.
					name(p.offset(n.Pos()), p.offset(n.End()), true)
					continue
				}
				named[n.Name] = true
				results = append(results, n.Name)
			}
		}
	}
	// assign is what the returns assign their results to: the results
	// themselves, or, if the body declares one of their names again,
	// temporaries declared at entry (after the entry check, where no
	// declaration of the body is in scope), which the exit site returns.
	assign, final := results, ""
	var temps []string
	if len(returns) > 0 && shadowsResult(named, body) {
		for i := range results {
			temps = append(temps, tempPrefix+strconv.Itoa(i))
		}
		assign, final = temps, " "+strings.Join(temps, ", ")
	}
	fallsOff := len(results) == 0 && !endsInReturn(body)
	sites := len(returns)
	if fallsOff {
		sites++
	}
	// joined: one exit site, after the body, which the returns reach by
	// goto (see "One exit site" above).
	joined := len(returns) > MaxExitReturns
	lbrace := p.offset(body.Lbrace) + 1
	entry := prefix
	// leave renders an exit site: the exit hook and a return, the
	// return's keyword at offset at (see "The path that does not record").
	back := func(at int) string { return p.directive(f, at) + "return" + final }
	leave := func(at int) string {
		return "if " + HookActive + ".v == 0 { " + back(at) + " }; " + HookExit + "(" + idMark + "); " + back(at)
	}
	if enter != nil {
		// A recording copy, entered with the recorder on: it keeps the
		// flag its enter helper returns, if it has an exit site.
		entry += enter(sites > 0)
		leave = func(at int) string {
			return "if " + exitFlag + " { " + HookExit + "(" + idMark + ") }; " + back(at)
		}
	} else {
		entry += "if " + HookActive + ".v != 0 { " + HookEnter + "(" + idMark + ") }; "
	}
	if temps != nil {
		entry += strings.Join(temps, ", ") + " := " + strings.Join(results, ", ") + "; "
	}
	if joined {
		entry += "{ "
	}
	if guard > 0 {
		edits = append(edits, p.afterGuards(f, fn, body, guard, entry))
	} else {
		edits = append(edits, edit{offset: lbrace, end: lbrace, fn: fn, text: entry + p.directive(f, lbrace)})
	}
	if joined || copied {
		// The body moves into a block.
		edits = append(edits, p.redeclEdits(f, fn, recv, ft, body)...)
	}
	if enter == nil && !copied {
		for _, s := range body.List[guard:] {
			edits = append(edits, p.splitEdits(f, fn, s)...)
		}
	}
	for _, r := range returns {
		ret := p.offset(r.Return)
		kw := ret + len("return")
		// site is what follows the results' assignment: the exit and a
		// return, or a goto to the one exit site.
		site := leave(ret)
		if joined {
			site = p.directive(f, ret) + "goto " + exitLabel
		}
		switch {
		case len(r.Results) > 0:
			end := p.offset(r.Results[len(r.Results)-1].End())
			edits = append(edits,
				edit{offset: ret, end: kw, fn: fn, text: strings.Join(assign, ", ") + " =" + p.directive(f, kw)},
				edit{offset: end, end: end, fn: fn, text: "; " + site + p.directive(f, end)})
		default:
			// A bare return: the site replaces it; where a result is
			// declared again, it first assigns the temporaries.
			text := site + p.directive(f, kw)
			if temps != nil {
				text = strings.Join(temps, ", ") + " = " + strings.Join(results, ", ") + "; " + text
			}
			edits = append(edits, edit{offset: ret, end: kw, fn: fn, text: text})
		}
	}
	rb := p.offset(body.Rbrace)
	switch {
	case joined:
		edits = append(edits, edit{offset: rb, end: rb, fn: fn, text: "; }; " + exitLabel + ": " + leave(rb) + p.directive(f, rb)})
	case fallsOff:
		edits = append(edits, edit{offset: rb, end: rb, fn: fn, text: "; " + leave(rb) + p.directive(f, rb)})
	}
	return edits
}

// afterGuards returns the edit that puts the entry check text after the
// first guard statements of body (see "A bounded prefix").
func (p *Plan) afterGuards(f *srcFile, fn int, body *ast.BlockStmt, guard int, text string) edit {
	at := p.offset(body.List[guard-1].End())
	return edit{offset: at, end: at, fn: fn, text: "; " + text + p.directive(f, at)}
}

// endsInReturn reports whether the last statement of body is a return.
func endsInReturn(body *ast.BlockStmt) bool {
	if len(body.List) == 0 {
		return false
	}
	_, ok := body.List[len(body.List)-1].(*ast.ReturnStmt)
	return ok
}

func (p *Plan) offset(pos token.Pos) int { return p.fset.Position(pos).Offset }

// directive returns the block line directive that gives the character at
// byte offset off of f its original position back.
func (p *Plan) directive(f *srcFile, off int) string {
	tf := p.fset.File(f.ast.Pos())
	ps := p.fset.Position(tf.Pos(off)) // adjusted by //line directives
	if raw, ok := f.lineNames[ps.Filename]; ok {
		ps.Filename = raw
	}
	if ps.Column == 0 {
		// A line-only //line directive leaves columns unknown: keep it so.
		return fmt.Sprintf("/*line %s:%d*/", ps.Filename, ps.Line)
	}
	return fmt.Sprintf("/*line %s:%d:%d*/", ps.Filename, ps.Line, ps.Column)
}

// Hook-free copies.
//
// A function small enough that the hooks are a noticeable part of what a
// call costs (its estimated inlining cost at most Options.CopyBudget) gets
// its body twice:
//
//	if __matrix_on.v == 0 {
//		<the original body, untouched>
//	} else {
//		<the entry check (see passEnter)>; <the body with exits at its returns>
//	}
//
// While the recorder is off a call pays one load and one branch: no test
// at the returns, and the register allocator places the
// original body's spills as in a plain build, since the hooks' calls are on
// the other branch. Both copies keep every position (line directives), and
// they are one function, so stack traces, runtime.Caller and the names the
// compiler gives are those of a plain build. Labels are function-wide, so
// those of the copy are renamed. A body is copied only if copying cannot
// change what it does or how the compiler names things: no function
// literals, go or defer statements or ranges over a function (the compiler
// names the functions and wrappers it makes of them by a per-function
// counter), and no type declarations (each copy would declare a distinct
// type).

// DefaultCopyBudget is the default Options.CopyBudget.
const DefaultCopyBudget = 160

// labelPrefix renames the labels of a body's recording copy.
const labelPrefix = "__matrix_L"

// copyable reports whether body can be given a recording copy (see above).
// A range over a function counts as a function literal: the compiler turns
// the loop's body into one, numbered per function. Without types, any range
// over something other than a literal could be one.
func copyable(body *ast.BlockStmt, pi *packageInfo) bool {
	ok := true
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit, *ast.GoStmt, *ast.DeferStmt, *ast.TypeSpec:
			ok = false
		case *ast.RangeStmt:
			if _, lit := ast.Unparen(n.X).(*ast.BasicLit); !lit && (pi.typed == nil || pi.typed.mayBeFunc(n.X)) {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// copyEdits returns the edits that give fn a hook-free copy of its body
// beside a recording one: exits are the edits exitEdits made for it, of
// which those inside the body move into the recording copy. Both copies
// keep the meaning of the body's names (see "Scopes" below).
func (p *Plan) copyEdits(f *srcFile, fn int, recv *ast.FieldList, ft *ast.FuncType, body *ast.BlockStmt, exits []edit) []edit {
	lbrace := p.offset(body.Lbrace) + 1
	rbrace := p.offset(body.Rbrace)
	// The hook-free copy's edits come first: one may end where the
	// recording copy starts (a body "{x, y := 1, 2}").
	out := p.redeclEdits(f, fn, recv, ft, body)
	var inner []edit
	for _, e := range exits {
		if e.offset >= lbrace && e.end <= rbrace {
			inner = append(inner, e)
		} else {
			out = append(out, e)
		}
	}
	// The recording copy's line directives name their files as the
	// original body's do (see absoluteLineNames).
	for _, e := range f.lineFixes {
		if e.offset >= lbrace && e.end <= rbrace {
			inner = append(inner, e)
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		var label *ast.Ident
		switch n := n.(type) {
		case *ast.LabeledStmt:
			label = n.Label
		case *ast.BranchStmt:
			label = n.Label
		}
		if label != nil {
			off, end := p.offset(label.Pos()), p.offset(label.End())
			inner = append(inner, edit{offset: off, end: end, fn: fn, text: labelPrefix + label.Name + p.directive(f, end)})
		}
		return true
	})
	sort.SliceStable(inner, func(i, j int) bool { return inner[i].offset < inner[j].offset })
	var b strings.Builder
	b.WriteString("} else {")
	last := lbrace
	for _, e := range inner {
		b.Write(f.src[last:e.offset])
		b.WriteString(e.text)
		last = e.end
	}
	b.Write(f.src[last:rbrace])
	b.WriteString("}" + p.directive(f, rbrace))
	return append(out,
		edit{offset: lbrace, end: lbrace, fn: fn, text: "if " + HookActive + ".v == 0 {" + p.directive(f, lbrace)},
		edit{offset: rbrace, end: rbrace, fn: fn, text: b.String()})
}

// Arguments through the enter hook.
//
// In a recording copy the arguments are live across the enter hook's call,
// which clobbers every register: the register allocator would spill them,
// and since the original body may spill them too, it would place those
// spills before the branch between the copies, on the path that does not
// record. So the recording copy passes its parameters through the hook:
//
//	var __matrix_e bool; __matrix_e, e, key = __matrix_in3(id, e, key)
//
// where __matrix_in3, declared at the end of the file, returns
// __matrix_i(id) and its other arguments unchanged. The copy then works on
// values the call defined, whose spills stay in the copy. The helper is not
// inlined (that would undo it), and runs only while recording; its frame
// never holds user code, so no stack trace shows it.

// passPrefix names the enter helpers of a file.
const passPrefix = "__matrix_in"

// passEnter returns the entry of fn's recording copy that passes its named
// parameters (receiver first) through an enter helper, declaring the helper
// in f if the file has none of that signature; nil if there is nothing to
// pass or the parameters' types cannot be written at file level (type
// parameters, function literals).
func (p *Plan) passEnter(f *srcFile, fd *ast.FuncDecl) func(flag bool) string {
	if fd.Type.TypeParams != nil {
		return nil
	}
	var names, typs []string
	lists := []*ast.FieldList{fd.Recv, fd.Type.Params}
	for li, fl := range lists {
		if fl == nil {
			continue
		}
		for _, fld := range fl.List {
			typ := fld.Type
			if li == 0 && genericRecv(typ) {
				return nil
			}
			prefix := ""
			if e, ok := typ.(*ast.Ellipsis); ok {
				prefix, typ = "[]", e.Elt
			}
			text := string(f.src[p.offset(typ.Pos()):p.offset(typ.End())])
			if strings.Contains(text, "//") || strings.Contains(text, "/*") {
				return nil
			}
			for _, n := range fld.Names {
				if n.Name != "_" {
					names = append(names, n.Name)
					typs = append(typs, prefix+text)
				}
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	key := strings.Join(typs, "\x00")
	name, ok := f.helpers[key]
	if !ok {
		name = passPrefix + strconv.Itoa(p.helpers)
		p.helpers++
		if f.helpers == nil {
			f.helpers = map[string]string{}
		}
		f.helpers[key] = name
		var params, results, args []string
		for i, t := range typs {
			a := "a" + strconv.Itoa(i)
			params = append(params, a+" "+t)
			results = append(results, t)
			args = append(args, a)
		}
		// The helper claims line 1 of the file: where it is declared
		// must not depend on the file's length, or an edit that changes
		// no code (a line added at the end) would change the package's
		// export data, which names the helper if an inlinable function
		// calls it, and every dependent would be compiled again.
		fmt.Fprintf(&f.helperDecls, "\n//line %s:1\n//go:noinline\nfunc %s(id uint32, %s) (bool, %s) { return %s(id), %s }\n",
			f.path, name, strings.Join(params, ", "), strings.Join(results, ", "), HookEnter, strings.Join(args, ", "))
	}
	call := name + "(" + idMark + ", " + strings.Join(names, ", ") + "); "
	return func(flag bool) string {
		if !flag {
			return "_, " + strings.Join(names, ", ") + " = " + call
		}
		return "var " + exitFlag + " bool; " + exitFlag + ", " + strings.Join(names, ", ") + " = " + call
	}
}

// genericRecv reports whether a receiver type has type parameters.
func genericRecv(t ast.Expr) bool {
	t = ast.Unparen(t)
	if s, ok := t.(*ast.StarExpr); ok {
		t = ast.Unparen(s.X)
	}
	switch t.(type) {
	case *ast.IndexExpr, *ast.IndexListExpr:
		return true
	}
	return false
}

// Scopes.
//
// In Go a function's parameters, receiver and named results are declared in
// the same block as the top level of its body. A short variable declaration
// at the top level of a body may therefore reuse one of them
//
//	n, err := r.Read(buf) // err is the named result, n is new
//
// whereas the same statement inside a block declares a new err. The two
// rewrites that move a body into a block (a hook-free copy, and the block
// around a body with one exit site) would change what such a name means.
// So in a moved body each such name is replaced, in that statement only,
// by a variable of the same type declared just before it, and assigned back
// just after:
//
//	__matrix_v0 := err; n, __matrix_v0 := r.Read(buf); err = __matrix_v0
//
// The statement's own declaration then reuses __matrix_v0, declared in the
// same block, exactly as it reused err: the same variables are new, the
// values are converted to the same types (untyped constants included), and
// nothing runs between the assignment and the copy back. This is the only
// construct whose meaning depends on the block the body is in: a body
// cannot declare a parameter's name again at its top level any other way,
// labels are function-wide (the copy renames its own), a bare return sees
// the results unless a block declares them again (which moving the body
// does not change), and every other name is resolved the same from any
// block of the body.

// redeclPrefix names the variables that stand for a reused parameter or
// result in a moved body.
const redeclPrefix = "__matrix_v"

// funcScopeNames returns the names a function declares in its outermost
// block: its receiver's, parameters' and results' names other than _.
func funcScopeNames(recv *ast.FieldList, ft *ast.FuncType) map[string]bool {
	names := map[string]bool{}
	for _, fl := range []*ast.FieldList{recv, ft.Params, ft.Results} {
		if fl == nil {
			continue
		}
		for _, fld := range fl.List {
			for _, n := range fld.Names {
				if n.Name != "_" {
					names[n.Name] = true
				}
			}
		}
	}
	return names
}

// redeclEdits returns the edits that keep, in a body moved into a block, the
// meaning of every top-level short variable declaration that reuses one of
// the function's parameters, receiver or results (see "Scopes" above). A
// labelled statement is at the top level too.
func (p *Plan) redeclEdits(f *srcFile, fn int, recv *ast.FieldList, ft *ast.FuncType, body *ast.BlockStmt) []edit {
	names := funcScopeNames(recv, ft)
	if len(names) == 0 {
		return nil
	}
	var edits []edit
	n := 0
	for _, s := range body.List {
		for {
			l, ok := s.(*ast.LabeledStmt)
			if !ok {
				break
			}
			s = l.Stmt
		}
		as, ok := s.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE {
			continue
		}
		var before, after []string
		var ids []edit
		for _, x := range as.Lhs {
			id, ok := x.(*ast.Ident)
			if !ok || !names[id.Name] {
				continue
			}
			v := redeclPrefix + strconv.Itoa(n)
			n++
			before = append(before, v+" := "+id.Name+"; ")
			after = append(after, id.Name+" = "+v)
			off, end := p.offset(id.Pos()), p.offset(id.End())
			ids = append(ids, edit{offset: off, end: end, fn: fn, text: v + p.directive(f, end)})
		}
		if before == nil {
			continue
		}
		// In order: the insertion before the statement precedes the
		// replacement of its first name, at the same offset.
		start, end := p.offset(as.Pos()), p.offset(as.End())
		edits = append(edits, edit{offset: start, end: start, fn: fn, text: strings.Join(before, "") + p.directive(f, start)})
		edits = append(edits, ids...)
		edits = append(edits, edit{offset: end, end: end, fn: fn, text: "; " + strings.Join(after, "; ") + p.directive(f, end)})
	}
	return edits
}

// The path that does not record.
//
// Outside a hook-free copy, an exit site is
//
//	if __matrix_on.v == 0 { return }; __matrix_o(id); return
//
// rather than `if __matrix_on.v != 0 { __matrix_o(id) }; return`. The
// compiler ranks a block that calls as more likely than one that returns,
// but with the two paths joining before the return its layout puts the
// hook's call in line all the same, and the path that does not record
// jumps over it. With a return on each path, the return that does not
// record follows the branch, which is not taken. The instructions are the
// same; the return is duplicated (the epilogue, a few bytes a site).

// Conditions that guard a return.
//
// A return in the body of `if a && f() { ... return }` is laid out by the
// compiler's short-circuit pass, which jumps from a false `a` straight past
// the body instead of through a boolean it then tests again. The pass gives
// up when the call in the condition leaves a memory state to merge and the
// body, which now holds an exit site, is more than one block: a hooked
// yaml.v3 scanner paid three instructions (a move, a jump and a test) for
// each `if parser.unread < 1 && !yaml_parser_update_buffer(parser, 1)
// { return false }` of its loops, where a plain build pays none. So, outside
// a hook-free copy, an if statement without else whose condition is a chain
// of && and whose body returns at its top level becomes nested ifs, which
// the compiler lays out as it did the plain one:
//
//	if a { if f() { ...; return } }
//
// The operands are evaluated in the same order, and only while the ones
// before are true, as && does; an init statement stays with the outer if,
// whose scope holds the inner ones.

// splitEdits returns the edits that turn the && conditions of the if
// statements in body (a statement or a block) that guard a return into
// nested ifs (see above).
func (p *Plan) splitEdits(f *srcFile, fn int, body ast.Node) []edit {
	var edits []edit
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.IfStmt:
			c, ok := n.Cond.(*ast.BinaryExpr)
			if !ok || c.Op != token.LAND || n.Else != nil || !returnsAtTop(n.Body) {
				return true
			}
			ops := 0
			for ; ok && c.Op == token.LAND; c, ok = c.X.(*ast.BinaryExpr) {
				at := p.offset(c.OpPos)
				edits = append(edits, edit{offset: at, end: at + len("&&"), fn: fn, text: "{ if" + p.directive(f, at+len("&&"))})
				ops++
			}
			rb := p.offset(n.Body.Rbrace) + 1
			edits = append(edits, edit{offset: rb, end: rb, fn: fn, text: strings.Repeat(" }", ops) + p.directive(f, rb)})
		}
		return true
	})
	return edits
}

// returnsAtTop reports whether a statement of block is a return.
func returnsAtTop(block *ast.BlockStmt) bool {
	for _, s := range block.List {
		if _, ok := s.(*ast.ReturnStmt); ok {
			return true
		}
	}
	return false
}
