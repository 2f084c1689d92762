package rewrite

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"

	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/abi"
)

// A stdHook adds a dispatch source to a function of a standard package:
// the Go counterparts of Matrix's Looper printer hook, which turn every
// request served by net/http and every test run by testing into a dispatch
// with no change to the program.
type stdHook struct {
	recv, name string   // receiver type (without *) and function name
	results    []string // result names the statement uses: checked
	// stmt renders the statement inserted at the top of the body, given
	// the names of the function's parameters (receiver first).
	stmt func(params []string) string
}

// Dispatch kinds, as the runtime takes them.
const (
	kindHTTP      = int(abi.KindHTTP)
	kindTest      = int(abi.KindTest)
	kindBenchmark = int(abi.KindBenchmark)
)

func beginEnd(kind int, nameExpr string) string {
	return fmt.Sprintf("if __matrix_d := __matrix_begin(%d, %s); __matrix_d != nil { defer __matrix_end(__matrix_d, \"\") }; ", kind, nameExpr)
}

var stdHooks = map[string][]stdHook{
	"net/http": {
		// Every request a server handles.
		{recv: "serverHandler", name: "ServeHTTP", stmt: func([]string) string {
			return beginEnd(kindHTTP, `"http"`)
		}},
		// The route pattern is the scene, named as soon as the mux has
		// matched it (so a stuck request's lag report has it too); with
		// nested muxes the innermost, most specific pattern is the last.
		{recv: "ServeMux", name: "findHandler", results: []string{"h", "patStr"}, stmt: func(p []string) string {
			return "if __matrix_on.v != 0 { defer func() { if patStr != \"\" { __matrix_scene(patStr) } }() }; "
		}},
	},
	"testing": {
		{name: "tRunner", stmt: func(p []string) string { return beginEnd(kindTest, p[0]+".name") }},
		{recv: "B", name: "runN", stmt: func(p []string) string { return beginEnd(kindBenchmark, p[0]+".name") }},
	},
}

// HasStdHooks reports whether PatchStd changes package pkg.
func HasStdHooks(pkg string) bool { return stdHooks[pkg] != nil }

// PatchStd adds the dispatch hooks of a standard package (net/http,
// testing), writing changed files to dir, and returns the new file list.
// Every hook must be found: a toolchain whose sources moved fails the build
// with a message naming the function rather than silently losing a source.
func PatchStd(pkg string, files []string, dir string) ([]string, error) {
	hooks := stdHooks[pkg]
	found := make([]bool, len(hooks))
	out := append([]string(nil), files...)
	pkgName := ""
	for i, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", pkg, err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", pkg, err)
		}
		pkgName = f.Name.Name
		sf := &srcFile{path: path, src: src, ast: f, lineNames: lineDirectiveNames(f, path)}
		var pts []insertion
		var texts []string
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			for h, hook := range hooks {
				if fd.Name.Name != hook.name || recvTypeName(fd) != hook.recv {
					continue
				}
				params := paramNames(fd)
				if !hasResults(fd, hook.results) {
					return nil, fmt.Errorf("patch %s: %s no longer has the results %v in this Go release; matrixexec does not support it", pkg, hookName(hook), hook.results)
				}
				texts = append(texts, hook.stmt(params))
				pts = append(pts, insertion{fn: len(texts) - 1, offset: fset.Position(fd.Body.Lbrace).Offset + 1, resume: resumeDirective(fset, sf, fd.Body.Lbrace)})
				found[h] = true
			}
		}
		if len(pts) == 0 {
			continue
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "//line %s:1:1\n", path)
		last := 0
		for _, pt := range pts {
			b.Write(src[last:pt.offset])
			b.WriteString(texts[pt.fn])
			b.WriteString(pt.resume)
			last = pt.offset
		}
		b.Write(src[last:])
		dst := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("patch %s: %w", pkg, err)
		}
		out[i] = dst
	}
	for h, ok := range found {
		if !ok {
			return nil, fmt.Errorf("patch %s: function %s not found in this Go release's sources; matrixexec does not support it", pkg, hookName(hooks[h]))
		}
	}
	declSrc, err := inject.Std(pkgName)
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", pkg, err)
	}
	decls := filepath.Join(dir, inject.StdFileName)
	if err := os.WriteFile(decls, declSrc, 0o644); err != nil {
		return nil, fmt.Errorf("patch %s: %w", pkg, err)
	}
	// First, so that __matrix_on precedes the package's own variables in
	// declaration order (see Plan.HooksFile).
	return append([]string{decls}, out...), nil
}

func hookName(h stdHook) string {
	if h.recv != "" {
		return "(" + h.recv + ")." + h.name
	}
	return h.name
}

func recvTypeName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func hasResults(fd *ast.FuncDecl, want []string) bool {
	have := map[string]bool{}
	if fd.Type.Results != nil {
		for _, f := range fd.Type.Results.List {
			for _, n := range f.Names {
				have[n.Name] = true
			}
		}
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

// paramNames returns the receiver and parameter names, "_" for unnamed.
func paramNames(fd *ast.FuncDecl) []string {
	var names []string
	for _, fl := range []*ast.FieldList{fd.Recv, fd.Type.Params} {
		if fl == nil {
			continue
		}
		for _, f := range fl.List {
			if len(f.Names) == 0 {
				names = append(names, "_")
			}
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
		}
	}
	return names
}
