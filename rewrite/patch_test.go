package rewrite

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditBufferRender(t *testing.T) {
	b := editBuffer{path: "/src/x.go", src: []byte("0123456789")}
	b.insert(7, "c")
	b.insert(2, "a")
	b.add(edit{offset: 4, end: 6, fn: -1, text: "R"})
	b.insert(2, "b") // same offset: after "a"
	got := string(b.render(nil))
	if want := "//line /src/x.go:1:1\n01ab23R6c789"; got != want {
		t.Errorf("render = %q, want %q", got, want)
	}
	got = string(b.render(func(e edit) string { return strings.ToUpper(e.text) + "!" }))
	if want := "//line /src/x.go:1:1\n01A!B!23R!6C!789"; got != want {
		t.Errorf("render with expand = %q, want %q", got, want)
	}
}

func TestPkgPatch(t *testing.T) {
	src := t.TempDir()
	a := filepath.Join(src, "a.go")
	b := filepath.Join(src, "b.go")
	aSrc := "package p\n\nfunc F(x int) {\n\tprintln(x)\n}\n\ntype s struct {\n\tx int\n}\n"
	if err := os.WriteFile(a, []byte(aSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("package p\n\nfunc G() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := func() pkgPatch {
		return pkgPatch{
			pkg:    "p",
			fields: []fieldPatch{{file: "a.go", typ: "s", text: "y int; "}},
			hooks:  []stdHook{{file: "a.go", name: "F", stmt: func(p []string) string { return "println(" + p[0] + "+1); " }}},
			files: func(pkgName string) ([]addedFile, error) {
				return []addedFile{
					{name: "last.go", content: []byte("package " + pkgName + "\n")},
					{name: "first.go", content: []byte("package " + pkgName + "\n"), first: true},
				}, nil
			},
		}
	}
	dir := t.TempDir()
	pp := patch()
	files, err := pp.apply([]string{a, b}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "first.go"), filepath.Join(dir, "a.go"), b, filepath.Join(dir, "last.go")}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files = %v, want %v", files, want)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "last.go")); err != nil || string(got) != "package p\n" {
		t.Errorf("added file: %q, %v", got, err)
	}
	out, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	wantSrc := "//line " + a + ":1:1\npackage p\n\nfunc F(x int) {println(x+1); /*line " + a + ":3:16*/\n\tprintln(x)\n}\n\ntype s struct {\n\tx int\ny int; }\n"
	if string(out) != wantSrc {
		t.Errorf("patched a.go:\n%s\nwant:\n%s", out, wantSrc)
	}
	// The original statement keeps its position.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, files[1], out, 0)
	if err != nil {
		t.Fatal(err)
	}
	body := f.Decls[0].(*ast.FuncDecl).Body.List
	if p := fset.Position(body[1].Pos()); p.Filename != a || p.Line != 4 || p.Column != 2 {
		t.Errorf("original statement at %v, want %s:4:2", p, a)
	}

	for _, tc := range []struct {
		name   string
		change func(*pkgPatch)
		want   string
	}{
		{"missing file", func(pp *pkgPatch) { pp.fields[0].file = "c.go" }, "patch p: c.go not among the compiled files"},
		{"missing type", func(pp *pkgPatch) { pp.fields[0].typ = "t" }, "patch p: a.go: no type t struct in this Go release"},
		{"missing function", func(pp *pkgPatch) { pp.hooks[0].name = "H" }, "patch p: function H not found in this Go release's sources"},
		{"hook in another file", func(pp *pkgPatch) { pp.hooks[0].file = "b.go" }, "patch p: function F not found"},
	} {
		pp := patch()
		tc.change(&pp)
		if _, err := pp.apply([]string{a, b}, t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestTestDispatchEndsBeforeTheSignal: a test's dispatch ends inside the
// test function's wrapper, not in tRunner's own deferred functions, which
// run later and tell the parent the test is done (a binary may exit at
// once after its last test says so, before a later End could report it).
func TestTestDispatchEndsBeforeTheSignal(t *testing.T) {
	src := filepath.Join(t.TempDir(), "testing.go")
	const testingGo = `package testing

type T struct {
	parent *T
	name   string
	signal chan bool
}

func tRunner(t *T, fn func(t *T)) {
	defer func() {
		t.signal <- true
	}()
	fn(t)
}

type B struct {
	parent *B
	name   string
}

func (b *B) runN(n int) {}
`
	if err := os.WriteFile(src, []byte(testingGo), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := PatchStd("testing", []string{src}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var patched []byte
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte("func tRunner(")) {
			patched = b
		}
	}
	f, err := parser.ParseFile(token.NewFileSet(), "testing.go", patched, 0)
	if err != nil {
		t.Fatalf("%v\n%s", err, patched)
	}
	// Every deferred End is in a function literal assigned to fn, which
	// tRunner's own body then calls; none is deferred by tRunner itself.
	var runner ast.Node
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "tRunner" {
			runner = fd
		}
	}
	var ends, wrapped int
	ast.Inspect(runner, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if id, ok := n.Lhs[0].(*ast.Ident); ok && id.Name == "fn" {
				if lit, ok := n.Rhs[0].(*ast.FuncLit); ok {
					ast.Inspect(lit, func(m ast.Node) bool {
						if d, ok := m.(*ast.DeferStmt); ok && calls(d.Call, "__matrix_end") {
							wrapped++
						}
						return true
					})
				}
			}
		case *ast.DeferStmt:
			if calls(n.Call, "__matrix_end") {
				ends++
			}
		}
		return true
	})
	if ends != 1 || wrapped != 1 {
		t.Errorf("%d deferred ends, %d of them in fn's wrapper; want 1 and 1:\n%s", ends, wrapped, patched)
	}
}

// calls reports whether call calls the function named name.
func calls(call *ast.CallExpr, name string) bool {
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == name
}
