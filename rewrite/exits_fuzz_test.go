package rewrite

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// returnShapes are the functions FuzzExitShapes composes programs of. Each
// is a template: %[1]d is the function's number, %[2]d a constant drawn
// from the input. Every function takes an int and is called by main, which
// prints what it returns; shapes named by their first comment.
var returnShapes = []string{
	// unnamed result, several returns, calls in the results
	`func f%[1]d(x int) int {
	if x%%3 == 0 {
		return len(fmt.Sprint(x)) + %[2]d
	}
	if x%%3 == 1 { return x * 2 }
	return strings.Count(fmt.Sprint(x, x), "1") - x
}`,
	// multiple values from one call, and a literal list
	`func f%[1]d(x int) (int, error) {
	if x > %[2]d {
		return strconv.Atoi(fmt.Sprint(x))
	}
	return strconv.Atoi("x" + fmt.Sprint(x))
}`,
	// named results, bare and explicit returns, swapped results
	`func f%[1]d(x int) (a, b int) {
	a, b = x, %[2]d
	if x%%2 == 0 {
		fmt.Print("")
		return
	}
	return b, a + len(fmt.Sprint(a))
}`,
	// a defer that changes a named result
	`func f%[1]d(x int) (n int) {
	defer func() { n = n*2 + %[2]d }()
	if x > 3 { return x + len(fmt.Sprint(x)) }
	n = -x
	return
}`,
	// recover in a deferred closure, panic in the body
	`func f%[1]d(x int) (n int, err error) {
	defer func() {
		if r := recover(); r != nil { err = fmt.Errorf("recovered %%v", r); n = %[2]d }
	}()
	if x%%2 == 0 { panic(fmt.Sprint("even ", x)) }
	return x, nil
}`,
	// a panic through frames without defer, recovered two frames up
	`func p%[1]d(x int) int {
	if x%%3 == %[2]d%%3 { panic(x) }
	return x + len(fmt.Sprint(x))
}
func q%[1]d(x int) int { return p%[1]d(x) + p%[1]d(x+1) }
func f%[1]d(x int) (r int) {
	defer func() {
		if v := recover(); v != nil { r = -1000 - v.(int) }
	}()
	return q%[1]d(x) * 2
}`,
	// goto to a return, a labelled return
	`func f%[1]d(x int) (r int) {
	i := 0
loop:
	if i < x%%5 {
		i++
		r += i + len(fmt.Sprint(i))
		goto loop
	}
	if r > %[2]d { goto out }
	return r * 3
out:
	return
}`,
	// no results: falls off the end, or returns early
	`func f%[1]d(x int) int {
	var b strings.Builder
	g := func(y int) {
		fmt.Fprint(&b, y)
		if y > %[2]d {
			fmt.Fprint(&b, "!")
			return
		}
		fmt.Fprint(&b, "?")
	}
	g(x)
	g(x + 1)
	return b.Len()
}`,
	// returns inside closures belong to them
	`func f%[1]d(x int) int {
	h := func(y int) (int, bool) {
		if y > %[2]d { return y, true }
		return -len(fmt.Sprint(y)), false
	}
	a, ok := h(x)
	if !ok { return a - 1 }
	return a + 1
}`,
	// type parameters in the results
	`func g%[1]d[T any](v T, k int) (T, string) {
	if k > %[2]d { return v, fmt.Sprint(v, k) }
	var zero T
	return zero, fmt.Sprint(k)
}
func f%[1]d(x int) int {
	v, s := g%[1]d(x, x)
	return v + len(s)
}`,
	// a result shadowed in a block, returned explicitly
	`func f%[1]d(x int) (err error) {
	if x > %[2]d {
		err := fmt.Errorf("big %%d", x)
		return err
	}
	return nil
}`,
	// positions: the line a return's call reports
	`func w%[1]d() int { _, _, line, _ := runtime.Caller(1); return line + %[2]d*0 }
func f%[1]d(x int) (int, int) {
	if x > 2 {
		return w%[1]d(),
			w%[1]d()
	}
	return w%[1]d(), len(fmt.Sprint(x))
}`,
	// a method with a struct receiver, pointer, array, blank and variadic
	// parameters, floats: what a recording copy passes through its enter
	// helper
	`type s%[1]d struct {
	a, b int
	f    float64
}
func (v s%[1]d) m(p *s%[1]d, arr [3]int, _ string, xs ...float64) (r float64) {
	r = v.f + p.f + float64(arr[2])
	for i := 0; i < len(xs); i++ { r += xs[i] + float64(len(fmt.Sprint(xs[i]))) }
	if r > %[2]d { return r * 2 }
	p.a++
	return r - float64(p.a)
}
func f%[1]d(x int) float64 {
	v := s%[1]d{a: x, f: 1.5}
	return v.m(&v, [3]int{x, x, x}, "", float64(x), 2.25) + float64(v.a)
}`,
	// no exit site: the body ends in an endless loop
	`func f%[1]d(x int) int {
	for i := 0; ; i++ {
		if i > x+%[2]d { return i + len(fmt.Sprint(i)) }
	}
}`,
	// a result named _, several returns, a bare one
	`func f%[1]d(x int) (_ int, err error) {
	if x > %[2]d { return x * 2, nil }
	if x == 1 { return len(fmt.Sprint(x)), fmt.Errorf("one") }
	return
}`,
	// results declared again in a block and a loop, a bare return
	`func f%[1]d(x int) (n int, err error) {
	if x > %[2]d {
		n := len(fmt.Sprint(x))
		return n * 3, nil
	}
	for i := 0; i < x; i++ {
		err := fmt.Errorf("at %%d", i)
		if i == 2 { return i, err }
	}
	n, err = x, nil
	return
}`,
	// && chains that guard returns (nested ifs outside a hook-free
	// copy): the operands run in order, and only while the ones before
	// are true; an init statement; an else; an ||; the line a call in
	// such a body reports
	`func c%[1]d(s *[]int, k, x int) bool { *s = append(*s, k); return x > k }

func f%[1]d(x int) (n int) {
	var s []int
	if x > %[2]d && c%[1]d(&s, 1, x) { return len(s) + len(fmt.Sprint(s)) }
	if v := len(s); v == 0 && c%[1]d(&s, 2, x) && c%[1]d(&s, 3, x) {
		n = v + len(fmt.Sprint(s))
		return
	}
	if x > 1 && c%[1]d(&s, 4, x) { n = 40 } else { return -len(s) }
	if x%%2 == 0 && (c%[1]d(&s, 5, x) || c%[1]d(&s, 6, x)) {
		_, _, line, _ := runtime.Caller(0)
		return line + len(fmt.Sprint(s))
	}
	return n + len(fmt.Sprint(s))
}`,
	manyReturnsShape(80),
	// bounded guards before the entry hook: a bare return of named
	// results, a switch that returns, then the body that calls
	`func f%[1]d(x int) (n int, err error) {
	if x == %[2]d%%6 {
		n = -1
		return
	}
	switch {
	case x > 4:
		return x * 3, nil
	case x < 0:
		panic(x)
	}
	n = len(fmt.Sprint(x))
	return
}`,
	// a bounded guard before a defer, and one after it
	`func f%[1]d(x int) (n int) {
	if x < %[2]d%%3 { return -x }
	defer func() { n += len(fmt.Sprint(x)) }()
	if x%%2 == 1 { return x }
	return x * 2
}`,
	// a bounded guard before very many returns (one exit site)
	strings.Replace(manyReturnsShape(70), "{\n\tswitch", "{\n\tif x == %[2]d { return -2 }\n\tswitch", 1),
}

