package rewrite

import (
	"go/ast"
	"go/token"
	"go/types"

	"github.com/matrixgo/matrix/inlinecost"
)

// typedInfo is what type checking adds to packageInfo: the object every
// call resolves to, so that the inlining estimate follows the call the
// compiler will make instead of guessing by name, and the compiler's own
// recorded decisions about the functions of other packages.
type typedInfo struct {
	pkg    *types.Package
	info   *types.Info
	decls  map[*types.Func]*ast.FuncDecl
	inline func(*types.Func) (inlinecost.Cost, error)
	errs   int // type errors: the calls they touch fall back to syntax
}

// typeCheck type-checks the package with conf and records the result in
// pi. Errors are counted, not returned: what could not be resolved is
// estimated without types, as when no configuration is given.
func (pi *packageInfo) typeCheck(fset *token.FileSet, files []*ast.File, path string, conf types.Config, inline func(*types.Func) (inlinecost.Cost, error)) {
	ti := &typedInfo{
		info: &types.Info{
			Uses:       map[*ast.Ident]types.Object{},
			Defs:       map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
		},
		decls:  map[*types.Func]*ast.FuncDecl{},
		inline: inline,
	}
	conf.Error = func(error) { ti.errs++ }
	ti.pkg, _ = conf.Check(path, fset, files, ti.info)
	if ti.pkg == nil {
		return
	}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if fn, ok := ti.info.Defs[fd.Name].(*types.Func); ok {
					ti.decls[fn] = fd
				}
			}
		}
	}
	pi.typed = ti
}

// callee returns the object a call's function expression denotes: a
// *types.Func for a static call, a *types.TypeName for a conversion, a
// *types.Builtin, or a *types.Var for a call of a function value. dynamic
// reports a call through an interface method. A nil object means the
// expression could not be resolved.
func (ti *typedInfo) callee(fun ast.Expr) (obj types.Object, dynamic bool) {
	for {
		switch f := fun.(type) {
		case *ast.ParenExpr:
			fun = f.X
			continue
		case *ast.IndexExpr: // an explicit instantiation F[T]
			fun = f.X
			continue
		case *ast.IndexListExpr:
			fun = f.X
			continue
		case *ast.Ident:
			return ti.info.Uses[f], false
		case *ast.SelectorExpr:
			sel, ok := ti.info.Selections[f]
			if !ok {
				return ti.info.Uses[f.Sel], false // a qualified identifier
			}
			// An interface's method, however it is reached: x.M on an
			// interface, a method promoted from an embedded interface
			// (whose receiver is a struct), or a method expression I.M.
			// (error's Error belongs to no package.)
			if fn, ok := sel.Obj().(*types.Func); ok {
				if recv := fn.Type().(*types.Signature).Recv(); recv != nil && types.IsInterface(recv.Type()) {
					return fn, true
				}
			}
			return sel.Obj(), false
		}
		return nil, false
	}
}

// calleeFunc returns the function a call calls statically (its generic
// origin for an instantiation).
func (ti *typedInfo) calleeFunc(c *ast.CallExpr) (*types.Func, bool) {
	obj, dynamic := ti.callee(c.Fun)
	fn, ok := obj.(*types.Func)
	if !ok || dynamic {
		return nil, false
	}
	return fn.Origin(), true
}

// classify refines classifyCall with the resolved callee.
func (ti *typedInfo) classify(c *ast.CallExpr) (callKind, bool) {
	switch obj, _ := ti.callee(c.Fun); obj.(type) {
	case *types.TypeName:
		return conversion, true
	case *types.Builtin:
		return builtinCall, true
	case *types.Func, *types.Var:
		return realCall, true
	}
	return realCall, false
}

