package rewrite

import (
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewriteSource plans and applies the rewrite of one file with ids 1..n.
func rewriteSource(t testing.TB, src string) (*Plan, []byte, string) {
	t.Helper()
	return rewriteSourceMode(t, src, false)
}

// rewriteSourceMode is rewriteSource with exits recorded at the returns
// (returns) or deferred.
func rewriteSourceMode(t testing.TB, src string, returns bool) (*Plan, []byte, string) {
	t.Helper()
	return rewriteSourceOpts(t, src, Options{PkgPath: "example.com/x", ReturnExits: returns})
}

// rewriteSourceOpts plans, with opts, and applies the rewrite of one file
// with ids 1..n.
func rewriteSourceOpts(t testing.TB, src string, opts Options) (*Plan, []byte, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan([]string{path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint32, len(p.Funcs))
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	out, err := p.Apply(ids)
	if err != nil {
		t.Fatal(err)
	}
	return p, out[0].Src, path
}

type tok struct {
	tok token.Token
	lit string
	pos token.Position
}

// tokens scans src and returns its tokens with positions adjusted by line
// directives, as the compiler reports them.
func tokens(t testing.TB, name string, src []byte) []tok {
	fset := token.NewFileSet()
	f := fset.AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(f, src, nil, 0)
	var out []tok
	for {
		pos, tk, lit := s.Scan()
		if tk == token.EOF {
			return out
		}
		if tk == token.SEMICOLON && lit == "\n" {
			continue
		}
		ps := fset.Position(pos)
		ps.Offset = 0 // offsets differ by construction; positions must not
		out = append(out, tok{tk, lit, ps})
	}
}

// checkPositions asserts that every token of the original is found, in
// order, in the rewritten file at the same file:line:column. A return
// keyword with results is emitted after them (see exits.go): it is looked
// for, at its own position, anywhere after the tokens that precede it.
func checkPositions(t testing.TB, path string, orig, rewritten []byte) {
	t.Helper()
	checkPositionsAt(t, path, filepath.Join(filepath.Dir(path), "rewritten.go"), orig, rewritten)
}

// checkPositionsAt is checkPositions with the rewritten file read as at
// rewrittenPath: its relative line directives resolve against that
// directory.
func checkPositionsAt(t testing.TB, path, rewrittenPath string, orig, rewritten []byte) {
	t.Helper()
	want := tokens(t, path, orig)
	got := tokens(t, rewrittenPath, rewritten)
	j := 0
	for _, w := range want {
		if w.tok == token.LAND {
			// An && that guards a return becomes nested ifs (see
			// splitEdits): the operands keep their positions.
			continue
		}
		if w.tok == token.RETURN {
			k := j
			// A return becomes a goto, at its position, where a
			// function has one exit site.
			for k < len(got) && (got[k].tok != w.tok && got[k].tok != token.GOTO || got[k].pos != w.pos) {
				k++
			}
			if k == len(got) {
				t.Fatalf("return at %v not found in the rewritten file\n%s", w.pos, rewritten)
			}
			continue
		}
		// A result named _ is renamed in place.
		same := func(g tok) bool {
			return g.tok == w.tok && g.pos == w.pos && (g.lit == w.lit || w.lit == "_" && strings.HasPrefix(g.lit, resultPrefix))
		}
		for j < len(got) && !same(got[j]) {
			if got[j].pos.Filename == w.pos.Filename && got[j].pos.Line > w.pos.Line {
				t.Fatalf("token %v %q at %v not found in the rewritten file\n%s", w.tok, w.lit, w.pos, rewritten)
			}
			j++
		}
		if j == len(got) {
			t.Fatalf("token %v %q at %v not found in the rewritten file\n%s", w.tok, w.lit, w.pos, rewritten)
		}
		j++
	}
}

const sample = `package x

import "fmt"

type T struct{ n int }

func (t *T) Get() int { return t.n }

func (t *T) Set(n int) { t.n = n }

func leaf(a, b int) int { return a*b + a }

func OneLine() string { s := fmt.Sprint(1); return fmt.Sprintf("%s-%s-%s", s, s, fmt.Sprint(2)) }

func Multi(xs []int) (n int) {
	defer func() { n += len(fmt.Sprint(recover())) }()
	for _, x := range xs { n += x; fmt.Print(x); fmt.Print(x, n); fmt.Print(n, x, x) }
	go func() { fmt.Println("bg"); fmt.Println("bg2") }()
	return
}

//go:nosplit
func pragma() { fmt.Println(1); fmt.Println(2); fmt.Println(3) }

func conv(x int) int64 { return int64(x) + int64(T{}.n) }

//line generated.y:100
func Generated() { fmt.Println("a", 1, 2); fmt.Println("b", 1, 2); fmt.Println("c") }

/*line other.y:7:3*/func Shifted() { fmt.Println("a", 1, 2); fmt.Println("b", 1, 2); fmt.Println("c") }
`

func TestRewriteKeepsPositions(t *testing.T) {
	p, out, path := rewriteSource(t, sample)
	checkPositions(t, path, []byte(sample), out)
	if _, err := parser.ParseFile(token.NewFileSet(), "out.go", out, 0); err != nil {
		t.Fatalf("rewritten file does not parse: %v\n%s", err, out)
	}
	var names []string
	for _, f := range p.Funcs {
		names = append(names, f.Name+"@"+filepath.Base(f.Pos))
	}
	want := "OneLine@x.go:13 Multi@x.go:15 Multi.func1@x.go:16 Multi.func2@x.go:18 Generated@generated.y:100 Shifted@other.y:7"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("instrumented:\n got %s\nwant %s", got, want)
	}
	reasons := map[string]string{}
	for _, s := range p.Skips {
		reasons[s.Name] = s.Reason
	}
	for name, want := range map[string]string{
		"(*T).Get": ReasonTrivial, "(*T).Set": ReasonTrivial, "leaf": ReasonBounded,
		"pragma": "pragma:go:nosplit", "conv": ReasonBounded,
	} {
		if reasons[name] != want {
			t.Errorf("%s skipped for %q, want %q", name, reasons[name], want)
		}
	}
}

func TestRewriteUnparsableFileUntouched(t *testing.T) {
	p, out, _ := rewriteSource(t, "package x\nfunc F() { fmt.Println(\n")
	if len(p.Funcs) != 0 || out != nil {
		t.Fatalf("a file that does not parse was rewritten: %d funcs, %q", len(p.Funcs), out)
	}
}

func TestNames(t *testing.T) {
	src := `package x

import "fmt"

type L[T any] struct{ v []T }

func (l *L[T]) Push(v T) { l.v = append(l.v, v); fmt.Sprint(v, 1, 2, 3, 4); fmt.Sprint(v, 1, 2, 3, 4) }
func (l L[T]) Show() string { return fmt.Sprint(l.v, 1, 2, 3) + fmt.Sprint(l.v, 1, 2, 3) }
func Map[T, U any](xs []T, f func(T) U) { for _, x := range xs { fmt.Sprint(f(x), 1, 2); fmt.Sprint(1, 2, 3) } }
func init() { fmt.Println(1) }
func init() { func() { func() { fmt.Println(2) }() }() }
var V = func() int { fmt.Println(3); return 3 }()
type P struct{}
func (p *(P)) Paren() { fmt.Println(p, 1, 2, 3); fmt.Println(p, 4, 5, 6) }
func (p ((P))) Twice() { fmt.Println(p, 1, 2, 3); fmt.Println(p, 4, 5, 6) }
`
	p, _, _ := rewriteSource(t, src)
	var names []string
	for _, f := range p.Funcs {
		names = append(names, f.Kind+":"+f.Name)
	}
	// Parenthesised receivers are named as the compiler names them.
	want := "method:(*L[...]).Push method:L[...].Show func:Map[...] init:init.0 init:init.1 closure:init.1.func1 closure:init.1.func1.1 closure:glob..func1 method:(*P).Paren method:P.Twice"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names:\n got %s\nwant %s", got, want)
	}
}

