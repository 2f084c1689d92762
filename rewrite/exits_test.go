package rewrite

import (
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestExitModes checks which functions get exits at their returns and
// which keep a deferred exit hook, with the reason, and what a return
// becomes.
func TestExitModes(t *testing.T) {
	src := `package main

import "fmt"

func unnamed(x int) (int, error) {
	if x > 0 {
		return fmt.Println(x, x, x)
	}
	return len(fmt.Sprint(x, x, x)), nil
}

func named(x int) (n int, err error) {
	n = len(fmt.Sprint(x, x, x))
	if n > 3 { return }
	return fmt.Println(n, x, x)
}

func falls(x int) { fmt.Println(x, x, x); fmt.Println(x, x) }

func defers(x int) int { defer fmt.Println(x, x); return len(fmt.Sprint(x, x, x)) }

func recovers() { if r := recover(); r != nil { fmt.Println(r, r, r) } }

func blank(x int) (_ int, err error) { fmt.Println(x, x, x); return 1, nil }

func shadow(x int) (err error) {
	if x > 0 { err := fmt.Errorf("%d", x); return err }
	return fmt.Errorf("%d %d", x, x)
}

func withGoto(x int) (r int) {
again:
	r += len(fmt.Sprint(x, r))
	if r < 10 { goto again }
	return
}

func main() { fmt.Println(unnamed(1)); fmt.Println(named(2)) }

func init() { fmt.Println(1, 2, 3) }

func many(x int) int {
	switch x {
` + manyCases(MaxExitReturns) + `	}
	return -1
}
`
	// Every function with calls is instrumented (-inline-budget -1).
	p, out, path := rewriteSourceOpts(t, src, Options{PkgPath: "main", InlineBudget: -1, ReturnExits: true})
	ids := make([]uint32, len(p.Funcs))
	for i := range ids {
		ids[i] = uint32(i + 1) // as rewriteSourceOpts numbers them
	}
	checkPositions(t, path, []byte(src), out)
	if !typeChecks(map[string][]byte{"x.go": out, HooksFileName: p.HooksFile(ids)}) {
		t.Fatalf("rewritten file does not type-check\n%s", out)
	}
	deferred := map[string]string{}
	for _, d := range p.Deferred {
		deferred[d.Name] = d.Reason
	}
	for name, want := range map[string]string{
		"unnamed": "", "named": "", "falls": "", "withGoto": "", "blank": "", "shadow": "", "many": "",
		"defers":   ReasonDeferredExit + ":" + DeferDefer,
		"recovers": ReasonDeferredExit + ":" + DeferRecover,
		"main":     ReasonDeferredExit + ":" + DeferOnce,
		"init.0":   ReasonDeferredExit + ":" + DeferOnce,
	} {
		if deferred[name] != want {
			t.Errorf("%s: %q, want %q", name, deferred[name], want)
		}
	}
	text := string(out)
	for _, re := range []string{
		// Unnamed results are named; the results are assigned, then a
		// return at the original position if the recorder is off, else
		// the exit and the same return (see "The path that does not
		// record").
		`func unnamed\(x int\) \(__matrix_r0 /\*line [^*]*\*/int, __matrix_r1 /\*line [^*]*\*/error\) \{if __matrix_on\.v != 0 \{ __matrix_i\(1\) \}; /`,
		`__matrix_r0, __matrix_r1 =/\*line [^*]*x\.go:7:9\*/ fmt\.Println\(x, x, x\); if __matrix_on\.v == 0 \{ /\*line [^*]*x\.go:7:3\*/return \}; __matrix_o\(1\); /\*line [^*]*x\.go:7:3\*/return`,
		// Named results are assigned; a bare return becomes the exit site.
		`n, err =/\*line [^*]*\*/ fmt\.Println\(n, x, x\); if __matrix_on\.v == 0 \{ /\*line [^*]*\*/return \}; __matrix_o\(2\); /\*line [^*]*\*/return`,
		`if n > 3 \{ if __matrix_on\.v == 0 \{ /\*line [^*]*x\.go:14:13\*/return \}; __matrix_o\(2\); /\*line [^*]*x\.go:14:13\*/return/\*line [^*]*\*/ \}`,
		// Falling off the end records the exit before the closing brace,
		// and returns there.
		`fmt\.Println\(x, x\) ; if __matrix_on\.v == 0 \{ /\*line [^*]*x\.go:18:61\*/return \}; __matrix_o\(3\); /\*line [^*]*x\.go:18:61\*/return/\*line [^*]*\*/\}`,
		// A function that defers keeps a deferred exit hook, its test of
		// the flag an if of its own: as "on && enter", the compiler built
		// the &&'s boolean and tested it again on every call.
		`func defers\(x int\) int \{if __matrix_on\.v != 0 \{ if __matrix_i\(4\) \{ defer __matrix_o\(4\) \} \}; `,
		// A result named _ is named, in place, so that the return can
		// assign it; one return is its own exit site.
		`func blank\(x int\) \(__matrix_r0/\*line [^*]*x\.go:24:21\*/ int, err error\) \{if __matrix_on\.v != 0 \{ __matrix_i\(6\) \}; /\*line [^*]*\*/ fmt\.Println\(x, x, x\); __matrix_r0, err =/\*line [^*]*\*/ 1, nil; if __matrix_on\.v == 0 \{ /\*line [^*]*x\.go:24:62\*/return \}; __matrix_o\(6\); /\*line [^*]*x\.go:24:62\*/return`,
		// A result declared again: the returns assign temporaries
		// declared at entry, and return them.
		`func shadow\(x int\) \(err error\) \{if __matrix_on\.v != 0 \{ __matrix_i\(7\) \}; __matrix_t0 := err; /`,
		`\{ err := fmt\.Errorf\("%d", x\); __matrix_t0 =/\*line [^*]*\*/ err; if __matrix_on\.v == 0 \{ /\*line [^*]*x\.go:27:41\*/return __matrix_t0 \}; __matrix_o\(7\); /\*line [^*]*x\.go:27:41\*/return __matrix_t0/\*line [^*]*\*/ \}`,
		`__matrix_t0 =/\*line [^*]*x\.go:28:8\*/ fmt\.Errorf\("%d %d", x, x\); if __matrix_on\.v == 0 \{ /\*line [^*]*x\.go:28:2\*/return __matrix_t0 \}; __matrix_o\(7\); /\*line [^*]*x\.go:28:2\*/return __matrix_t0`,
		// More than MaxExitReturns returns: one exit site, after the
		// body, which the returns reach by goto at their positions.
		`func many\(x int\) \(__matrix_r0 /\*line [^*]*\*/int\)/\*line [^*]*\*/ \{if __matrix_on\.v != 0 \{ __matrix_i\(11\) \}; \{ `,
		`\t\t__matrix_r0 =/\*line [^*]*\*/ len\(fmt\.Sprint\(x, 3\)\); /\*line [^*]*x\.go:51:3\*/goto __matrix_x/\*line [^*]*\*/\n`,
		`\}; __matrix_x: if __matrix_on\.v == 0 \{ /\*line [^*]*\*/return \}; __matrix_o\(11\); /\*line [^*]*\*/return/\*line [^*]*\*/\}`,
		// goto is fine: nothing is declared after the entry.
		`again:\n\tr \+= len\(fmt\.Sprint\(x, r\)\)\n\tif r < 10 \{ goto again \}\n\tif __matrix_on\.v == 0 \{ /\*line [^*]*\*/return \}; __matrix_o\(8\); /\*line [^*]*\*/return`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("rewritten file does not match %s\n%s", re, text)
		}
	}
	// An exit site at each return, but for a function with very many.
	for id, want := range map[int]int{1: 2, 2: 2, 6: 1, 7: 2, 8: 1, 11: 1} {
		if n := strings.Count(text, fmt.Sprintf("__matrix_o(%d)", id)); n != want {
			t.Errorf("function %d: %d exit sites, want %d", id, n, want)
		}
	}
	if n := strings.Count(text, "defer __matrix_o"); n != 4 {
		t.Errorf("%d deferred exit hooks, want 4 (defers, recovers, main, init)\n%s", n, text)
	}
}

