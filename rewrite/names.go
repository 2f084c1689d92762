package rewrite

import (
	"go/ast"
	"strconv"
	"strings"
)

// namer gives functions the names the compiler gives their symbols (without
// the package path), so that ids, stack traces and blacklists agree:
// F, (*T).M, T.M, (*List[...]).Push, (*Set).Map[...] (a method with type
// parameters, Go 1.27 on), F.func1, F.func1.1, init.0, glob..func1.
//
// A function literal is numbered within the function that encloses it, in
// source order, except around a range over a function, whose loop body the
// compiler turns into a function literal of its own, named after the
// enclosing function: F-range1, F-range2, F-range1-range1 for a loop in the
// body of F-range1. From Go 1.27 on, the function literals in such a body
// are named after it (F-range1.1, F-range1.2) and numbered apart from the
// enclosing function's. Before, the body is transparent, its literals are
// the enclosing function's (F.func2), and they are numbered before those
// of the range expression (the x in range x). See scan.
//
// One namer is shared by all files of a package so that init functions and
// package-level closures are numbered across files.
type namer struct {
	inits   int
	globals int
	lits    map[ast.Node]string // name of every function node seen
	// rangeBodies: function literals in the body of a range over a
	// function are named after it (Go 1.27 on).
	rangeBodies bool
	// parent maps the function literals, and with rangeBodies the ranges
	// over a function, of the files scanned to what names them: the
	// innermost enclosing function declaration, function literal or (with
	// rangeBodies) range over a function (nil at package level); nums
	// numbers them there.
	parent map[ast.Node]ast.Node
	nums   map[ast.Node]int
}

// newNamer returns a namer for the compiler of Go 1.release.
func newNamer(release int) *namer {
	return &namer{
		lits:        map[ast.Node]string{},
		rangeBodies: release >= rangeBodyNamesRelease,
		parent:      map[ast.Node]ast.Node{},
		nums:        map[ast.Node]int{},
	}
}

// decl names a function declaration and returns its kind.
func (nm *namer) decl(d *ast.FuncDecl) (name, kind string) {
	switch {
	case d.Recv != nil && len(d.Recv.List) == 1:
		name, kind = receiverName(d.Recv.List[0].Type)+"."+d.Name.Name, KindMethod
		if d.Type.TypeParams != nil {
			// A method with type parameters of its own (Go 1.27 on):
			// its symbol is (*T).M[...], as a generic function's is F[...].
			name += "[...]"
		}
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

// lit names a function literal of a file scanned, once the function
// declaration and literals around it are named (source order).
func (nm *namer) lit(n *ast.FuncLit) string {
	var name string
	switch o := nm.parent[n].(type) {
	case nil:
		nm.globals++
		name = "glob..func" + strconv.Itoa(nm.globals)
	case *ast.FuncDecl:
		name = nm.lits[o] + ".func" + strconv.Itoa(nm.nums[n])
	default: // a function literal, or the body of a range over a function
		name = nm.name(o) + "." + strconv.Itoa(nm.nums[n])
	}
	nm.lits[n] = name
	return name
}

// name returns the name of a function node already named, or of the body
// of a range over a function: the name of what encloses it, "-range" and
// its number there.
func (nm *namer) name(n ast.Node) string {
	if name, ok := nm.lits[n]; ok {
		return name
	}
	rs, ok := n.(*ast.RangeStmt)
	if !ok {
		return "?"
	}
	name := nm.name(nm.parent[rs]) + "-range" + strconv.Itoa(nm.nums[rs])
	nm.lits[rs] = name
	return name
}

// scan records what names each function literal of f, and with
// rangeBodies each range over a function (isFuncRange tells them), and
// numbers them there in the order the compiler does (see namer). A loop's
// range expression, key and value are outside its body.
func (nm *namer) scan(f *ast.File, isFuncRange func(*ast.RangeStmt) bool) {
	lits := map[ast.Node]int{}   // function literals numbered, per parent
	ranges := map[ast.Node]int{} // ranges over a function numbered, per parent
	var walk func(root ast.Node, parent ast.Node)
	walk = func(root ast.Node, parent ast.Node) {
		ast.Inspect(root, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body != nil {
					walk(n.Body, n)
				}
				return false
			case *ast.FuncLit:
				nm.parent[n] = parent
				if parent != nil {
					lits[parent]++
					nm.nums[n] = lits[parent]
				}
				walk(n.Body, n)
				return false
			case *ast.RangeStmt:
				if !isFuncRange(n) {
					return true
				}
				outside := func() {
					for _, e := range []ast.Expr{n.Key, n.Value, n.X} {
						if e != nil {
							walk(e, parent)
						}
					}
				}
				if nm.rangeBodies {
					nm.parent[n] = parent
					ranges[parent]++
					nm.nums[n] = ranges[parent]
					outside()
					walk(n.Body, n)
				} else {
					walk(n.Body, parent)
					outside()
				}
				return false
			}
			return true
		})
	}
	walk(f, nil)
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
