package rewrite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/inject"
)

func TestPatchRuntime(t *testing.T) {
	src := t.TempDir()
	orig := "package runtime\n\ntype g struct {\n\tgoid uint64\n}\n\nvar x int\n"
	r2 := filepath.Join(src, "runtime2.go")
	other := filepath.Join(src, "proc.go")
	panicGo := filepath.Join(src, "panic.go")
	if err := os.WriteFile(panicGo, []byte("package runtime\n\nfunc deferreturn() {\n\tx()\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r2, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, debug := range []bool{false, true} {
		dir := t.TempDir()
		files, err := PatchRuntime([]string{other, r2, panicGo}, dir, debug)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 5 || files[0] != other || files[1] != filepath.Join(dir, "runtime2.go") || files[2] != filepath.Join(dir, "panic.go") ||
			files[3] != filepath.Join(dir, inject.RuntimeFileName) || files[4] != filepath.Join(dir, inject.RuntimeConstFileName) {
			t.Fatalf("debug=%v: files %q", debug, files)
		}
		// deferreturn's fast path, on its brace's line; the rest of the
		// line keeps its column.
		pg, err := os.ReadFile(files[2])
		if err != nil {
			t.Fatal(err)
		}
		wantPanic := "//line " + panicGo + ":1:1\npackage runtime\n\nfunc deferreturn() {" + deferFastPath + "/*line " + panicGo + ":3:21*/\n\tx()\n}\n"
		if string(pg) != wantPanic {
			t.Errorf("panic.go =\n%s\nwant\n%s", pg, wantPanic)
		}
		got, err := os.ReadFile(files[1])
		if err != nil {
			t.Fatal(err)
		}
		// The field goes on the closing brace's line: no line moves.
		want := "//line " + r2 + ":1:1\npackage runtime\n\ntype g struct {\n\tgoid uint64\n" + gField + "}\n\nvar x int\n"
		if string(got) != want {
			t.Errorf("runtime2.go =\n%s\nwant\n%s", got, want)
		}
		hooks, err := os.ReadFile(files[3])
		if err != nil {
			t.Fatal(err)
		}
		wantConst := "const matrixDebugBuild = " + map[bool]string{false: "false", true: "true"}[debug]
		if strings.Count(string(hooks), "const matrixDebugBuild = ") != 1 || !strings.Contains(string(hooks), wantConst) {
			t.Errorf("debug=%v: the runtime file does not declare %q", debug, wantConst)
		}
	}
	for _, fs := range [][]string{{other, panicGo}, {other, r2}} {
		if _, err := PatchRuntime(fs, t.TempDir(), false); err == nil {
			t.Errorf("no error for the runtime files %q", fs)
		}
	}
}
