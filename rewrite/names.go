package rewrite

import (
	"go/ast"
	"strconv"
	"strings"
)

// namer gives functions the names the compiler gives their symbols (without
// the package path), so that ids, stack traces and blacklists agree:
// F, (*T).M, T.M, (*List[...]).Push, F.func1, F.func1.1, init.0, glob..func1.
//
// Closure numbering follows source order within the enclosing function. One
// namer is shared by all files of a package so that init functions and
// package-level closures are numbered across files.
type namer struct {
	inits   int
	globals int
	lits    map[ast.Node]string // name of every function node seen
	counts  map[ast.Node]int    // closures seen so far per enclosing function
}

func newNamer() *namer {
	return &namer{lits: map[ast.Node]string{}, counts: map[ast.Node]int{}}
}

// decl names a function declaration and returns its kind.
func (nm *namer) decl(d *ast.FuncDecl) (name, kind string) {
	switch {
	case d.Recv != nil && len(d.Recv.List) == 1:
		name, kind = receiverName(d.Recv.List[0].Type)+"."+d.Name.Name, KindMethod
	case d.Name.Name == "init":
		name, kind = "init."+strconv.Itoa(nm.inits), KindInit
		nm.inits++
	default:
		name, kind = d.Name.Name, KindFunc
		if d.Type.TypeParams != nil {
			name += "[...]"
		}
	}
	nm.lits[d] = name
	return name, kind
}

// lit names a function literal from its enclosing function on the stack.
func (nm *namer) lit(n *ast.FuncLit, stack []ast.Node) string {
	var outer ast.Node
	for i := len(stack) - 2; i >= 0; i-- {
		switch stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			outer = stack[i]
		}
		if outer != nil {
			break
		}
	}
	var name string
	switch o := outer.(type) {
	case nil:
		nm.globals++
		name = "glob..func" + strconv.Itoa(nm.globals)
	case *ast.FuncLit:
		nm.counts[o]++
		name = nm.lits[o] + "." + strconv.Itoa(nm.counts[o])
	default:
		nm.counts[o]++
		name = nm.lits[o] + ".func" + strconv.Itoa(nm.counts[o])
	}
	nm.lits[n] = name
	return name
}

// receiverName renders a receiver type as the compiler does: (*T), T,
// (*T[...]), T[...].
func receiverName(t ast.Expr) string {
	star := false
	t = unparen(t)
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = true, unparen(s.X)
	}
	var b strings.Builder
	switch x := t.(type) {
	case *ast.Ident:
		b.WriteString(x.Name)
	case *ast.IndexExpr:
		b.WriteString(identName(x.X) + "[...]")
	case *ast.IndexListExpr:
		b.WriteString(identName(x.X) + "[...]")
	default:
		b.WriteString("?")
	}
	if star {
		return "(*" + b.String() + ")"
	}
	return b.String()
}

// unparen strips the parentheses around a receiver type: (T), *(T), (*T).
func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

func identName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}
