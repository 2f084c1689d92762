package rewrite

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
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
	if err := os.WriteFile(panicGo, []byte("package runtime\n\nfunc deferreturn() {\n\tx()\n}\n\nfunc recovery(gp *g) {}\n\nfunc Goexit() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stackGo := filepath.Join(src, "stack.go")
	if err := os.WriteFile(stackGo, []byte("package runtime\n\nfunc gostartcallfn(gobuf *gobuf, fv *funcval) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// malloc.go as Go 1.26 has it, which hands sizes in a span's heap
	// bits to the allocators specialised by size class, and those in
	// malloc_generated.go (their slow path is not hooked); signal_unix.go
	// is not compiled, as on Windows.
	mallocGo := filepath.Join(src, "malloc.go")
	if err := os.WriteFile(mallocGo, []byte("package runtime\n\nfunc mallocgc(size uintptr, typ *_type, needzero bool) unsafe.Pointer {\n\tif sizeSpecializedMallocEnabled && heapBitsInSpan(size) {\n\t\treturn mallocNoScanTable[size](size, typ, needzero)\n\t}\n\treturn nil\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	genGo := filepath.Join(src, "malloc_generated.go")
	if err := os.WriteFile(genGo, []byte("package runtime\n\nfunc mallocgcSmallNoScanSC2(size uintptr, typ *_type, needzero bool) unsafe.Pointer {\n\treturn nil\n}\n\nfunc mallocgcTinySlowPath(size uintptr, typ *_type, needzero bool) unsafe.Pointer {\n\treturn nil\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// proc.go with every hooked function, in another order than the table,
	// with the signatures of the supported releases.
	sigs := map[string]string{
		"gopark":                "(unlockf func(*g, unsafe.Pointer) bool, lock unsafe.Pointer, reason waitReason, traceReason traceBlockReason, traceskip int)",
		"casgstatus":            "(gp *g, oldval, newval uint32)",
		"reentersyscall":        "(pc, sp, bp uintptr)",
		"entersyscallblock":     "()",
		"exitsyscall":           "()",
		"gdestroy":              "(gp *g)",
		"ready":                 "(gp *g, traceskip int, next bool)",
		"wirep":                 "(pp *p)",
		"stopTheWorldWithSema":  "(reason stwReason) worldStop",
		"startTheWorldWithSema": "(now int64, w worldStop) int64",
	}
	var proc strings.Builder
	proc.WriteString("package runtime\n")
	for i := len(runtimeHooks) - 1; i >= 0; i-- {
		if h := runtimeHooks[i]; h.file == "proc.go" {
			fmt.Fprintf(&proc, "\nfunc %s%s {\n\tx()\n}\n", h.name, sigs[h.name])
		}
	}
	if err := os.WriteFile(other, []byte(proc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r2, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ debug, deferExits bool }{{false, false}, {true, false}, {false, true}} {
		debug := c.debug
		dir := t.TempDir()
		files, err := PatchRuntime([]string{other, r2, panicGo, stackGo, mallocGo, genGo}, dir, debug, c.deferExits)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 8 || files[0] != filepath.Join(dir, "proc.go") || files[1] != filepath.Join(dir, "runtime2.go") || files[2] != filepath.Join(dir, "panic.go") ||
			files[3] != filepath.Join(dir, "stack.go") || files[4] != filepath.Join(dir, "malloc.go") || files[5] != filepath.Join(dir, "malloc_generated.go") ||
			files[6] != filepath.Join(dir, inject.RuntimeFileName) || files[7] != filepath.Join(dir, inject.RuntimeConstFileName) {
			t.Fatalf("debug=%v: files %q", debug, files)
		}
		// Allocations are counted once: mallocgc leaves what it hands to
		// a size class's allocator to that allocator, whose slow path
		// counts nothing.
		mg, err := os.ReadFile(files[4])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(mg), "{if gp := getg(); gp.matrixBeat != nil && !(sizeSpecializedMallocEnabled && heapBitsInSpan(size)) { matrixAlloc(gp, size) }; ") {
			t.Errorf("malloc.go =\n%s", mg)
		}
		gg, err := os.ReadFile(files[5])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(gg), "matrixAlloc(") != 1 || !strings.Contains(string(gg), "func mallocgcSmallNoScanSC2(size uintptr, typ *_type, needzero bool) unsafe.Pointer {if gp := getg(); gp.matrixBeat != nil { matrixAlloc(gp, size) }; ") {
			t.Errorf("malloc_generated.go =\n%s", gg)
		}
		// deferreturn's fast path, on its brace's line, with deferred
		// exits only; the rest of the line keeps its column.
		pg, err := os.ReadFile(files[2])
		if err != nil {
			t.Fatal(err)
		}
		deferreturn := "func deferreturn() {\n"
		if c.deferExits {
			deferreturn = "func deferreturn() {" + deferFastPath + "/*line " + panicGo + ":3:21*/\n"
		}
		wantPanic := "//line " + panicGo + ":1:1\npackage runtime\n\n" + deferreturn + "\tx()\n}\n\n" +
			"func recovery(gp *g) {if gp.matrixBeat != nil { matrixRecovery(gp) }; /*line " + panicGo + ":7:23*/}\n\n" +
			"func Goexit() {if gp := getg(); gp.matrixBeat != nil { matrixGoexitCall(gp) }; /*line " + panicGo + ":9:16*/}\n"
		if string(pg) != wantPanic {
			t.Errorf("deferExits=%v: panic.go =\n%s\nwant\n%s", c.deferExits, pg, wantPanic)
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
			head := "func " + h.name + sigs[h.name] + " {"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "", "package runtime\n"+head+"}", 0)
			if err != nil {
				t.Fatal(err)
			}
			want := head + h.stmt(paramNames(f.Decls[0].(*ast.FuncDecl))) + fmt.Sprintf("/*line %s:%d:%d*/\n\tx()\n", other, line, len(head)+1)
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
		sg, err := os.ReadFile(files[3])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(sg), "func gostartcallfn(gobuf *gobuf, fv *funcval) {if gp := getg().m.curg; gp != nil && gp.matrixBeat != nil { matrixSpawn(gp, gobuf.g.ptr(), fv.fn) }; ") {
			t.Errorf("stack.go =\n%s", sg)
		}
		hooks, err := os.ReadFile(files[6])
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
	if _, err := PatchRuntime([]string{changed, r2, panicGo, stackGo, mallocGo}, t.TempDir(), false, false); err == nil || !strings.Contains(err.Error(), "gopark has the parameters [x] in this Go release") {
		t.Errorf("gopark with another signature: err = %v", err)
	}
	for _, fs := range [][]string{{other, panicGo}, {other, r2}, {r2, panicGo}} {
		if _, err := PatchRuntime(fs, t.TempDir(), false, false); err == nil {
			t.Errorf("no error for the runtime files %q", fs)
		}
	}
}

// TestPatchTestMain: the main function go test generates ends the start-up
// phase first, as main.main does in a program, with no line moved.
func TestPatchTestMain(t *testing.T) {
	src := filepath.Join(t.TempDir(), TestMainFile)
	orig := "// Code generated by 'go test'. DO NOT EDIT.\n\npackage main\n\nfunc main() {\n\tm := 1\n\t_ = m\n}\n"
	if err := os.WriteFile(src, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := PatchTestMain(src, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0] != filepath.Join(dir, TestMainFile) {
		t.Fatalf("files %q", files)
	}
	got, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	want := "//line " + src + ":1:1\n// Code generated by 'go test'. DO NOT EDIT.\n\npackage main\n\nfunc main() {" +
		hookMainEntered + "(); /*line " + src + ":5:14*/\n\tm := 1\n\t_ = m\n}\n"
	if string(got) != want {
		t.Errorf("patched test main =\n%s\nwant\n%s", got, want)
	}
	decl, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(decl), "package main") || !strings.Contains(string(decl), "//go:linkname "+hookMainEntered+" runtime.matrixMainEntered") {
		t.Errorf("declarations file:\n%s", decl)
	}
	if _, err := PatchTestMain(filepath.Join(t.TempDir(), "missing.go"), dir); err == nil {
		t.Error("no error for a missing file")
	}
}
