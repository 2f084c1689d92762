package rewrite

import (
	"go/build"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// boundedSrc holds functions the bounded rule must leave out (named
// bounded*) and functions it must keep (every other name): each of the
// latter has a loop, a goto, a go or defer statement, a select, a channel
// operation, recursion, or a call that is not proven bounded, and also a
// call to a bounded function, so that no other rule leaves it out.
const boundedSrc = `package x

import (
	"bytes"
	"io"
	"math"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

func boundedArith(x int) int {
	switch {
	case x < 0:
		return -x * 3
	case x > 1000:
		return x/7 + x%5
	}
	return x*x + 1
}

func boundedChain(x int) int { return boundedArith(x) + boundedArith(x+1)*boundedSq(x) }

func boundedSq(x int) int { return x * x }

type parser struct {
	buf []byte
	pos int
	m   map[string]int
	n   atomic.Int64
}

func (p *parser) boundedPeek() byte {
	if p.pos >= len(p.buf) {
		return 0
	}
	return p.buf[p.pos]
}

func (p *parser) boundedMethods() int {
	c := p.boundedPeek()
	p.pos++
	return int(c) + boundedSq(p.pos) + p.m["k"]
}

func boundedStd(r rune, f float64, u uint64, p *parser) int {
	return utf8.RuneLen(r) + int(math.Float64bits(f)) + bits.OnesCount64(u) + int(p.n.Load()) + int(atomic.LoadUint64(&u))
}

func boundedAffixes(s string, b []byte) bool {
	return strings.HasPrefix(s, "x") || strings.HasSuffix(s, "y") || bytes.HasPrefix(b, b[1:]) || bytes.HasSuffix(b, nil) || bytes.Equal(b, b[:1])
}

func boundedBuiltins(p *parser, b []byte) []byte {
	if len(b) > cap(p.buf) {
		panic("too long")
	}
	out := make([]byte, len(b), max(len(b), 8))
	copy(out, b)
	delete(p.m, "k")
	out = append(out, byte(min(len(b), 255)))
	var v any = out
	if s, ok := v.(string); ok {
		out = append(out, s...)
	}
	return append(out, []byte(string(rune(boundedSq(len(b)))))...)
}

func boundedLiteral(x int) int {
	return func() int { return boundedSq(x) + 1 }() + boundedSq(x)
}

func boundedGeneric[T ~int | ~int64](a, b T) T { return a*b + T(boundedSq(int(a))) }

func boundedCallsGeneric(x int) int { return boundedGeneric(x, 2) + boundedGeneric[int](x, 3) }

func forLoop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += boundedSq(i)
	}
	return s
}

func rangeLoop(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s + boundedSq(len(xs))
}

func gotoLoop(n int) int {
	s := 0
again:
	s += boundedSq(n)
	if s < 100 {
		goto again
	}
	return s
}

func goStmt(x int) { go boundedSq(x) }

func deferStmt(x int) int { defer boundedSq(x); return boundedSq(x) }

func selectStmt(ch chan int, x int) int {
	select {
	case v := <-ch:
		return v
	default:
	}
	return boundedSq(x)
}

func send(ch chan int, x int) { ch <- boundedSq(x) }

func receive(ch chan int) int { return boundedSq(<-ch) }

func closes(ch chan int, x int) int { close(ch); return boundedSq(x) }

func callsLoop(n int) int { return forLoop(n) + boundedSq(n) }

func recursive(n int) int {
	if n <= 1 {
		return boundedSq(1)
	}
	return n * recursive(n-1)
}

func even(n int) bool { return n == 0 || odd(n-1) || boundedSq(n) < 0 }

func odd(n int) bool { return n != 0 && even(n-1) }

func funcValue(f func(int) int, x int) int { return f(x) + boundedSq(x) }

func iface(w io.Writer, p []byte) int { w.Write(p); return boundedSq(len(p)) }

type embeds struct{ io.Writer }

func embedded(e embeds, p []byte) int { e.Write(p); return boundedSq(len(p)) }

func otherPackage(s string) int { return strings.IndexByte(s, 'x') + boundedSq(len(s)) }

func prints(x int) int { println(x); return boundedSq(x) }

func locks(mu *sync.Mutex, x int) int { mu.Lock(); x = boundedSq(x); mu.Unlock(); return x }

func decodes(p []byte) int { r, _ := utf8.DecodeRune(p); return int(r) + boundedSq(len(p)) }

type sizer interface{ Size() int }

func typeParamMethod[T sizer](v T) int { return v.Size() + boundedSq(1) }

func callsTypeParamMethod(p []byte) int { return typeParamMethod[embedsSizer](embedsSizer{}) + boundedSq(len(p)) }

type embedsSizer struct{}

func (embedsSizer) Size() int { return boundedSq(3) }

func literalCallsLoop(n int) int { return func() int { return forLoop(n) }() + boundedSq(n) }
`

// boundedPlan plans boundedSrc, type-checked, with the size rules off.
func boundedPlan(t *testing.T, hookBounded bool) map[string]string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"go.mod": "module example.com/x\n\ngo 1.24\n", "x.go": boundedSrc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	importcfg := listExports(t, dir, "bytes", "io", "math", "math/bits", "strings", "sync", "sync/atomic", "unicode/utf8")
	p, err := NewPlan([]string{filepath.Join(dir, "x.go")}, Options{
		PkgPath:      "example.com/x",
		InlineBudget: -1,
		HookBounded:  hookBounded,
		Types:        &TypesConfig{Importcfg: importcfg, GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return decisions(p)
}

// listExports returns the importcfg of the export data of pkgs and their
// dependencies, as a compile is given it.
func listExports(t *testing.T, dir string, pkgs ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}"}, pkgs...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	return out
}

// TestBoundedRule: a function with no loop, no goto, no go, defer or
// select, no channel operation and no call but to bounded functions is
// always left out with the reason "bounded"; one with any of these never
// is. With HookBounded, none is left out for being bounded.
func TestBoundedRule(t *testing.T) {
	if testing.Short() {
		t.Skip("lists export data with the go command; skipped in -short mode")
	}
	got := boundedPlan(t, false)
	hooked := boundedPlan(t, true)
	var n, kept int
	for name, reason := range got {
		if strings.Contains(name, ".func") {
			continue // a literal's own decision: by its body, tested below
		}
		switch base := strings.TrimPrefix(strings.TrimPrefix(name, "(*parser)."), "embedsSizer."); {
		case strings.HasPrefix(base, "bounded"):
			n++
			if reason != ReasonBounded {
				t.Errorf("%s: %q, want %q", name, reason, ReasonBounded)
			}
		case base == "Size":
			// calls boundedSq only: bounded.
			if reason != ReasonBounded {
				t.Errorf("%s: %q, want %q", name, reason, ReasonBounded)
			}
		default:
			kept++
			if reason != "instrumented" {
				t.Errorf("%s: %q, want it instrumented", name, reason)
			}
		}
		if hooked[name] == ReasonBounded {
			t.Errorf("%s: left out as bounded with HookBounded", name)
		}
	}
	if n < 10 || kept < 20 {
		t.Errorf("planned %d bounded and %d other functions, want all of the source's: %v", n, kept, got)
	}
	for name, want := range map[string]string{
		"boundedLiteral.func1":   ReasonBounded,
		"literalCallsLoop.func1": "instrumented",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	for _, name := range []string{"boundedChain", "(*parser).boundedMethods", "boundedStd"} {
		if hooked[name] != "instrumented" {
			t.Errorf("%s with HookBounded: %q, want it instrumented", name, hooked[name])
		}
	}
}

// TestBoundedStdFuncs checks the standard library functions taken as
// bounded against the installed Go's sources, by the same rule.
func TestBoundedStdFuncs(t *testing.T) {
	if testing.Short() {
		t.Skip("lists export data with the go command; skipped in -short mode")
	}
	for path, names := range boundedStdFuncs {
		bp, err := build.Import(path, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, f := range bp.GoFiles {
			files = append(files, filepath.Join(bp.Dir, f))
		}
		importcfg := listExports(t, bp.Dir, bp.Imports...)
		p, err := NewPlan(files, Options{
			PkgPath:      path,
			InlineBudget: -1,
			Types:        &TypesConfig{Importcfg: importcfg, GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := decisions(p)
		for name := range names {
			if got[name] != ReasonBounded {
				t.Errorf("%s.%s: %q, want %q: take it out of boundedStdFuncs", path, name, got[name], ReasonBounded)
			}
		}
	}
}

// prefixSrc holds functions whose bodies start with bounded guards (the
// entry hook goes after them) and functions whose first statements may not
// run before it. Each is named after what the test wants: the statements
// before the entry hook, as text without spaces, follow "want:" in its
// comment.
const prefixSrc = `package x

import "fmt"

type parser struct {
	flow, indent int
	buf          []byte
}

// want:ifp.flow>0{returntrue}
func guard(p *parser, col int) bool {
	if p.flow > 0 {
		return true
	}
	for p.indent > col {
		p.indent--
	}
	return len(fmt.Sprint(p)) > 0
}

// want:ifp==nil{return-1}p.flow=colifp.buf==nil{n=1;return}
func twoGuards(p *parser, col int) (n int) {
	if p == nil { return -1 }
	p.flow = col
	if p.buf == nil { n = 1; return }
	p.indent = 2
	return len(fmt.Sprint(p))
}

// want:switch{casep.flow>1:return2casep.flow<0:panic(p.flow)}
func guardSwitch(p *parser) int {
	switch {
	case p.flow > 1:
		return 2
	case p.flow < 0:
		panic(p.flow)
	}
	return len(fmt.Sprint(p))
}

// want:ifp==nil{return0}
func guardDefers(p *parser) int {
	if p == nil { return 0 }
	defer fmt.Sprint(p)
	return 1
}

// want:
func guardCalls(p *parser) int {
	if fmt.Sprint(p) == "" { return 0 }
	return 1
}

// want:
func guardLoops(p *parser) int {
	for i := range p.buf {
		if p.buf[i] == 0 { return i }
	}
	return len(fmt.Sprint(p))
}

// want:
func guardReceives(p *parser, ch chan int) int {
	if <-ch > 0 { return 1 }
	return len(fmt.Sprint(p))
}

// want:
func guardDeclares(p *parser) int {
	n := p.flow
	if n > 0 { return n }
	return len(fmt.Sprint(p))
}

// want:
func guardLabel(p *parser) int {
again:
	if p.flow > 0 { return 0 }
	p.flow++
	if len(fmt.Sprint(p)) > 1 { goto again }
	return 1
}

// want:
func noReturn(p *parser) int {
	p.flow = 1
	return len(fmt.Sprint(p))
}

// want:
func recovers(p *parser) {
	if r := recover(); r != nil { return }
	fmt.Println(p)
}
`

// TestBoundedPrefix: the entry hook goes after the leading statements of a
// body that are bounded, declare and label nothing and do not recover, up
// to the last of them that returns; their returns have no exit hooks. A
// loop, a call that is not bounded, a channel operation, a declaration or
// a label ends the prefix. With HookBounded there is none.
func TestBoundedPrefix(t *testing.T) {
	for _, hookBounded := range []bool{false, true} {
		p, out, _ := rewriteSourceOpts(t, prefixSrc, Options{PkgPath: "example.com/x", InlineBudget: -1, ReturnExits: true, HookBounded: hookBounded})
		ids := make([]uint32, len(p.Funcs))
		for i := range ids {
			ids[i] = uint32(i + 1) // as rewriteSourceOpts numbers them
		}
		if !typeChecks(map[string][]byte{"x.go": out, HooksFileName: p.HooksFile(ids)}) {
			t.Fatalf("rewritten file does not type-check\n%s", out)
		}
		text := regexp.MustCompile(`/\*line [^*]*\*/|\s`).ReplaceAllString(string(out), "")
		n := 0
		for _, m := range regexp.MustCompile(`// want:(.*)\nfunc (\w+)\(`).FindAllStringSubmatch(prefixSrc, -1) {
			want, name := m[1], m[2]
			if hookBounded {
				want = ""
			}
			n++
			at := strings.Index(text, "func"+name+"(")
			if at < 0 {
				t.Fatalf("%s not in the rewritten file\n%s", name, out)
			}
			body := text[at+strings.Index(text[at:], "{")+1:]
			entry := strings.Index(body, "if__matrix_on.v!=0{")
			if entry < 0 {
				t.Errorf("%s (HookBounded %v): no entry hook\n%s", name, hookBounded, out)
				continue
			}
			got := strings.TrimSuffix(body[:entry], ";")
			if got != want {
				t.Errorf("%s (HookBounded %v): %q before the entry hook, want %q", name, hookBounded, got, want)
			}
			if want != "" && strings.Contains(got, "__matrix") {
				t.Errorf("%s: hooks in the prefix %q", name, got)
			}
		}
		if n != 11 || len(p.Funcs) != 11 {
			t.Errorf("checked %d functions of %d instrumented, want 11", n, len(p.Funcs))
		}
	}
}