// manyCases returns n+1 cases that return.
func manyCases(n int) string {
	var b strings.Builder
	for i := range n + 1 {
		fmt.Fprintf(&b, "\tcase %d:\n\t\treturn len(fmt.Sprint(x, %d))\n", i, i)
	}
	return b.String()
}

// TestCopyMode checks which functions keep a hook-free copy of their body
// (Options.CopyBudget) and what the two copies look like: the original body
// untouched under the recorder's flag, the recording copy with its labels
// renamed, every position kept.
func TestCopyMode(t *testing.T) {
	const src = `package main

import "fmt"

func small(x int) (int, error) {
	if x > 0 {
		return fmt.Println(x, x, x)
	}
	return len(fmt.Sprint(x, x, x)), nil
}

func labels(x int) (r int) {
again:
	r += len(fmt.Sprint(x, r))
	if r < 10 { goto again }
outer:
	for i := 0; i < x; i++ {
		for j := 0; j < i; j++ {
			if j == 3 { continue outer }
			if j == 5 { break outer }
		}
	}
	return
}

func falls(x int) { fmt.Println(x, x, x); fmt.Println(x, x) }

func closure(x int) int { f := func() int { return x + len(fmt.Sprint(x)) }; return f() + len(fmt.Sprint(x)) }

func starts(x int) { go fmt.Println(x); fmt.Println(x, x) }

func local(x int) any { type T struct{ n int }; fmt.Println(x); return T{x} }

func big(x int) {
	fmt.Println(x, 1); fmt.Println(x, 2); fmt.Println(x, 3); fmt.Println(x, 4)
	fmt.Println(x, 5); fmt.Println(x, 6); fmt.Println(x, 7); fmt.Println(x, 8)
}

func main() { fmt.Println(small(1)); fmt.Println(labels(2)) }
`
	p, out, path := rewriteSourceOpts(t, src, Options{PkgPath: "main", InlineBudget: -1, ReturnExits: true, CopyBudget: DefaultCopyBudget})
	ids := make([]uint32, len(p.Funcs))
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	checkPositions(t, path, []byte(src), out)
	if !typeChecks(map[string][]byte{"x.go": out, HooksFileName: p.HooksFile(ids)}) {
		t.Fatalf("rewritten file does not type-check\n%s", out)
	}
	if got, want := strings.Join(p.Copied, " "), "small labels falls closure.func1"; got != want {
		t.Errorf("copied %q, want %q", got, want)
	}
	text := string(out)
	for _, re := range []string{
		// The original body, untouched, runs while the recorder is off;
		// the recording copy follows with the entry and exits.
		`func small\(x int\) \(__matrix_r0 /\*line [^*]*\*/int, __matrix_r1 /\*line [^*]*\*/error\) \{if __matrix_on\.v == 0 \{/\*line [^*]*x\.go:5:33\*/\n\tif x > 0 \{\n\t\treturn fmt\.Println\(x, x, x\)\n\t\}\n\treturn len\(fmt\.Sprint\(x, x, x\)\), nil\n\} else \{var __matrix_e bool; __matrix_e, x = __matrix_in0\(1, x\); /\*line [^*]*x\.go:5:33\*/\n\tif x > 0 \{\n\t\t__matrix_r0, __matrix_r1 =/\*line [^*]*x\.go:7:9\*/ fmt\.Println\(x, x, x\); if __matrix_e \{ __matrix_o\(1\) \}; /\*line [^*]*x\.go:7:3\*/return`,
		`\}/\*line [^*]*x\.go:10:1\*/\}\n`,
		// Labels of the copy are renamed, with their uses.
		`__matrix_Lagain/\*line [^*]*x\.go:13:6\*/:`,
		`goto __matrix_Lagain/\*line [^*]*x\.go:15:24\*/ \}`,
		`continue __matrix_Louter/\*line [^*]*\*/ \}`,
		`break __matrix_Louter/\*line [^*]*\*/ \}`,
		// The original keeps its labels.
		`\nagain:\n\tr \+= len`,
		// Falling off the end: the copy records the exit.
		`func falls\(x int\) \{if __matrix_on\.v == 0 \{/\*line [^*]*\*/ fmt\.Println\(x, x, x\); fmt\.Println\(x, x\) \} else \{var __matrix_e bool; __matrix_e, x = __matrix_in0\(3, x\); `,
		// The copies pass their parameters through one enter helper
		// per signature, declared at the end of the file.
		`\n//go:noinline\nfunc __matrix_in0\(id uint32, a0 int\) \(bool, int\) \{ return __matrix_i\(id\), a0 \}\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("rewritten file does not match %s\n%s", re, text)
		}
	}
	// Not copied: a function with a closure (the closure itself is), a
	// go statement, a type declaration, or over the budget.
	for _, name := range []string{"closure", "starts", "local", "big"} {
		re := regexp.MustCompile(`func ` + name + `\(x int\)[^{]*\{if __matrix_on\.v != 0 \{ __matrix_i\(`)
		if !re.MatchString(text) {
			t.Errorf("%s: want exits at the returns without a copy\n%s", name, text)
		}
	}
}

// TestCopyRanges: a range over a function is a function literal to the
// compiler (the loop body becomes one, numbered per function), so a body
// with one is not copied; ranges over slices, maps and integers are. Types
// tell them apart; without types every range over a variable is taken for
// one over a function.
func TestCopyRanges(t *testing.T) {
	if testing.Short() {
		t.Skip("loads export data with go list; skipped in -short mode")
	}
	const src = `package x

import (
	"fmt"
	"iter"
	"maps"
)

type list struct{ v []int }

func (l *list) All() iter.Seq[int] { return func(yield func(int) bool) { for _, x := range l.v { if !yield(x) { return } } } }

func overSlice(xs []int) { for _, x := range xs { fmt.Println(x, x) }; fmt.Println(xs) }

func overInt(n int) { for i := range n { fmt.Println(i, n) }; fmt.Println(n) }

func overMap(m map[string]int) { for k := range m { fmt.Println(k, m) }; fmt.Println(m) }

func overSeq(seq iter.Seq[int]) { for x := range seq { fmt.Println(x, x) }; fmt.Println(seq) }

func overCall(m map[string]int) { for k := range maps.Keys(m) { fmt.Println(k, m) }; fmt.Println(m) }

func overMethod(l *list) { for x := range l.All() { fmt.Println(x, l) }; fmt.Println(l) }
`
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}", "fmt", "iter", "maps")
	importcfg, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	for _, tc := range []struct {
		types *TypesConfig
		want  string
	}{
		{&TypesConfig{Importcfg: importcfg, GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)}, "(*list).All.func1 overSlice overInt overMap"},
		{nil, ""},
	} {
		p, err := NewPlan([]string{path}, Options{PkgPath: "example.com/x", InlineBudget: -1, ReturnExits: true, CopyBudget: DefaultCopyBudget, Types: tc.types})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.Copied, " "); got != tc.want {
			t.Errorf("typed %v: copied %q, want %q", tc.types != nil, got, tc.want)
		}
	}
}

// TestSplitConditions: outside a hook-free copy, an if statement without
// else whose condition is a chain of && and whose body returns becomes
// nested ifs, one per operand, at the operands' positions (see
// splitEdits); others are left alone.
func TestSplitConditions(t *testing.T) {
	src := `package x

import "fmt"

func f(a, b int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func guarded(x int) int {
	if x > 0 && f(x, 1) { return 1 }
	if v := x * 2; v > 3 && f(v, x) && f(x, v) {
		fmt.Println(v)
		return v
	}
	if x > 1 && f(x, 2) { fmt.Println(x) } else { return 2 }
	if x > 2 || f(x, 3) { return 3 }
	if x > 3 && f(x, 4) { fmt.Println(x) }
	return len(fmt.Sprint(x, x, x))
}
`
	p, out, path := rewriteSourceOpts(t, src, Options{PkgPath: "example.com/x", InlineBudget: -1, ReturnExits: true})
	ids := make([]uint32, len(p.Funcs))
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	checkPositions(t, path, []byte(src), out)
	if !typeChecks(map[string][]byte{"x.go": out, HooksFileName: p.HooksFile(ids)}) {
		t.Fatalf("rewritten file does not type-check\n%s", out)
	}
	text := string(out)
	for _, re := range []string{
		`if x > 0 \{ if/\*line [^*]*x\.go:8:13\*/ f\(x, 1\) \{ __matrix_r0 =[^\n]*return/\*line [^*]*\*/ \} \}/\*line [^*]*x\.go:8:34\*/\n`,
		`if v := x \* 2; v > 3 \{ if/\*line [^*]*x\.go:9:25\*/ f\(v, x\) \{ if/\*line [^*]*x\.go:9:36\*/ f\(x, v\) \{\n`,
		`\n\t\} \} \}/\*line [^*]*x\.go:12:3\*/\n`,
		// An else, an || or a body without a return: unchanged.
		`if x > 1 && f\(x, 2\) \{ fmt\.Println\(x\) \} else \{`,
		`if x > 2 \|\| f\(x, 3\) \{`,
		`if x > 3 && f\(x, 4\) \{ fmt\.Println\(x\) \}\n`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("rewritten file does not match %s\n%s", re, text)
		}
	}
	// A hook-free copy keeps the original body, && and all.
	_, out, _ = rewriteSourceOpts(t, src, Options{PkgPath: "example.com/x", InlineBudget: -1, ReturnExits: true, CopyBudget: 1000})
	if n := strings.Count(string(out), "&&"); n != 2*5 {
		t.Errorf("with a copy: %d &&, want 10 (5 in each copy)\n%s", n, out)
	}
}
