package inject

import (
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"runtime"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

// check type-checks a rendered file as package pkgName, with the target's
// sizes.
func check(t *testing.T, name string, src []byte) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", name, err, src)
	}
	conf := types.Config{Importer: importer.Default(), Sizes: types.SizesFor("gc", runtime.GOARCH)}
	pkg, err := conf.Check(f.Name.Name, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatalf("%s does not type-check: %v\n%s", name, err, src)
	}
	return pkg
}

// structOf returns the struct type of the package-level variable name.
func structOf(t *testing.T, pkg *types.Package, name string) *types.Struct {
	t.Helper()
	v := pkg.Scope().Lookup(name)
	if v == nil {
		t.Fatalf("%s declares no %s", pkg.Name(), name)
	}
	s, ok := v.Type().Underlying().(*types.Struct)
	if !ok {
		t.Fatalf("%s.%s has type %s, not a struct", pkg.Name(), name, v.Type())
	}
	return s
}

// TestAddedFilesLayout: the structures the files added to packages declare
// have the layout of the abi package: the recording flag's padding, and the
// name table the runtime links into its list.
func TestAddedFilesLayout(t *testing.T) {
	sizes := types.SizesFor("gc", runtime.GOARCH)
	hooks := check(t, HooksFileName, Hooks("p", "example.com/p\n1 F p.go:3\n", false))
	std := check(t, StdFileName, Std("http"))
	for _, pkg := range []*types.Package{hooks, std} {
		flag := structOf(t, pkg, "__matrix_on")
		fields := make([]*types.Var, flag.NumFields())
		for i := range fields {
			fields[i] = flag.Field(i)
		}
		offs := sizes.Offsetsof(fields)
		if len(fields) != 3 || fields[1].Name() != "v" || offs[1] != abi.FlagPadBefore {
			t.Errorf("%s: the flag's v is not the second field at offset %d: %s", pkg.Name(), abi.FlagPadBefore, flag)
		}
		if got, want := sizes.Sizeof(flag), int64(abi.FlagPadBefore+4+abi.FlagPadAfter); got != want {
			t.Errorf("%s: the flag has size %d, want %d", pkg.Name(), got, want)
		}
	}
	table := structOf(t, hooks, "__matrix_names")
	if table.NumFields() != 2 {
		t.Fatalf("the name table has %d fields, abi.NameTable 2", table.NumFields())
	}
	offs := sizes.Offsetsof([]*types.Var{table.Field(0), table.Field(1)})
	if offs[0] != int64(abi.NameTableNextOffset) || offs[1] != int64(abi.NameTableDataOffset) {
		t.Errorf("the name table's fields are at offsets %v, abi.NameTable's at [%d %d]", offs, abi.NameTableNextOffset, abi.NameTableDataOffset)
	}
	if got := sizes.Sizeof(table); got != int64(abi.NameTableSize) {
		t.Errorf("the name table has size %d, abi.NameTable %d", got, abi.NameTableSize)
	}
	if !types.Identical(table.Field(1).Type(), types.Typ[types.String]) || table.Field(0).Type().String() != "unsafe.Pointer" {
		t.Errorf("the name table is %s, not {unsafe.Pointer; string}", table)
	}
}

// TestRender: every rendered file begins with the header, has lost the
// build tag and is in the package it joins; only a package main's hooks
// declare the main-entered hook.
func TestRender(t *testing.T) {
	rt, consts, err := Runtime(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name, pkg string
		src       []byte
	}{
		{RuntimeFileName, "runtime", rt},
		{RuntimeConstFileName, "runtime", consts},
		{StdFileName, "testing", Std("testing")},
		{HooksFileName, "p", Hooks("p", "p\n", false)},
		{HooksFileName, "main", Hooks("main", "main\n", true)},
		{TestMainFileName, "main", TestMain("main")},
		{RouteFileName, "gin", Route("gin")},
	} {
		if !bytes.HasPrefix(f.src, []byte(Header)) || bytes.Count(f.src, []byte(Header)) != 1 {
			t.Errorf("%s (%s) does not begin with the header once", f.name, f.pkg)
		}
		if bytes.Contains(f.src, []byte("//go:build")) {
			t.Errorf("%s (%s) keeps a build tag", f.name, f.pkg)
		}
		file, err := parser.ParseFile(token.NewFileSet(), f.name, f.src, parser.PackageClauseOnly)
		if err != nil || file.Name.Name != f.pkg {
			t.Errorf("%s: package clause %v, %v; want %s", f.name, file.Name, err, f.pkg)
		}
	}
	main := check(t, HooksFileName, Hooks("main", "main\n", true))
	if main.Scope().Lookup("__matrix_main") == nil {
		t.Errorf("the hooks of a package main do not declare __matrix_main")
	}
	if p := check(t, HooksFileName, Hooks("p", "p\n", false)); p.Scope().Lookup("__matrix_main") != nil {
		t.Errorf("the hooks of package p declare __matrix_main")
	}
	names := "example.com/p\n1 F p.go:3\n2 \"quoted\" p.go:4\n"
	c := check(t, HooksFileName, Hooks("p", names, false)).Scope().Lookup("__matrix_nameData").(*types.Const)
	if got := c.Val().ExactString(); got != `"example.com/p\n1 F p.go:3\n2 \"quoted\" p.go:4\n"` {
		t.Errorf("__matrix_nameData = %s", got)
	}
}

// TestRouteFileBesideHooks: a router package that is also instrumented
// compiles the route declarations next to its hooks file: no name is
// declared twice.
func TestRouteFileBesideHooks(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	for name, src := range map[string][]byte{HooksFileName: Hooks("gin", "gin\n", false), RouteFileName: Route("gin")} {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.Default(), Sizes: types.SizesFor("gc", runtime.GOARCH)}
	if _, err := conf.Check("gin", fset, files, nil); err != nil {
		t.Errorf("the route declarations clash with the hooks file: %v", err)
	}
}

// TestRouteFileGo17: the route declarations compile in a package whose
// module declares no Go version (httprouter's), which the compiler
// compiles with -lang=go1.7.
func TestRouteFileGo17(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, RouteFileName, Route("httprouter"), parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default(), GoVersion: "go1.7"}
	if _, err := conf.Check("httprouter", fset, []*ast.File{f}, nil); err != nil {
		t.Errorf("the route declarations need a later Go than 1.7: %v", err)
	}
}

// TestRouteFileImportsUnsafeOnly: the route declarations import nothing
// but unsafe. The compiler is given only the packages the hooked package
// imports itself, and a router that does not import another package the
// file would need is then left without its route hooks.
func TestRouteFileImportsUnsafeOnly(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), RouteFileName, Route("chi"), parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range f.Imports {
		if im.Path.Value != `"unsafe"` {
			t.Errorf("the route declarations import %s", im.Path.Value)
		}
	}
}
