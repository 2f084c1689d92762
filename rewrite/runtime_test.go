package rewrite

import (
	"fmt"
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
	// proc.go with every hooked function, in another order than the table.
	var proc strings.Builder
	proc.WriteString("package runtime\n")
	for i := len(runtimeHooks) - 1; i >= 0; i-- {
		if h := runtimeHooks[i]; h.file == "proc.go" {
			fmt.Fprintf(&proc, "\nfunc %s%s {\n\tx()\n}\n", h.fn, h.sig)
		}
	}
	if err := os.WriteFile(other, []byte(proc.String()), 0o644); err != nil {
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
		if len(files) != 5 || files[0] != filepath.Join(dir, "proc.go") || files[1] != filepath.Join(dir, "runtime2.go") || files[2] != filepath.Join(dir, "panic.go") ||
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
		// Every hook at the top of its function, each function's lines
		// in place.
		pr, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		line := 3
		for i := len(runtimeHooks) - 1; i >= 0; i-- {
			h := runtimeHooks[i]
			if h.file != "proc.go" {
				continue
			}
			head := "func " + h.fn + h.sig + " {"
			want := head + h.stmt + fmt.Sprintf("/*line %s:%d:%d*/\n\tx()\n", other, line, len(head)+1)
			if !strings.Contains(string(pr), want) {
				t.Errorf("proc.go lacks\n%s\nin\n%s", want, pr)
			}
			line += 4
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
	// A hooked function with another signature is refused.
	changed := filepath.Join(t.TempDir(), "proc.go")
	if err := os.WriteFile(changed, []byte("package runtime\n\nfunc gopark(x int) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PatchRuntime([]string{changed, r2, panicGo}, t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "gopark has a new signature") {
		t.Errorf("gopark with another signature: err = %v", err)
	}
	for _, fs := range [][]string{{other, panicGo}, {other, r2}, {r2, panicGo}} {
		if _, err := PatchRuntime(fs, t.TempDir(), false); err == nil {
			t.Errorf("no error for the runtime files %q", fs)
		}
	}
}
