package rewrite

import (
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// typedSrc has a function for each way types change the inlining estimate.
const typedSrc = `package x

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Calls into another package that the compiler inlines: inlinable.
func affixed(s string) bool { return strings.HasPrefix(s, "p") && strings.HasSuffix(s, "q") }

type counter struct{ n atomic.Int64 }

// Methods of another package's type, through a field: inlinable.
func (c *counter) bump() int64 { return c.n.Add(1) + c.n.Load() }

type buf struct{ b []byte }

func (b *buf) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }

// Interface calls are never inlined, whatever the package's own Write:
// not inlinable.
func twice(w io.Writer, p []byte) { w.Write(p); w.Write(p) }

// Inlined calls into another package may call anything (fmt.Println
// writes to a file): not a small leaf. (An init function is never
// inlined, so only the small-leaf rule could skip it.)
func init() {
	if len(os.Args) > 5 {
		fmt.Println("many")
		fmt.Println("arguments")
	}
}

// A conversion to another package's type is not a call: no calls.
func seconds(n int64) time.Duration { return time.Duration(n) * time.Second }

type wrapped struct{ error }

// A method promoted from an embedded interface, and a method expression
// of an interface, are interface calls; error's Error belongs to no
// package: not inlinable.
func (w wrapped) message() string { return w.Error() + error.Error(w.error) }
`

// TestSelectionWithTypes plans typedSrc with and without types and checks
// the typed decisions against the compiler's own (-gcflags=-m=2).
func TestSelectionWithTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package; skipped in -short mode")
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod": "module example.com/x\n\ngo 1.24\n",
		"x.go":   typedSrc,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}", "fmt", "io", "os", "strings", "sync/atomic", "time")
	cmd.Dir = dir
	importcfg, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	plan := func(tc *TypesConfig) map[string]string {
		// The bounded rule is TestBoundedRule's: this is the inlining
		// estimate's test.
		p, err := NewPlan([]string{filepath.Join(dir, "x.go")}, Options{PkgPath: "example.com/x", Types: tc, HookBounded: true})
		if err != nil {
			t.Fatal(err)
		}
		return decisions(p)
	}
	typed := plan(&TypesConfig{Importcfg: importcfg, GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)})
	untyped := plan(nil)

	compiler, _ := compilerInline(t, dir, ".")
	line := map[string]string{
		"affixed":         declLine(typedSrc, "func affixed"),
		"(*counter).bump": declLine(typedSrc, "func (c *counter) bump"),
		"twice":           declLine(typedSrc, "func twice"),
		"wrapped.message": declLine(typedSrc, "func (w wrapped) message"),
	}
	for name, want := range map[string]struct{ typed, untyped string }{
		"affixed":         {ReasonInlinable, "instrumented"},
		"(*counter).bump": {ReasonInlinable, "instrumented"},
		"twice":           {"instrumented", ReasonInlinable},
		"wrapped.message": {"instrumented", "instrumented"},
		"seconds":         {ReasonNoCalls, ReasonInlinable},
		"init.0":          {"instrumented", "instrumented"},
	} {
		if typed[name] != want.typed {
			t.Errorf("%s with types: %q, want %q", name, typed[name], want.typed)
		}
		if untyped[name] != want.untyped {
			t.Errorf("%s without types: %q, want %q", name, untyped[name], want.untyped)
		}
		if l, ok := line[name]; ok {
			can, decided := compiler[l]
			if !decided || can != (want.typed == ReasonInlinable) {
				t.Errorf("%s: the compiler says inlinable=%v (decided %v), the typed estimate %q", name, can, decided, typed[name])
			}
		}
	}
}

// declLine returns "x.go:N", N the line of src that starts with prefix.
func declLine(src, prefix string) string {
	for i, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, prefix) {
			return "x.go:" + strconv.Itoa(i+1)
		}
	}
	return "x.go:?"
}

// TestPGOHot checks that the callees the compiler inlines at hot call
// sites lose their hooks, and only those within the hot budget.
func TestPGOHot(t *testing.T) {
	const src = `package x

import "fmt"

func warm(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += len(fmt.Sprint(i)) + len(fmt.Sprint(n))
	}
	return s
}

func cold(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += len(fmt.Sprint(i)) + len(fmt.Sprint(n))
	}
	return s
}

func deferring(n int) int {
	defer fmt.Println(n)
	return warm(n) + cold(n)
}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	hot := map[string]bool{"warm": true, "deferring": true}
	for _, withProfile := range []bool{false, true} {
		opts := Options{PkgPath: "example.com/x"}
		if withProfile {
			opts.Hot = func(name string) bool { return hot[name] }
		}
		p, err := NewPlan([]string{path}, opts)
		if err != nil {
			t.Fatal(err)
		}
		reasons := decisions(p)
		want := map[string]string{"warm": "instrumented", "cold": "instrumented", "deferring": "instrumented"}
		if withProfile {
			want["warm"] = ReasonPGOHot // hot, cost over 80 and under 2000
			// deferring is hot but has a defer: never inlined.
		}
		for name, w := range want {
			if reasons[name] != w {
				t.Errorf("profile=%v: %s: %q, want %q", withProfile, name, reasons[name], w)
			}
		}
	}
}

// decisions returns what a plan does with each function: "instrumented",
// or the reason it is skipped.
func decisions(p *Plan) map[string]string {
	reasons := map[string]string{}
	for _, s := range p.Skips {
		reasons[s.Name] = s.Reason
	}
	for _, f := range p.Funcs {
		reasons[f.Name] = "instrumented"
	}
	return reasons
}
