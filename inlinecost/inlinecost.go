// Package inlinecost reads the inlining costs that the Go compiler records
// for a package's functions and methods in its export data.
//
// When cmd/compile finishes a package it writes, beside each function's
// type, an extension record: pragmas, link name, ABI, escape notes and, if
// the function can be inlined, the cost its inliner computed (the "cost 38"
// of -gcflags=-m=2). A compile of a dependent package uses these records
// to decide whether a call is inlined. This package reads the same records
// from the unified export data format (Go 1.20 and later), so that a source
// rewriter can price a call into another package exactly as the compiler
// will.
//
// The record does not say how many escape notes precede the cost: there is
// one per receiver and parameter, which is read from the function's
// go/types signature. Package therefore reads the go/types view of the
// export data (through golang.org/x/tools/go/gcexportdata) and the records
// from the same bytes.
package inlinecost

import (
	"bytes"
	"fmt"
	"go/token"
	"go/types"
	"io"

	"golang.org/x/tools/go/gcexportdata"
)

// Package is the export data of one compiled package.
type Package struct {
	// Types is the package as go/types sees it.
	Types *types.Package

	path  string
	pr    *pkgDecoder // nil if the format is not the unified one
	objs  map[string]int
	funcs map[string]Cost
	meths map[string][]Cost // by receiver type name, in declaration order
}

// Cost is what the compiler decided about inlining one function.
type Cost struct {
	// Known reports whether the export data holds the decision: it does
	// for the package's own non-generic functions and methods.
	Known bool
	// Inlinable reports whether the compiler can inline the function.
	Inlinable bool
	// Cost is the inlining cost, if Inlinable.
	Cost int
}

// Read reads a package's export data from r, which is positioned at the
// export data section of an object or archive file (see
// gcexportdata.NewReader). The go/types objects are created in fset and
// imports, as gcexportdata.Read does.
func Read(r io.Reader, fset *token.FileSet, imports map[string]*types.Package, path string) (*Package, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read export data of %s: %w", path, err)
	}
	tp, err := gcexportdata.Read(bytes.NewReader(data), fset, imports, path)
	if err != nil {
		return nil, fmt.Errorf("read export data of %s: %w", path, err)
	}
	p := &Package{Types: tp, path: path}
	if len(data) > 0 && data[0] == 'u' {
		p.pr, err = newPkgDecoder(path, string(data[1:]))
		if err != nil {
			return nil, fmt.Errorf("read export data of %s: %w", path, err)
		}
	}
	return p, nil
}

// Func returns the compiler's decision about fn, a function or method of
// the package (an instantiation stands for its generic origin, whose
// decision is not recorded).
func (p *Package) Func(fn *types.Func) (Cost, error) {
	if p.pr == nil || fn.Pkg() == nil || fn.Pkg().Path() != p.path || fn.Origin() != fn {
		return Cost{}, nil
	}
	sig := fn.Type().(*types.Signature)
	if sig.TypeParams().Len() > 0 {
		return Cost{}, nil
	}
	if err := p.index(); err != nil {
		return Cost{}, err
	}
	recv := sig.Recv()
	if recv == nil {
		if c, ok := p.funcs[fn.Name()]; ok {
			return c, nil
		}
		idx, ok := p.objs[fn.Name()]
		if !ok {
			return Cost{}, nil
		}
		d := p.pr.newDecoder(sectionObjExt, idx)
		d.sync(syncObject1)
		c := d.funcExt(sig.Params().Len())
		if d.err != nil {
			return Cost{}, fmt.Errorf("export data of %s: function %s: %w", p.path, fn.Name(), d.err)
		}
		p.funcs[fn.Name()] = c
		return c, nil
	}
	t := recv.Type()
	if ptr, ok := t.(*types.Pointer); ok {
		t = ptr.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok || named.TypeParams().Len() > 0 {
		return Cost{}, nil // an interface method, or a generic type's
	}
	if _, ok := named.Underlying().(*types.Interface); ok {
		return Cost{}, nil
	}
	costs, err := p.methods(named)
	if err != nil {
		return Cost{}, err
	}
	for i := range named.NumMethods() {
		if named.Method(i) == fn && i < len(costs) {
			return costs[i], nil
		}
	}
	return Cost{}, nil
}

// index maps the names of the package's own functions and types to their
// object numbers.
func (p *Package) index() error {
	if p.objs != nil {
		return nil
	}
	objs := map[string]int{}
	for idx := range p.pr.numElems(sectionName) {
		path, name, code, err := p.pr.peekObj(idx)
		if err != nil {
			return fmt.Errorf("export data of %s: object %d: %w", p.path, idx, err)
		}
		if path == p.path && (code == objFunc || code == objType) {
			objs[name] = idx
		}
	}
	p.objs, p.funcs, p.meths = objs, map[string]Cost{}, map[string][]Cost{}
	return nil
}

// methods decodes the records of a named type's methods, which follow the
// type's own record in declaration order.
func (p *Package) methods(named *types.Named) ([]Cost, error) {
	name := named.Obj().Name()
	if c, ok := p.meths[name]; ok {
		return c, nil
	}
	idx, ok := p.objs[name]
	if !ok {
		return nil, nil
	}
	d := p.pr.newDecoder(sectionObjExt, idx)
	d.sync(syncObject1)
	d.sync(syncTypeExt)
	d.pragma()
	d.int64() // type descriptor symbol of T
	d.int64() // and of *T
	costs := make([]Cost, 0, named.NumMethods())
	for i := range named.NumMethods() {
		sig := named.Method(i).Type().(*types.Signature)
		costs = append(costs, d.funcExt(1+sig.Params().Len()))
	}
	if d.err != nil {
		return nil, fmt.Errorf("export data of %s: methods of %s: %w", p.path, name, d.err)
	}
	p.meths[name] = costs
	return costs, nil
}

func (d *decoder) pragma() {
	d.sync(syncPragma)
	d.int64()
}

// funcExt reads a function's extension record as cmd/compile's linker
// writes it (relocFuncExt): pragmas, link name, [wasm import and export
// names,] true, ABI, one escape note per receiver and parameter, and
// whether an inline body follows with its cost, whether it can delay its
// results [and, with GOEXPERIMENT=newinliner, its properties].
func (d *decoder) funcExt(params int) Cost {
	d.sync(syncFuncExt)
	d.pragma()
	d.sync(syncLinkname)
	if d.int64() == -1 {
		d.string()
	}
	for d.peekSync() == syncString {
		d.string() // wasm import module and name, export name
	}
	if !d.bool() {
		// The noder's stub: the object was not compiled here.
		d.fail("function record without compiled data")
		return Cost{}
	}
	d.uint64() // ABI
	for range params {
		d.string()
	}
	c := Cost{Known: true}
	if d.bool() {
		c.Inlinable = true
		c.Cost = d.len()
		d.bool() // can delay results
		if d.peekSync() == syncString {
			d.string() // inliner properties
		}
	}
	d.sync(syncEOF)
	if d.err != nil {
		return Cost{}
	}
	return c
}
