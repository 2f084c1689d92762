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
// export data (through the standard library's importer, go/importer) and
// the records from the same bytes.
package inlinecost

import (
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
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

// ReadFile reads the export data of package path from file, an archive
// the compiler wrote (as an importcfg's packagefile lines name them). Its
// go/types objects are created in fset by an importer of their own.
func ReadFile(fset *token.FileSet, file, path string) (*Package, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read export data of %s: %w", path, err)
	}
	std := importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		if p != path {
			return nil, fmt.Errorf("import %q: only %q is at hand", p, path)
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	return read(std, data, path)
}

// read reads package path from data, the contents of its archive: the
// go/types view through std, a go/importer "gc" importer whose lookup
// serves data for path, and the decisions from the same bytes.
func read(std types.Importer, data []byte, path string) (*Package, error) {
	tp, err := stdImport(std, path)
	if err != nil {
		return nil, err
	}
	p := &Package{Types: tp, path: path}
	ed, err := exportData(data)
	if err != nil {
		return nil, fmt.Errorf("read export data of %s: %w", path, err)
	}
	if len(ed) > 0 && ed[0] == 'u' {
		// A format version this decoder does not know (a Go release newer
		// than this package) leaves the decisions unknown: the types were
		// read by the importer of the Go release this binary was built
		// with.
		if pr, err := newPkgDecoder(path, string(ed[1:])); err == nil {
			p.pr = pr
		}
	}
	return p, nil
}

// stdImport imports path with std. The standard library's importer panics
// on a format it does not know: the panic is returned as an error.
func stdImport(std types.Importer, path string) (tp *types.Package, err error) {
	defer func() {
		if r := recover(); r != nil {
			tp, err = nil, fmt.Errorf("import %q: %v", path, r)
		}
	}()
	return std.Import(path)
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