// manyReturnsShape returns a shape with n+1 returns.
func manyReturnsShape(n int) string {
	var b strings.Builder
	b.WriteString("// a return in each of many cases\nfunc f%[1]d(x int) int {\n\tswitch (x + %[2]d) %% 7 {\n")
	for i := range n {
		fmt.Fprintf(&b, "\tcase %d:\n\t\treturn %d + len(fmt.Sprint(x))\n", i, i)
	}
	b.WriteString("\t}\n\treturn -1\n}")
	return b.String()
}

// exitProgram renders the program an input describes: byte pairs choose a
// shape and its constant.
func exitProgram(data []byte) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"fmt\"\n\t\"runtime\"\n\t\"strconv\"\n\t\"strings\"\n)\n\nvar _ = runtime.Caller\nvar _ = strconv.Itoa\nvar _ = strings.Count\n\n")
	var calls []string
	for i := 0; i+1 < len(data) && i < 64; i += 2 {
		n := i / 2
		fmt.Fprintf(&b, returnShapes[int(data[i])%len(returnShapes)]+"\n\n", n, int(data[i+1])%8)
		calls = append(calls, fmt.Sprintf("\tfor x := 0; x < 6; x++ { fmt.Println(%d, x, fmt.Sprint(f%d(x))) }\n", n, n))
	}
	b.WriteString("func main() {\n" + strings.Join(calls, "") + "}\n")
	return b.String()
}

