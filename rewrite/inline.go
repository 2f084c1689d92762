package rewrite

import (
	"go/ast"
	"go/token"
	"strings"
)

// DefaultInlineBudget is the compiler's inlining budget (cmd/compile's
// inlineMaxBudget). A hook makes any function non-inlinable (a deferred
// call), so instrumenting a function the compiler would inline costs far
// more than the hook itself: such functions are skipped, as Matrix skips
// getters and setters.
const DefaultInlineBudget = 80

// HotInlineBudget is the inlining budget of a function the compiler finds
// hot in a PGO profile (cmd/compile's inlineHotMaxBudget).
const HotInlineBudget = 2000

// SmallLeafFactor/2 is the multiple of the inline budget up to which a leaf
// function is skipped (see estimator.smallLeaf).
const SmallLeafFactor = 5

// Costs from cmd/compile/internal/inline.
const (
	extraCallCost  = 57 // a call to a function that is not inlined
	extraPanicCost = 1
	tooHairy       = 1 << 20
)

// estimator approximates the compiler's inlining cost (its "hairy visitor")
// on the syntax tree: one unit per expression or statement node, the
// callee's own cost for calls to same-package functions that are themselves
// inlinable, extraCallCost for every other call, and "too hairy" for the
// constructs the compiler never inlines (defer, recover, select, go).
// TestInlineEstimateMatchesCompiler measures it against -gcflags=-m=2.
type estimator struct {
	pi    *packageInfo
	memo  map[*ast.FuncDecl]int
	inUse map[*ast.FuncDecl]bool
}

func newEstimator(pi *packageInfo) *estimator {
	return &estimator{pi: pi, memo: map[*ast.FuncDecl]int{}, inUse: map[*ast.FuncDecl]bool{}}
}

// cost returns the estimated inlining cost of a function node, stopping
// early (returning a value over budget) once budget is exceeded.
func (e *estimator) cost(fn ast.Node, budget int) int {
	switch fn := fn.(type) {
	case *ast.FuncDecl:
		if c, ok := e.memo[fn]; ok {
			return c
		}
		if e.inUse[fn] || fn.Body == nil || hasPragma(fn.Doc, "//go:noinline") {
			return tooHairy // recursive or marked: never inlined
		}
		e.inUse[fn] = true
		c := e.body(fn.Body, budget)
		delete(e.inUse, fn)
		e.memo[fn] = c
		return c
	case *ast.FuncLit:
		return e.body(fn.Body, budget)
	}
	return tooHairy
}

// hotCost estimates the inlining cost of a function declaration up to
// HotInlineBudget.
func (e *estimator) hotCost(fn ast.Node) int {
	fd, ok := fn.(*ast.FuncDecl)
	if !ok || fd.Body == nil || hasPragma(fd.Doc, "//go:noinline") {
		return tooHairy
	}
	return e.body(fd.Body, HotInlineBudget)
}

func (e *estimator) body(body *ast.BlockStmt, budget int) int {
	total := 0
	ast.Inspect(body, func(n ast.Node) bool {
		if total > budget {
			return false
		}
		switch n := n.(type) {
		case nil:
			return false
		case *ast.BlockStmt, *ast.ParenExpr, *ast.FieldList, *ast.Field, *ast.Comment, *ast.CommentGroup:
			return true
		case *ast.DeferStmt, *ast.GoStmt, *ast.SelectStmt:
			total = tooHairy
			return false
		case *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType, *ast.StructType:
			return false // types cost nothing
		case *ast.SelectorExpr:
			total++
			ast.Inspect(n.X, func(m ast.Node) bool { return e.visitChild(m, &total, budget) })
			return false
		case *ast.FuncLit:
			total += 1 + e.body(n.Body, budget)
			return false
		case *ast.CallExpr:
			total += e.call(n)
			for _, a := range n.Args {
				ast.Inspect(a, func(m ast.Node) bool { return e.visitChild(m, &total, budget) })
			}
			if _, ok := n.Fun.(*ast.SelectorExpr); ok {
				ast.Inspect(n.Fun.(*ast.SelectorExpr).X, func(m ast.Node) bool { return e.visitChild(m, &total, budget) })
			}
			return false
		case *ast.LabeledStmt, *ast.EmptyStmt:
			return true
		case *ast.KeyValueExpr:
			// A struct literal's field name is not a node of its own
			// (OSTRUCTKEY); a map or array literal's key is.
			total++
			if _, field := n.Key.(*ast.Ident); !field {
				ast.Inspect(n.Key, func(m ast.Node) bool { return e.visitChild(m, &total, budget) })
			}
			ast.Inspect(n.Value, func(m ast.Node) bool { return e.visitChild(m, &total, budget) })
			return false
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE || n.Tok == token.ASSIGN {
				total++
			} else {
				total += 2 // x op= y is x = x op y
			}
			return true
		}
		total++
		return true
	})
	return total
}

