package rewrite

import (
	"regexp"
	"strings"
	"testing"
)

// TestExitModes checks which functions get exits at their returns and
// which keep a deferred exit hook, with the reason, and what a return
// becomes.
func TestExitModes(t *testing.T) {
	const src = `package main

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
		"unnamed": "", "named": "", "falls": "", "withGoto": "",
		"defers":   ReasonDeferredExit + ":" + DeferDefer,
		"recovers": ReasonDeferredExit + ":" + DeferRecover,
		"blank":    ReasonDeferredExit + ":" + DeferBlankResult,
		"shadow":   ReasonDeferredExit + ":" + DeferShadowedResult,
		"main":     ReasonDeferredExit + ":" + DeferOnce,
		"init.0":   ReasonDeferredExit + ":" + DeferOnce,
	} {
		if deferred[name] != want {
			t.Errorf("%s: %q, want %q", name, deferred[name], want)
		}
	}
	text := string(out)
	for _, re := range []string{
		// Unnamed results are named; the results are assigned, the exit
		// recorded, then the bare return at the original position.
		`func unnamed\(x int\) \(__matrix_r0 /\*line [^*]*\*/int, __matrix_r1 /\*line [^*]*\*/error\) \{__matrix_e := __matrix_on\.v != 0 && __matrix_i\(1\); `,
		`__matrix_r0, __matrix_r1 =/\*line [^*]*x\.go:7:9\*/ fmt\.Println\(x, x, x\); if __matrix_e \{ __matrix_o\(1\) \}; /\*line [^*]*x\.go:7:3\*/return`,
		// Named results are assigned; a bare return gets the exit before it.
		`n, err =/\*line [^*]*\*/ fmt\.Println\(n, x, x\); if __matrix_e \{ __matrix_o\(2\) \}; /\*line [^*]*\*/return`,
		`if n > 3 \{ if __matrix_e \{ __matrix_o\(2\) \}; /\*line [^*]*x\.go:14:13\*/return \}`,
		// Falling off the end records the exit before the closing brace.
		`fmt\.Println\(x, x\) ; if __matrix_e \{ __matrix_o\(3\) \}; /\*line [^*]*\*/\}`,
		`func defers\(x int\) int \{if __matrix_on\.v != 0 && __matrix_i\(4\) \{ defer __matrix_o\(4\) \}`,
		// goto is fine: nothing is declared after the entry.
		`again:\n\tr \+= len\(fmt\.Sprint\(x, r\)\)\n\tif r < 10 \{ goto again \}\n\tif __matrix_e \{ __matrix_o\(8\) \}; /\*line [^*]*\*/return`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("rewritten file does not match %s\n%s", re, text)
		}
	}
	if n := strings.Count(text, "defer __matrix_o"); n != 6 {
		t.Errorf("%d deferred exit hooks, want 6 (defers, recovers, blank, shadow, main, init)\n%s", n, text)
	}
}
