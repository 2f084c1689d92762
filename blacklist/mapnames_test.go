package blacklist_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/rewrite"
)

// mapNames are the function names the mapping file holds (see
// rewrite/names.go), each with the forms a user may write in a rule.
var mapNames = []struct {
	name  string   // as in the map
	rules []string // rule spellings (without the package) that name it
}{
	{"Run", []string{"Run"}},
	{"main", []string{"main"}},
	{"_", []string{"_"}},
	{"Map[...]", []string{"Map[...]", "Map[T]", "Map[K,V]"}},
	{"(*T).M", []string{"(*T).M"}},
	{"T.M", []string{"T.M", "(T).M"}},
	{"(*List[...]).Push", []string{"(*List[...]).Push", "(*List[T]).Push"}},
	{"List[...].Len", []string{"List[...].Len", "List[T].Len", "(List[T]).Len", "(List[...]).Len"}},
	{"Run.func1", []string{"Run.func1"}},
	{"Run.func1.2", []string{"Run.func1.2"}},
	{"Map[...].func1", []string{"Map[...].func1", "Map[T].func1"}},
	{"(*T).M.func1", []string{"(*T).M.func1"}},
	{"T.M.func2", []string{"T.M.func2", "(T).M.func2"}},
	{"(*List[...]).Push.func1.1", []string{"(*List[E]).Push.func1.1"}},
	{"init.0", []string{"init.0"}},
	{"init.1.func1", []string{"init.1.func1"}},
	{"init.1.func1.1", []string{"init.1.func1.1"}},
	{"glob..func1", []string{"glob..func1"}},
	{"glob..func2", []string{"glob..func2"}},
	{"glob..func12.3", []string{"glob..func12.3"}},
	// Methods with type parameters of their own (Go 1.27 on).
	{"(*Set).Map[...]", []string{"(*Set).Map[...]", "(*Set).Map[U]"}},
	{"Set.Pair[...]", []string{"Set.Pair[...]", "Set.Pair[K,V]", "(Set).Pair[K,V]"}},
	{"Set.Pair[...].func1", []string{"Set.Pair[...].func1", "(Set).Pair[K,V].func1"}},
	{"(*Box[...]).Conv[...]", []string{"(*Box[...]).Conv[...]", "(*Box[T]).Conv[U]"}},
	// Function literals in the body of a range over a function (Go 1.27
	// on).
	{"Run-range1.1", []string{"Run-range1.1"}},
	{"Run-range1-range2.1", []string{"Run-range1-range2.1"}},
	{"Run.func3-range1.2", []string{"Run.func3-range1.2"}},
	{"Map[...]-range1.1", []string{"Map[...]-range1.1", "Map[T]-range1.1"}},
	{"(*T).M-range1.1.1", []string{"(*T).M-range1.1.1"}},
}

// TestEveryMapNameCanBeKept: for every kind of name in the map, each rule
// spelling parses and keeps exactly that function, in packages with and
// without dots in their last element.
func TestEveryMapNameCanBeKept(t *testing.T) {
	for _, pkg := range []struct{ path, written string }{
		{"example.com/p", "example.com/p"},
		{"main", "main"},
		{"gopkg.in/yaml.v3", "gopkg.in/yaml%2ev3"},
	} {
		for _, n := range mapNames {
			for _, rule := range n.rules {
				src := "-keepfunc " + pkg.written + "." + rule + "\n"
				r, err := blacklist.Parse("test.blacklist", []byte(src))
				if err != nil {
					t.Errorf("%s: %v", strings.TrimSpace(src), err)
					continue
				}
				for _, other := range mapNames {
					ok, reason := r.Func(pkg.path, other.name)
					if keep := other.name == n.name; ok == keep || keep && reason != blacklist.ReasonKeepFunc {
						t.Errorf("%s: Func(%s, %s) = %v, %q", strings.TrimSpace(src), pkg.path, other.name, ok, reason)
					}
				}
				// The canonical form names the function as the map does.
				if want := "-keepfunc " + pkg.written + "." + n.name + "\n"; r.String() != want {
					t.Errorf("%s: String() = %q, want %q", strings.TrimSpace(src), r.String(), want)
				}
			}
		}
	}
}

const namesSrc = `package p

import "fmt"

var hook = func() { fmt.Println("glob1"); fmt.Println("x") }

var table = []func(){
	func() { fmt.Println("glob2"); func() { fmt.Println("nested") }() },
}

type T struct{ n int }

func (t *T) Ptr() { fmt.Println(t.n); fmt.Println("p") }

func (t T) Val() { fmt.Println(t.n); fmt.Println("v") }

type List[E any] struct{ items []E }

func (l *List[E]) Push(e E) {
	l.items = append(l.items, e)
	func() { fmt.Println(len(l.items)); fmt.Println("push") }()
}

func (l List[E]) Show() { fmt.Println(l.items); fmt.Println("show") }

func Map[S, D any](s []S, f func(S) D) []D {
	var d []D
	for _, v := range s {
		d = append(d, f(v))
	}
	func() { fmt.Println(len(d)); fmt.Println("map") }()
	return d
}

func init() { fmt.Println("init0"); fmt.Println("i") }

func init() {
	go func() { fmt.Println("init1"); func() { fmt.Println("deep") }() }()
}

func Run() {
	defer func() { recover(); fmt.Println("run") }()
	fmt.Println("run")
}
`

// TestRewriteNamesCanBeKept takes the names from the instrumenter itself:
// every function it instruments in a package with all kinds of functions
// can be named by a -keepfunc rule, and the rule makes the instrumenter
// skip it (reason "blacklist") and nothing else.
func TestRewriteNamesCanBeKept(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.go")
	if err := os.WriteFile(file, []byte(namesSrc), 0o666); err != nil {
		t.Fatal(err)
	}
	const pkg = "example.com/p"
	plan := func(keep func(string) bool) *rewrite.Plan {
		t.Helper()
		p, err := rewrite.NewPlan([]string{file}, rewrite.Options{PkgPath: pkg, InlineBudget: -1, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var names []string
	for _, f := range plan(nil).Funcs {
		names = append(names, f.Name)
	}
	t.Logf("instrumented: %q", names)
	if len(names) < 15 || !strings.Contains(strings.Join(names, " "), "glob..func") {
		t.Fatalf("the test source did not produce the expected kinds of names: %q", names)
	}
	for _, name := range names {
		r, err := blacklist.Parse("test.blacklist", []byte("-keepfunc "+pkg+"."+name+"\n"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		p := plan(func(fn string) bool { ok, _ := r.Func(pkg, fn); return ok })
		for _, f := range p.Funcs {
			if f.Name == name {
				t.Errorf("-keepfunc %s.%s: still instrumented", pkg, name)
			}
		}
		if len(p.Funcs) != len(names)-1 {
			t.Errorf("-keepfunc %s.%s: %d functions instrumented, want %d", pkg, name, len(p.Funcs), len(names)-1)
		}
		found := false
		for _, s := range p.Skips {
			found = found || s.Name == name && s.Reason == rewrite.ReasonBlacklist
		}
		if !found {
			t.Errorf("-keepfunc %s.%s: not skipped for the blacklist: %+v", pkg, name, p.Skips)
		}
	}
}