// smallLeaf reports whether a function body is a small leaf: no loop, no
// goroutine, defer or select, no call other than builtins, conversions and
// same-package functions the compiler inlines, and an estimated cost of at
// most budget. Such a function runs in a few nanoseconds and can never be
// slow by itself (only by being called often, which shows as its caller's
// time), while a hook pair would cost a large fraction of its run time and
// keep it off the register-only fast path: it is skipped, like Matrix
// skips getters and setters.
func (e *estimator) smallLeaf(body *ast.BlockStmt, budget int) bool {
	leaf := true
	ast.Inspect(body, func(n ast.Node) bool {
		if !leaf {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // a function of its own
		case *ast.ForStmt, *ast.RangeStmt, *ast.GoStmt, *ast.DeferStmt, *ast.SelectStmt:
			leaf = false
		case *ast.BranchStmt:
			leaf = n.Tok != token.GOTO
		case *ast.CallExpr:
			leaf = e.leafCall(n)
		}
		return leaf
	})
	return leaf && e.body(body, budget) <= budget
}

// leafCall reports whether a call keeps its caller a leaf: a conversion, a
// builtin, an intrinsic, or a call the compiler inlines to a function of
// this package. An inlined function of another package may itself call
// anything (fmt.Println is inlined, and writes to a file).
func (e *estimator) leafCall(c *ast.CallExpr) bool {
	if _, inlined := e.callCost(c); !inlined {
		return false
	}
	if ti := e.pi.typed; ti != nil {
		if fn, ok := ti.calleeFunc(c); ok && fn.Pkg() != ti.pkg && !cheapCall(fn) {
			return false
		}
	}
	return true
}

// hasPragma reports whether a doc comment holds a directive line.
func hasPragma(doc *ast.CommentGroup, directive string) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if c.Text == directive || strings.HasPrefix(c.Text, directive+" ") {
			return true
		}
	}
	return false
}

// visitChild is the ast.Inspect callback for subtrees reached from a node
// the main visitor handled itself.
func (e *estimator) visitChild(m ast.Node, total *int, budget int) bool {
	if m == nil || *total > budget {
		return false
	}
	switch m := m.(type) {
	case *ast.CallExpr, *ast.FuncLit, *ast.SelectorExpr:
		*total += e.body(&ast.BlockStmt{List: []ast.Stmt{&ast.ExprStmt{X: m.(ast.Expr)}}}, budget) - 1
		return false
	case *ast.ParenExpr:
		return true
	case *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType, *ast.StructType:
		return false
	}
	*total++
	return true
}

// call returns the cost of the call node itself (not its arguments).
func (e *estimator) call(c *ast.CallExpr) int {
	cost, _ := e.callCost(c)
	return cost
}

// callCost returns the cost of the call node itself and whether the
// compiler inlines the call (or needs no call at all: conversions and most
// builtins).
func (e *estimator) callCost(c *ast.CallExpr) (cost int, inlined bool) {
	kind := classifyCall(c, e.pi)
	if kind == realCall && e.pi.typed != nil {
		if cost, inlined, ok := e.typedCallCost(c); ok {
			return cost, inlined
		}
	}
	switch kind {
	case conversion:
		return 1, true
	case builtinCall:
		if id, ok := c.Fun.(*ast.Ident); ok {
			switch id.Name {
			case "recover":
				return tooHairy, false
			case "panic":
				return 1 + extraPanicCost, true
			}
		}
		return 1, true
	}
	var callees []*ast.FuncDecl
	switch f := c.Fun.(type) {
	case *ast.Ident:
		if fd := e.pi.funcs[f.Name]; fd != nil {
			callees = []*ast.FuncDecl{fd}
		}
	case *ast.SelectorExpr:
		// A method of this package, if every method of that name is
		// inlinable (without types we cannot tell the receivers apart).
		callees = e.pi.methods[f.Sel.Name]
	}
	worst := -1
	for _, fd := range callees {
		cc := e.cost(fd, DefaultInlineBudget)
		if cc > DefaultInlineBudget {
			worst = -1
			break
		}
		worst = max(worst, cc)
	}
	if worst >= 0 {
		return 1 + worst, true
	}
	return 2 + extraCallCost, false
}
