package rewrite

import (
	"regexp"
	"testing"
)

func TestGrowth(t *testing.T) {
	const src = `package x

import "fmt"

// Greet prints a greeting: instrumented, with a hook-free copy.
func Greet(name string) (n int, err error) {
	if name == "" {
		return fmt.Println("hello!")
	}
	/*line greet.go:100*/ return fmt.Println("hello,", name, "!")
}

func Add(a, b int) int { return a + b } // inlinable: left alone
`
	opts := Options{PkgPath: "example.com/x", ReturnExits: true, CopyBudget: DefaultCopyBudget}
	p, out, _ := rewriteSourceOpts(t, src, opts)
	if len(p.Copied) != 1 {
		t.Fatalf("copied %q, want Greet", p.Copied)
	}
	directive := regexp.MustCompile(`/\*line [^*]*\*/`)
	added := len(directive.ReplaceAll(out, nil)) - len(directive.ReplaceAllString(src, ""))
	want := float64(added) / float64(len(src))
	if got := p.Growth([]Output{{Src: out}}); got != want || got <= 0 {
		t.Errorf("growth %v, want %v (%d bytes added to %d, line directives not counted)", got, want, added, len(src))
	}
	if got := p.Growth([]Output{{}}); got != 0 {
		t.Errorf("growth of unchanged files %v, want 0", got)
	}

	// A package with nothing to instrument does not grow.
	p, out, _ = rewriteSourceOpts(t, "package x\n\nfunc Add(a, b int) int { return a + b }\n", opts)
	if got := p.Growth([]Output{{Src: out}}); out != nil || got != 0 {
		t.Errorf("uninstrumented package: output %q, growth %v", out, got)
	}
}