// stubHooks stands for the recorder: the hooks record enters and exits on a
// stack, panic on an exit that matches no open enter, and print the counts
// to stderr at the end.
const stubHooks = `package main

import "os"

// The recorder is on unless MATRIX_STUB_OFF is set: then the hook-free
// copies run (Options.CopyBudget).
var __matrix_on = struct{ v uint32 }{__matrix_stubOn()}

func __matrix_stubOn() uint32 {
	if os.Getenv("MATRIX_STUB_OFF") != "" {
		return 0
	}
	return 1
}

var __matrix_stack []uint32
var __matrix_enters, __matrix_exits int

func __matrix_i(id uint32) bool {
	__matrix_stack = append(__matrix_stack, id)
	__matrix_enters++
	return true
}

func __matrix_o(id uint32) {
	__matrix_exits++
	// Frames a recovered panic unwound have no exit: pop to the match.
	for k := len(__matrix_stack) - 1; k >= 0; k-- {
		if __matrix_stack[k] == id {
			__matrix_stack = __matrix_stack[:k]
			if id == 1 { // main.main
				os.Stderr.WriteString("hooks balanced\n")
			}
			return
		}
	}
	panic("exit without an enter")
}

func __matrix_main() {}
`

// buildRun builds the package in dir and runs it, returning its output.
func buildRun(t *testing.T, dir string) (stdout, stderr string) {
	t.Helper()
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", dir, err, out)
	}
	return runBin(t, bin)
}

// runBin runs bin with env added to its environment.
func runBin(t *testing.T, bin string, env ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	run := exec.Command(bin)
	run.Env = append(os.Environ(), env...)
	run.Stdout, run.Stderr = &o, &e
	if err := run.Run(); err != nil {
		t.Fatalf("run %s: %v\n%s", bin, err, e.String())
	}
	return o.String(), e.String()
}

// FuzzExitShapes builds programs made of functions with many return shapes
// (unnamed and named results, multiple values, calls in the results,
// defers that change named results, recover, panics through frames without
// defer, goto, closures, type parameters, shadowed results), plain and
// rewritten with every function instrumented, and checks that both print
// the same, positions included, and that the exits recorded match enters.
// The seeds cover every shape; run as a test, they take two builds each.
// A program may have no function that can be copied (its shapes all have
// closures, say); TestExitShapeSeedsCopy checks that the seeds do.
func FuzzExitShapes(f *testing.F) {
	if testing.Short() {
		f.Skip("builds programs: skipped with -short")
	}
	for _, seed := range exitShapeSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		// The high bit of the first byte leaves out the hook-free copies.
		copyBudget := DefaultCopyBudget
		if data[0]&0x80 != 0 {
			copyBudget = 0
		}
		compareRewritten(t, exitProgram(data), "", func(path string) []byte {
			p, err := NewPlan([]string{path}, Options{PkgPath: "main", InlineBudget: -1, ReturnExits: true, CopyBudget: copyBudget})
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]uint32, len(p.Funcs))
			for i := range ids {
				ids[i] = uint32(i + 1)
			}
			hasMain := false
			for i, fn := range p.Funcs {
				if fn.Name == "main" {
					ids[i], ids[0] = ids[0], ids[i] // main.main is id 1
					hasMain = true
				}
			}
			if !hasMain || len(p.Funcs) < len(data)/2 {
				t.Fatalf("%d functions instrumented, main among them: %v", len(p.Funcs), hasMain)
			}
			out, err := p.Apply(ids)
			if err != nil {
				t.Fatal(err)
			}
			return out[0].Src
		})
	})
}

