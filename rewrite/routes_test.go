package rewrite

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/inject"
)

// ginShape is the part of gin's engine that its route hooks rely on.
const ginShape = `package gin

type Request struct{ Method string }

type Context struct {
	Request  *Request
	fullPath string
}

type Engine struct{}

type nodeValue struct{ fullPath string }

func (engine *Engine) handleHTTPRequest(c *Context) {
	value := nodeValue{fullPath: "/users/:id"}
	if value.fullPath != "" {
		c.fullPath = value.fullPath // the route matched
		println("next")
	}
}
`

// TestPatchRoutes: a package with the shape a rule declares gets its
// statements, without moving an original token, and compiles with the
// declarations file; one with another shape is left untouched, with a note
// naming what is missing.
func TestPatchRoutes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "gin.go")
	if err := os.WriteFile(src, []byte(ginShape), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, note, err := PatchRoutes("github.com/gin-gonic/gin", []string{src}, dir)
	if err != nil || note != "" {
		t.Fatalf("PatchRoutes: note %q, err %v", note, err)
	}
	want := []string{filepath.Join(dir, "route_gin.go"), filepath.Join(dir, inject.RouteFileName)}
	if !slices.Equal(files, want) {
		t.Fatalf("files = %v, want %v", files, want)
	}
	out, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`func (engine *Engine) handleHTTPRequest(c *Context) {__matrix_rt_route(c.Request.Method, ""); `,
		`c.fullPath = value.fullPath; __matrix_rt_route(c.Request.Method, c.fullPath)/*line ` + src + `:17:30*/ // the route matched`,
	} {
		if !strings.Contains(string(out), s) {
			t.Errorf("patched file has no %q:\n%s", s, out)
		}
	}
	fset := token.NewFileSet()
	var astFiles []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		astFiles = append(astFiles, af)
	}
	conf := types.Config{Importer: importer.Default()}
	if _, err := conf.Check("gin", fset, astFiles, nil); err != nil {
		t.Errorf("the patched package does not type-check: %v", err)
	}
	// The statement after the inserted one keeps its position.
	var next token.Position
	ast.Inspect(astFiles[0], func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "println" {
				next = fset.Position(c.Pos())
			}
		}
		return true
	})
	if next.Filename != src || next.Line != 18 || next.Column != 3 {
		t.Errorf("println at %v, want %s:18:3", next, src)
	}

	for _, tc := range []struct{ name, from, to, note string }{
		{"statement", "c.fullPath = value.fullPath", "c.fullPath = value.fullPath + \"\"", `has no statement "c.fullPath = value.fullPath"`},
		{"parameters", "handleHTTPRequest(c *Context)", "handleHTTPRequest(ctx *Context)", "has the parameters (ctx *Context), not (c *Context)"},
		{"function", "handleHTTPRequest(c *Context)", "serve(c *Context)", "no function (Engine).handleHTTPRequest"},
		{"field", "fullPath string\n}", "path string\n}", "no Context.fullPath"},
	} {
		other := filepath.Join(t.TempDir(), "gin.go")
		if err := os.WriteFile(other, []byte(strings.Replace(ginShape, tc.from, tc.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		files, note, err := PatchRoutes("github.com/gin-gonic/gin", []string{other}, dir)
		if err != nil || !strings.Contains(note, tc.note) || !slices.Equal(files, []string{other}) {
			t.Errorf("%s: files %v, note %q, err %v; want the file unchanged and a note with %q", tc.name, files, note, err, tc.note)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: files written for a package left untouched: %v", tc.name, ents)
		}
	}
	if files, note, err := PatchRoutes("example.com/other", []string{src}, dir); err != nil || note != "" || !slices.Equal(files, []string{src}) {
		t.Errorf("a package without rule: files %v, note %q, err %v", files, note, err)
	}
}
