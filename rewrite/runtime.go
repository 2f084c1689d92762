package rewrite

import (
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
)

// RuntimeFile is the recorder's hot path, added to package runtime.
//
//go:embed runtime_matrix.go.txt
var RuntimeFile []byte

// RuntimeFileName is the name under which RuntimeFile is compiled.
const RuntimeFileName = "zz_matrix_beat.go"

// gField is the field added to runtime.g: the goroutine's ring buffer, nil
// while it is not inside a dispatch.
const gField = "matrixBeat unsafe.Pointer; "

// PatchRuntime prepares the files of package runtime: it adds the field the
// recorder needs to runtime.g (in runtime2.go) and the recorder's file. It
// writes what it changes to dir and returns the new file list.
//
// The field is inserted before the closing brace of the struct, on that
// brace's line, so no line of runtime2.go moves.
func PatchRuntime(files []string, dir string) ([]string, error) {
	out := append([]string(nil), files...)
	patched := false
	for i, path := range files {
		if filepath.Base(path) != "runtime2.go" {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		closing := gStructClosing(f)
		if !closing.IsValid() {
			return nil, errors.New("patch runtime: no type g struct in " + path)
		}
		off := fset.Position(closing).Offset
		dst := filepath.Join(dir, "runtime2.go")
		content := fmt.Appendf(nil, "//line %s:1:1\n", path)
		content = append(content, src[:off]...)
		content = append(content, gField...)
		content = append(content, src[off:]...)
		if err := os.WriteFile(dst, content, 0o644); err != nil {
			return nil, fmt.Errorf("patch runtime: %w", err)
		}
		out[i] = dst
		patched = true
	}
	if !patched {
		return nil, errors.New("patch runtime: runtime2.go not among the compiled files")
	}
	extra := filepath.Join(dir, RuntimeFileName)
	if err := os.WriteFile(extra, RuntimeFile, 0o644); err != nil {
		return nil, fmt.Errorf("patch runtime: %w", err)
	}
	return append(out, extra), nil
}

func gStructClosing(f *ast.File) token.Pos {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			if ts.Name.Name != "g" {
				continue
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				return st.Fields.Closing
			}
		}
	}
	return token.NoPos
}