// callCost prices a call from its resolved callee, as the compiler's
// inliner does: a call it will inline costs the callee's body, any other
// call extraCallCost. ok is false if the callee is unknown.
func (e *estimator) typedCallCost(c *ast.CallExpr) (cost int, inlined, ok bool) {
	ti := e.pi.typed
	if obj, _ := ti.callee(c.Fun); obj == nil {
		return 0, false, false
	}
	fn, ok := ti.calleeFunc(c)
	if !ok {
		// A function value or an interface method.
		return 2 + extraCallCost, false, true
	}
	if fn.Pkg() == ti.pkg {
		if fd := ti.decls[fn]; fd != nil {
			if cc := e.cost(fd, DefaultInlineBudget); cc <= DefaultInlineBudget {
				return 1 + cc, true, true
			}
		}
		return 2 + extraCallCost, false, true
	}
	if cheapCall(fn) {
		return 1, true, true
	}
	if cost, ok := genericCost(fn); ok {
		return 1 + cost, true, true
	}
	if ti.inline != nil {
		if d, err := ti.inline(fn); err == nil && d.Known && d.Inlinable && d.Cost <= DefaultInlineBudget {
			return 1 + d.Cost, true, true
		}
	}
	return 2 + extraCallCost, false, true
}

// intrinsics are the functions of other packages whose calls the compiler
// replaces with instructions (cmd/compile/internal/ssagen's intrinsics
// on 64-bit targets), and the calls its inliner prices as one node.
var intrinsics = map[string]map[string]bool{
	"math":    {"Sqrt": true, "Floor": true, "Ceil": true, "Trunc": true, "RoundToEven": true, "Abs": true, "Copysign": true, "FMA": true},
	"runtime": {"KeepAlive": true},
	"encoding/binary": {
		"littleEndian.Uint64": true, "littleEndian.Uint32": true, "littleEndian.Uint16": true,
		"bigEndian.Uint64": true, "bigEndian.Uint32": true, "bigEndian.Uint16": true,
		"littleEndian.PutUint64": true, "littleEndian.PutUint32": true, "littleEndian.PutUint16": true,
		"bigEndian.PutUint64": true, "bigEndian.PutUint32": true, "bigEndian.PutUint16": true,
		"littleEndian.AppendUint64": true, "littleEndian.AppendUint32": true, "littleEndian.AppendUint16": true,
		"bigEndian.AppendUint64": true, "bigEndian.AppendUint32": true, "bigEndian.AppendUint16": true,
	},
}

// cheapCall reports whether the compiler prices a call to fn as a single
// node: an intrinsic, or a method it marks cheap.
func cheapCall(fn *types.Func) bool {
	path := fn.Pkg().Path()
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil && (path == "sync/atomic" || path == "math/bits") {
		return true
	}
	return intrinsics[path][qualifiedName(fn)]
}

// genericCosts are the inlining costs of generic functions of the standard
// library that are common in hot code. A generic function is compiled per
// instantiation, so its export data records no decision; these are the
// costs the compiler gives instantiations (go1.26, -gcflags=-m=2).
var genericCosts = map[string]map[string]int{
	"sync/atomic": {"Pointer.Load": 9, "Pointer.Store": 66, "Pointer.Swap": 68, "Pointer.CompareAndSwap": 70},
	"slices": {
		"Clip": 11, "Clone": 17, "Compare": 64, "Contains": 33, "ContainsFunc": 50, "Equal": 32,
		"Grow": 39, "Index": 22, "IndexFunc": 39, "Max": 43, "Min": 43,
	},
	"cmp": {"Compare": 63, "Less": 36},
}

// genericCost returns the inlining cost of a call to an instantiation of
// a generic function of another package, if known.
func genericCost(fn *types.Func) (int, bool) {
	c, ok := genericCosts[fn.Pkg().Path()][qualifiedName(fn)]
	return c, ok
}

