package rewrite

import (
	"go/ast"
	"go/token"
	"go/types"
)

// A bounded function runs in time bounded by its code alone: its body has
// no loop, no goto, no go or defer statement, no select, no channel send,
// receive or close, and calls nothing but builtins that cannot block,
// intrinsics of other packages (see cheapCall and boundedStd), and
// functions of its own package that are bounded by the same rule, with no
// recursion. It cannot wait, and it cannot be slow: a hook on it would add
// cost and no information, and its time shows in its caller's frame.
//
// The proof is on the syntax tree with the package's types: a call whose
// callee is not known statically (a function value, an interface method,
// a method of a type parameter) or that lies in another package, except
// the few listed, is taken as unbounded. Without types every call is.
type boundProver struct {
	pi    *packageInfo
	memo  map[ast.Node]bool
	inUse map[ast.Node]bool
}

func newBoundProver(pi *packageInfo) *boundProver {
	return &boundProver{pi: pi, memo: map[ast.Node]bool{}, inUse: map[ast.Node]bool{}}
}

// bounded reports whether a function declaration or literal is bounded.
func (b *boundProver) bounded(fn ast.Node) bool {
	var body *ast.BlockStmt
	switch fn := fn.(type) {
	case *ast.FuncDecl:
		body = fn.Body
	case *ast.FuncLit:
		body = fn.Body
	}
	if body == nil {
		return false // assembly, or a linknamed declaration: unknown
	}
	if ok, done := b.memo[fn]; done {
		return ok
	}
	if b.inUse[fn] {
		return false // recursion
	}
	b.inUse[fn] = true
	ok := b.body(body)
	delete(b.inUse, fn)
	b.memo[fn] = ok
	return ok
}

// body reports whether a function body is bounded, not counting the bodies
// of the function literals it creates (creating one is bounded; calling
// one is a call).
func (b *boundProver) body(body *ast.BlockStmt) bool { return b.node(body) }

// node reports whether a statement or block is bounded by the rule above.
func (b *boundProver) node(node ast.Node) bool {
	ok := true
	ast.Inspect(node, func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ForStmt, *ast.RangeStmt, *ast.GoStmt, *ast.DeferStmt, *ast.SelectStmt, *ast.SendStmt:
			ok = false
		case *ast.BranchStmt:
			ok = n.Tok != token.GOTO // a backward goto is a loop
		case *ast.UnaryExpr:
			ok = n.Op != token.ARROW
		case *ast.CallExpr:
			ok = b.call(n)
		}
		return ok
	})
	return ok
}

// unboundedBuiltins are the builtins that operate on channels or write to
// the process's standard error.
var unboundedBuiltins = map[string]bool{"close": true, "print": true, "println": true}

// call reports whether a call is bounded (its arguments are visited by the
// caller).
func (b *boundProver) call(c *ast.CallExpr) bool {
	switch classifyCall(c, b.pi) {
	case conversion:
		return true
	case builtinCall:
		if id, ok := ast.Unparen(c.Fun).(*ast.Ident); ok {
			return !unboundedBuiltins[id.Name]
		}
		return true // unsafe's
	}
	if lit, ok := ast.Unparen(c.Fun).(*ast.FuncLit); ok {
		return b.bounded(lit) // func() { … }()
	}
	ti := b.pi.typed
	if ti == nil {
		return false
	}
	fn, ok := ti.calleeFunc(c)
	if !ok {
		return false // a function value or an interface method
	}
	if fn.Pkg() == ti.pkg {
		fd := ti.decls[fn]
		return fd != nil && b.bounded(fd)
	}
	return cheapCall(fn) || boundedStd(fn)
}

// boundedStdFuncs are functions of the standard library, other than the
// intrinsics, whose bodies are bounded by the rule above (go1.24 to 1.27:
// no loop, no call but to each other and to intrinsics). They are the ones
// byte-level code calls between its own small functions.
var boundedStdFuncs = map[string]map[string]bool{
	"math": {
		"Float64bits": true, "Float64frombits": true, "Float32frombits": true,
		"IsNaN": true, "IsInf": true, "Inf": true, "NaN": true, "Signbit": true,
	},
	"unicode/utf8": {
		"RuneLen": true, "ValidRune": true, "RuneStart": true, "EncodeRune": true,
		"AppendRune": true, "DecodeRuneInString": true, "FullRune": true, "FullRuneInString": true,
	},
	"unicode/utf16": {"IsSurrogate": true, "DecodeRune": true, "EncodeRune": true, "RuneLen": true},
	// Tests of a prefix or a suffix: a length test and a comparison, the
	// operator the compiler expands into memequal. The strings functions
	// call those of internal/stringslite.
	"bytes":                {"Equal": true, "HasPrefix": true, "HasSuffix": true},
	"strings":              {"HasPrefix": true, "HasSuffix": true},
	"internal/stringslite": {"HasPrefix": true, "HasSuffix": true},
}

// boundedStd reports whether fn is a standard library function whose body
// is known to be bounded: one of boundedStdFuncs, or a method of one of
// sync/atomic's types other than Value (the compiler's intrinsics, as
// cheapCall's functions of the package are).
func boundedStd(fn *types.Func) bool {
	path := fn.Pkg().Path()
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil {
		if path != "sync/atomic" {
			return false
		}
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		named, ok := t.(*types.Named)
		return ok && named.Obj().Name() != "Value"
	}
	return boundedStdFuncs[path][fn.Name()]
}

// A bounded prefix.
//
// A function that is not bounded often starts with guards that are: in
//
//	func unrollIndent(p *parser, column int) bool {
//		if p.flowLevel > 0 {
//			return true
//		}
//		for p.indent > column { … }
//		…
//	}
//
// most calls return at the first statement, and would pay the entry and the
// exit check on the way. The entry hook goes after the function's leading
// statements that are bounded, up to the last of them that holds a return:
// a call that leaves there is not recorded, as a call to a bounded function
// is not, and its time shows in its caller's frame. The statements before
// the hook are the plain code, and their returns have no exit hooks. A
// prefix statement declares nothing in the function's scope (the hook's
// position would not change a scope, but keeping them out keeps the body
// that follows as it was), has no label (a goto after the hook could jump
// back over it) and does not call recover.

// prefix returns the number of leading statements of body that run before
// the entry hook: bounded, declaring and labelling nothing, not calling
// recover, up to the last one that holds a return statement. Zero if none.
func (b *boundProver) prefix(body *ast.BlockStmt) int {
	n := 0
	for i, s := range body.List {
		if !b.prefixStmt(s) {
			break
		}
		if holdsReturn(s) {
			n = i + 1
		}
	}
	return n
}

// prefixStmt reports whether statement s may run before the entry hook.
func (b *boundProver) prefixStmt(s ast.Stmt) bool {
	switch s := s.(type) {
	case *ast.DeclStmt, *ast.LabeledStmt:
		return false
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			return false
		}
	}
	if callsRecover(s) {
		return false
	}
	return b.node(s)
}

// holdsReturn reports whether a return statement of the enclosing function
// is in n.
func holdsReturn(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			found = true
		}
		return !found
	})
	return found
}

// callsRecover reports whether n calls recover, outside the function
// literals in it.
func callsRecover(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			found = isRecover(n)
		}
		return !found
	})
	return found
}
