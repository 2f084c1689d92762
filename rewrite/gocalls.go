package rewrite

import (
	"go/ast"
	"go/types"
	"strings"
)

// GoCall is a go statement whose call the compiler wraps in a function of
// its own (F.gowrap1): Func names the function the wrapped call calls, so
// that a report can name the goroutine after it rather than the wrapper.
type GoCall struct {
	// Pos is the go statement's file:line, honouring //line directives,
	// as Func.Pos: the position the binary gives the wrapper.
	Pos string
	// Func is the called function, qualified with its package's import
	// path: example.com/app.(*T).M, example.com/app.F.func1.
	Func string
}

// goCalls returns the go statements of the files whose called function is
// known, in source order. A go statement the compiler does not wrap (a
// call without arguments or results of a function value or function) has
// no wrapper to rename and is left out, and so are the go statements of a
// line that has several calling different functions.
func (p *Plan) goCalls(nm *namer, pi *packageInfo) []GoCall {
	var out []GoCall
	at := map[string]int{} // position -> index in out, or -1 when ambiguous
	for _, f := range p.files {
		if f.ast == nil || f.cgo {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			g, ok := n.(*ast.GoStmt)
			if !ok || g.Call == nil {
				return true
			}
			name := p.goCallee(nm, pi, g.Call)
			if name == "" {
				return true
			}
			pos := p.position(g.Go)
			switch i, seen := at[pos]; {
			case !seen:
				at[pos] = len(out)
				out = append(out, GoCall{Pos: pos, Func: name})
			case i >= 0 && out[i].Func != name:
				out[i].Func = ""
				at[pos] = -1
			}
			return true
		})
	}
	kept := out[:0]
	for _, c := range out {
		if c.Func != "" {
			kept = append(kept, c)
		}
	}
	return kept
}

// goCallee names the function a go statement's call calls, qualified with
// its package's path, or returns "" when that is not known (a function
// value, a conversion or builtin, a package that did not type-check) or the
// compiler does not wrap the call.
func (p *Plan) goCallee(nm *namer, pi *packageInfo, call *ast.CallExpr) string {
	fun := ast.Unparen(call.Fun)
	if lit, ok := fun.(*ast.FuncLit); ok {
		if len(call.Args) == 0 && (lit.Type.Results == nil || len(lit.Type.Results.List) == 0) {
			return "" // run as it is: the goroutine's function is the literal
		}
		if name, ok := nm.lits[lit]; ok {
			return p.opts.PkgPath + "." + name
		}
		return ""
	}
	ti := pi.typed
	if ti == nil {
		return ""
	}
	obj, _ := ti.callee(fun)
	fn, ok := obj.(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	fn = fn.Origin()
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil && sig.Params().Len() == 0 && sig.Results().Len() == 0 && len(call.Args) == 0 {
		return "" // not wrapped: the goroutine runs fn itself
	}
	if fn.Pkg() == ti.pkg {
		if d, ok := ti.decls[fn]; ok {
			if name, ok := nm.lits[d]; ok {
				return p.opts.PkgPath + "." + name
			}
		}
	}
	name := funcName(fn)
	if name == "" {
		return ""
	}
	return fn.Pkg().Path() + "." + name
}

// funcName names a function as the compiler's symbols do, without its
// package: F, F[...], (*T).M, T.M, (*T[...]).M; "" for a method of an
// unnamed type.
func funcName(fn *types.Func) string {
	sig := fn.Type().(*types.Signature)
	recv := sig.Recv()
	if recv == nil {
		if sig.TypeParams().Len() > 0 {
			return fn.Name() + "[...]"
		}
		return fn.Name()
	}
	t := recv.Type()
	ptr := false
	if pt, ok := t.(*types.Pointer); ok {
		t, ptr = pt.Elem(), true
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(named.Obj().Name())
	if named.TypeParams().Len() > 0 {
		b.WriteString("[...]")
	}
	if ptr {
		return "(*" + b.String() + ")." + fn.Name()
	}
	return b.String() + "." + fn.Name()
}