// qualifiedName returns F for a function and T.M for a method, whatever
// its receiver.
func qualifiedName(fn *types.Func) string {
	recv := fn.Type().(*types.Signature).Recv()
	if recv == nil {
		return fn.Name()
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if named, ok := types.Unalias(t).(*types.Named); ok {
		return named.Obj().Name() + "." + fn.Name()
	}
	return fn.Name()
}

// mayBeFunc reports whether expression x may have a function type (or a
// type parameter's, which could be one): true whenever its type is not
// known from the identifiers, selections and calls it is made of.
func (ti *typedInfo) mayBeFunc(x ast.Expr) bool {
	t := ti.typeOf(x)
	if t == nil {
		return true
	}
	switch t.Underlying().(type) {
	case *types.Signature, *types.Interface:
		return true
	}
	_, param := t.(*types.TypeParam)
	return param
}

// typeOf returns the type of x where the recorded uses, definitions and
// selections tell it, or nil; nil for every expression of a package with
// type errors.
func (ti *typedInfo) typeOf(x ast.Expr) types.Type {
	if ti.errs > 0 {
		return nil
	}
	return ti.exprType(x)
}

// exprType returns the type of x where the recorded uses, definitions and
// selections tell it, or nil, whether the package has type errors or not.
func (ti *typedInfo) exprType(x ast.Expr) types.Type {
	switch x := ast.Unparen(x).(type) {
	case *ast.Ident:
		if o := ti.info.Uses[x]; o != nil {
			return objType(o)
		}
		if o := ti.info.Defs[x]; o != nil {
			return objType(o)
		}
	case *ast.SelectorExpr:
		if s, ok := ti.info.Selections[x]; ok {
			return s.Type()
		}
		if o := ti.info.Uses[x.Sel]; o != nil {
			return objType(o)
		}
	case *ast.CallExpr:
		if f, ok := ast.Unparen(x.Fun).(*ast.Ident); ok {
			if tn, ok := ti.info.Uses[f].(*types.TypeName); ok {
				return tn.Type() // a conversion
			}
		}
		if sig, ok := typeUnder(ti.exprType(x.Fun)).(*types.Signature); ok && sig.Results().Len() == 1 {
			return sig.Results().At(0).Type()
		}
	}
	return nil
}

// objType is the type of a variable, constant or function; nil for other
// objects (a type name, a package).
func objType(o types.Object) types.Type {
	switch o.(type) {
	case *types.Var, *types.Const, *types.Func:
		return o.Type()
	}
	return nil
}

func typeUnder(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	return t.Underlying()
}

// rangesOverFunc reports whether the range statement rs ranges over a
// function (an iterator), whose loop body the compiler turns into a
// function literal: a function literal, or an expression whose type the
// recorded uses, selections and calls tell is a function type, or a type
// parameter constrained to function types. Without types, only a function
// literal is known to be one.
func (pi *packageInfo) rangesOverFunc(rs *ast.RangeStmt) bool {
	if _, ok := ast.Unparen(rs.X).(*ast.FuncLit); ok {
		return true
	}
	if pi.typed == nil {
		return false
	}
	return isFuncType(pi.typed.exprType(rs.X))
}

// isFuncType reports whether t is a function type, or a type parameter
// whose constraint only allows function types.
func isFuncType(t types.Type) bool {
	if t == nil {
		return false
	}
	tp, ok := t.(*types.TypeParam)
	if !ok {
		_, ok := t.Underlying().(*types.Signature)
		return ok
	}
	iface, ok := tp.Constraint().Underlying().(*types.Interface)
	if !ok {
		return false
	}
	for i := range iface.NumEmbeddeds() {
		e := iface.EmbeddedType(i)
		u, ok := e.(*types.Union)
		if !ok {
			if _, ok := e.Underlying().(*types.Signature); ok {
				return true
			}
			continue
		}
		funcs := u.Len() > 0
		for j := range u.Len() {
			if _, ok := u.Term(j).Type().Underlying().(*types.Signature); !ok {
				funcs = false
			}
		}
		if funcs {
			return true
		}
	}
	return false
}
