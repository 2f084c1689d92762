package rewrite

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// typeChecks reports whether the files type-check as one package, with
// imports resolved from the installed toolchain's export data.
func typeChecks(srcs map[string][]byte) bool {
	fset := token.NewFileSet()
	var files []*ast.File
	for name, src := range srcs {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return false
		}
		files = append(files, f)
	}
	impMu.Lock()
	defer impMu.Unlock()
	conf := types.Config{Importer: imp, Error: func(error) {}}
	_, err := conf.Check("example.com/x", fset, files, nil)
	return err == nil
}

// imp is shared so that export data is read once per process.
var (
	impMu sync.Mutex
	imp   = importer.Default()
)

// FuzzRewrite checks the rewriter on arbitrary source: the rewritten file
// parses, formats, keeps every original token at its line and column, and
// type-checks (with the generated hooks file) if and only if the original
// does. Seeds: the sample of rewrite_test.go and this package's own files.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(sample))
	seeds, _ := filepath.Glob("*.go")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("package p\nfunc F() { println(1) }\n"))
	// Load the seeds' imports before fuzzing: reading export data the first
	// time is slow, and the fuzzing engine takes a slow input for a hang.
	for _, path := range []string{"bytes", "embed", "errors", "fmt", "go/ast", "go/format", "go/importer", "go/parser",
		"go/scanner", "go/token", "go/types", "os", "path/filepath", "reflect", "sort", "strconv", "strings", "sync", "testing", "unsafe",
		"bufio", "os/exec", "regexp"} {
		impMu.Lock()
		imp.Import(path)
		impMu.Unlock()
	}
	f.Add([]byte("package p\n\nimport \"fmt\"\n\nfunc F[T any](x T) (r string) { defer func() { r += fmt.Sprint(recover()) }(); return fmt.Sprint(x, x, x, x) + fmt.Sprint(x) }\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 || bytes.Contains(src, []byte("__matrix_")) {
			return
		}
		// Every way of recording exits: deferred, at the returns, and at
		// the returns with hook-free copies of small functions.
		for _, mode := range []Options{{}, {ReturnExits: true}, {ReturnExits: true, CopyBudget: DefaultCopyBudget}} {
			mode.PkgPath = "example.com/x"
			p, got, path := rewriteSourceOpts(t, string(src), mode)
			ids := make([]uint32, len(p.Funcs))
			for i := range ids {
				ids[i] = uint32(i + 1) // as rewriteSource numbers them
			}
			if got == nil {
				continue // nothing to instrument, or the original does not parse
			}
			if _, err := parser.ParseFile(token.NewFileSet(), "out.go", got, parser.ParseComments); err != nil {
				t.Fatalf("rewritten file does not parse: %v\n%s", err, got)
			}
			if _, err := format.Source(got); err != nil {
				t.Fatalf("rewritten file does not format: %v", err)
			}
			checkPositions(t, path, src, got)
			orig := typeChecks(map[string][]byte{"x.go": src})
			inst := typeChecks(map[string][]byte{"x.go": got, HooksFileName: p.HooksFile(ids)})
			if orig != inst {
				t.Fatalf("original type-checks: %v, rewritten: %v\n%s", orig, inst, got)
			}
		}
	})
}
