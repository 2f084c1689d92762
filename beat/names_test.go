package beat

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// TestParseNames reads two name tables as instrumented packages register
// them: functions with and without a line, go statements, and lines that
// are not either.
func TestParseNames(t *testing.T) {
	b := &abi.NameTable{Data: "example.com/b\n7 (*T).M b.go:12\ngo example.com/b.work b.go:30\nbad line\n"}
	a := &abi.NameTable{Next: unsafe.Pointer(b), Data: "example.com/a\n5 F a.go:3\n6 F.func1 nofile\n"}
	tabs, funcs, pkgs, gos := parseNames(unsafe.Pointer(a))
	if !pkgs["example.com/a"] || !pkgs["example.com/b"] || len(pkgs) != 2 {
		t.Errorf("packages %v", pkgs)
	}
	want := map[uint32]Func{
		5: {ID: 5, Pkg: "example.com/a", Name: "F", File: "a.go", Line: 3},
		6: {ID: 6, Pkg: "example.com/a", Name: "F.func1", File: "nofile"},
		7: {ID: 7, Pkg: "example.com/b", Name: "(*T).M", File: "b.go", Line: 12},
	}
	if len(funcs) != len(want) {
		t.Errorf("%d functions, want %d", len(funcs), len(want))
	}
	saved := names.tabs
	names.tabs = tabs
	defer func() { names.tabs = saved }()
	for id, w := range want {
		if got := funcs[id].fn(id); got != w {
			t.Errorf("function %d: %+v, want %+v", id, got, w)
		}
	}
	g, ok := gos[nameHash("b.go:30")]
	if !ok {
		t.Fatal("no go statement at b.go:30")
	}
	if d := tabs[g.tab]; d[g.fn:g.fn+g.fnLen] != "example.com/b.work" || d[g.pos:g.pos+g.posLen] != "b.go:30" {
		t.Errorf("go statement %q at %q", d[g.fn:g.fn+g.fnLen], d[g.pos:g.pos+g.posLen])
	}
}

// TestNamesHoldNoPointers keeps the parsed name tables out of the garbage
// collector's work: an entry per instrumented function, kept for the
// process's life, must hold no pointer for it to scan on every cycle.
func TestNamesHoldNoPointers(t *testing.T) {
	for _, v := range []any{names.funcs, names.gos, names.ids} {
		typ := reflect.TypeOf(v)
		for _, e := range []reflect.Type{typ.Key(), typ.Elem()} {
			if hasPointers(e) {
				t.Errorf("%v: %v holds pointers", typ, e)
			}
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}