// compareRewritten builds the program src (package main, one file) plain
// and as rewrite rewrites it (given the path of a copy, it returns the
// rewritten file, which keeps the original name through its line
// directives), with the stub hooks, and fails unless both print the same,
// with the recorder on and off (the hook-free copies), and the recorded
// exits match the enters. what names the rewrite in messages.
func compareRewritten(t *testing.T, src, what string, rewrite func(path string) []byte) {
	t.Helper()
	plain, inst := t.TempDir(), t.TempDir()
	gomod := []byte("module example.com/shapes\n\ngo 1.24\n")
	for _, d := range []string{plain, inst} {
		if err := os.WriteFile(filepath.Join(d, "go.mod"), gomod, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := rewrite(filepath.Join(inst, "main.go"))
	if err := os.WriteFile(filepath.Join(inst, "main.go"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inst, "hooks.go"), []byte(stubHooks), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOut, _ := buildRun(t, plain)
	gotOut, gotErr := buildRun(t, inst)
	if gotOut != wantOut {
		t.Fatalf("%soutput differs\nplain:\n%s\ninstrumented:\n%s\nprogram:\n%s", what, wantOut, gotOut, out)
	}
	if !strings.Contains(gotErr, "hooks balanced") {
		t.Fatalf("%smain's exit not recorded or unbalanced: %q", what, gotErr)
	}
	// With the recorder off, the hook-free copies run.
	offOut, _ := runBin(t, filepath.Join(inst, "prog"), "MATRIX_STUB_OFF=1")
	if offOut != wantOut {
		t.Fatalf("%soutput with the recorder off differs\nplain:\n%s\ninstrumented:\n%s\nprogram:\n%s", what, wantOut, offOut, out)
	}
}

// exitShapeSeeds returns FuzzExitShapes's seeds: every shape in order and in
// reverse, and every shape without hook-free copies.
func exitShapeSeeds() [][]byte {
	all := make([]byte, 0, 2*len(returnShapes))
	for i := range returnShapes {
		all = append(all, byte(i), byte(i*3))
	}
	rev := make([]byte, 0, 2*len(returnShapes))
	for i := len(returnShapes) - 1; i >= 0; i-- {
		rev = append(rev, byte(i), byte(i*5+1))
	}
	// The high bit of the first byte: exits at the returns only.
	return [][]byte{all, rev, append([]byte{0x80}, all[1:]...)}
}

// TestExitShapeSeedsCopy checks that FuzzExitShapes's seeds run hook-free
// copies: those that ask for them give some functions a copy, and leave
// others (with closures) without.
func TestExitShapeSeedsCopy(t *testing.T) {
	for _, seed := range exitShapeSeeds() {
		if seed[0]&0x80 != 0 {
			continue
		}
		path := filepath.Join(t.TempDir(), "main.go")
		if err := os.WriteFile(path, []byte(exitProgram(seed)), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan([]string{path}, Options{PkgPath: "main", InlineBudget: -1, ReturnExits: true, CopyBudget: DefaultCopyBudget})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Copied) == 0 || len(p.Copied) >= len(p.Funcs) {
			t.Errorf("seed %x: %d of %d functions copied, want some but not all", seed, len(p.Copied), len(p.Funcs))
		}
	}
}