// TestSelection checks which functions get hooks: inlinable ones and small
// leaves are skipped, and //go:noinline functions are not inlinable.
func TestSelection(t *testing.T) {
	const src = `package x

import "os"

func skip(s string) string {
	if len(s) == 0 || s[0] > 0x20 {
		return s
	}
	return skipSlow(s)
}

func skipSlow(s string) string {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	return s
}

// A small leaf over the inline budget: only cheap calls, no loop.
func classify(b byte, s string) int {
	s = skip(s)
	switch {
	case b == 'a' && len(s) > 3 && s[1] == 'x' && s[2] == 'y':
		return 1 + len(s)*2 + int(s[0])
	case b == 'b' && len(s) > 5 && s[3] == 'q' && s[4] == 'r':
		return 2 + len(s)*3 + int(s[1])
	case b == 'c' && len(s) > 7 && s[5] == 'z' && s[6] == 'w':
		return 3 + len(s)*4 + int(s[2])
	}
	panic("bad")
}

// The same shape with a loop is not a leaf.
func loops(b byte, s string) int {
	s = skip(s)
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == b { n += i*2 + int(s[0]) + len(s)*3 }
	}
	switch {
	case b == 'a' && len(s) > 3 && s[1] == 'x' && s[2] == 'y':
		return n + len(s)*2 + int(s[0])
	}
	return n
}

// A call that is not inlined (another package) keeps the hook.
func opens(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	return f.Close()
}

//go:noinline
func marked(s string) error { return os.Remove(s) }

func unmarked(s string) error { return os.Remove(s) }
`
	p, _, _ := rewriteSource(t, src)
	reasons := decisions(p)
	for name, want := range map[string]string{
		"skip":     ReasonInlinable,
		"skipSlow": ReasonNoCalls,
		"classify": ReasonSmallLeaf,
		"loops":    "instrumented",
		"opens":    "instrumented",
		"marked":   "instrumented", // not inlinable, and os.Remove is a real call
		"unmarked": ReasonInlinable,
	} {
		if reasons[name] != want {
			t.Errorf("%s: %q, want %q", name, reasons[name], want)
		}
	}
}
