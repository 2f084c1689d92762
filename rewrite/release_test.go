package rewrite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestMethodTypeParamNames checks the names of methods with type parameters
// of their own (Go 1.27), and of their closures, against those of their
// symbols in a Go 1.27 binary (go tool nm). The go/parser of releases
// before Go 1.27 rejects such methods, so the type parameters are given to
// the methods' declarations by hand.
func TestMethodTypeParamNames(t *testing.T) {
	const src = `package x

type Set struct{}
type Box[T any] struct{}

func (s *Set) Map() { func() {}() }
func (s Set) Pair() {}
func (b *Box[T]) Conv() {}
func tparams[U any]() {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	tparams := f.Decls[len(f.Decls)-1].(*ast.FuncDecl).Type.TypeParams
	nm := newNamer(27)
	nm.scan(f, func(*ast.RangeStmt) bool { return false })
	var names []string
	walkFuncs(f, func(n ast.Node, stack []ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil {
				n.Type.TypeParams = tparams
			}
			name, _ := nm.decl(n)
			names = append(names, name)
		case *ast.FuncLit:
			names = append(names, nm.lit(n))
		}
		return true
	})
	want := "(*Set).Map[...] (*Set).Map[...].func1 Set.Pair[...] (*Box[...]).Conv[...] tparams[...]"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names:\n got %s\nwant %s", got, want)
	}
}

// rangeSrc has function literals in the bodies of ranges over functions,
// and in their range expressions; the names a Go 1.26 and a Go 1.27 binary
// give them (runtime.FuncForPC, built with -gcflags=-l) are in comments,
// as "26 27".
const rangeSrc = `package x

import (
	"fmt"
	"iter"
	"maps"
)

func seq(n int) iter.Seq[int] {
	return func(yield func(int) bool) { for i := range n { if !yield(i) { return } } } // seq.func1 seq.func1
}

type list struct{ v []int }

func (l *list) All() iter.Seq[int] { return seq(len(l.v)) }

func F(l *list, m map[string]int) {
	func() { fmt.Println(0) }() // F.func1 F.func1
	for range seq(1) {
		func() { fmt.Println(1) }() // F.func2 F-range1.1
		for range l.All() {
			func() { fmt.Println(2) }() // F.func3 F-range1-range1.1
		}
	}
	for range maps.Keys(m) {
		func() { fmt.Println(3) }() // F.func4 F-range2.1
	}
	for i := range []int{1} {
		func() { fmt.Println(i) }() // F.func5 F.func2
	}
	func() { // F.func6 F.func3
		for range seq(1) {
			func() { fmt.Println(4) }() // F.func6.1 F.func3-range1.1
		}
	}()
	for range func(yield func(int) bool) { fmt.Println(5); yield(1) } { // F.func8 F.func4
		func() { fmt.Println(6) }() // F.func7 F-range3.1
	}
}

func G[S ~func(func(int) bool)](s S) {
	for range s {
		func() { fmt.Println(7) }() // G[...].func1 G[...]-range1.1
	}
}
`

// rangeNames returns the names of rangeSrc's function literals as its
// comments give them for Go release 26 or 27, by the line of their func
// keyword.
func rangeNames(release int) map[int]string {
	names := map[int]string{}
	for i, l := range strings.Split(rangeSrc, "\n") {
		if _, c, ok := strings.Cut(l, "// "); ok {
			names[i+1] = strings.Fields(c)[release-26]
		}
	}
	return names
}

// TestRangeBodyNames checks the names of function literals around ranges
// over functions, with the compiler of Go 1.26 and of Go 1.27 (see
// rangeSrc): with types, which tell the ranges over functions, and
// without (-short), which tell only those over a function literal (all
// Go 1.26 needs).
func TestRangeBodyNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(rangeSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	var tc *TypesConfig
	if !testing.Short() {
		cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}", "fmt", "iter", "maps")
		importcfg, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -export: %v", err)
		}
		tc = &TypesConfig{Importcfg: importcfg, GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)}
	}
	for _, release := range []int{26, 27} {
		p, err := NewPlan([]string{path}, Options{PkgPath: "example.com/x", InlineBudget: -1, GoRelease: release, Types: tc})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]string{}
		for _, f := range p.Funcs {
			if f.Kind == KindClosure {
				line, _ := strconv.Atoi(f.Pos[strings.LastIndexByte(f.Pos, ':')+1:])
				got[line] = f.Name
			}
		}
		wants := rangeNames(release)
		if tc == nil && release >= rangeBodyNamesRelease {
			// The range over a function literal is the only one known.
			all := wants
			wants = map[int]string{}
			for line, name := range all {
				switch name {
				case "F.func4":
					wants[line] = "F.func7"
				case "F-range3.1":
					wants[line] = "F-range1.1"
				}
			}
		}
		for line, want := range wants {
			if got[line] != want {
				t.Errorf("Go 1.%d, typed %v: the closure at line %d is named %q, want %q", release, tc != nil, line, got[line], want)
			}
		}
	}
}

// lineSrc takes positions from relative line directives: a line comment, a
// block comment, and a line comment inside a body that gets a hook-free
// copy.
const lineSrc = `package sub

import "fmt"

//line gen/rel.y:10
func Where() string { return fmt.Sprint(1) + fmt.Sprint(2) + fmt.Sprint(3) }

//line ../up.y:20
func There() string {
	s := fmt.Sprint(1)
	return s + fmt.Sprint(2) + fmt.Sprint(3)
}

//line sub.go:14
func Inside() string {
	n := len(fmt.Sprint())
//line gen/inside.y:6
	return fmt.Sprint(n)
}

/*line gen/blk.y:30:1*/ func Block() string { return fmt.Sprint(1) + fmt.Sprint(2) + fmt.Sprint(3) }
`

// TestLineDirectivesElsewhere checks that a rewritten file, which the
// compiler reads from another directory, keeps the positions its relative
// line directives give: from Go 1.27 on, the compiler resolves their names
// against the directory of the file they are in (as go/scanner does, so
// scanning the rewritten file in another directory shows what it sees);
// before, it keeps them as written.
func TestLineDirectivesElsewhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, release := range []int{26, 27} {
		opts := Options{PkgPath: "example.com/sub", InlineBudget: -1, ReturnExits: true, CopyBudget: DefaultCopyBudget, GoRelease: release}
		path := filepath.Join(dir, "sub.go")
		if err := os.WriteFile(path, []byte(lineSrc), 0o644); err != nil {
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
		outs, err := p.Apply(ids)
		if err != nil {
			t.Fatal(err)
		}
		out := outs[0].Src
		if !strings.Contains(strings.Join(p.Copied, " "), "Inside") {
			t.Fatalf("Go 1.%d: Inside has no hook-free copy (copied: %v)", release, p.Copied)
		}
		// The plan's positions name the directive's file, resolved
		// against the file's directory, on either release.
		for name, want := range map[string]string{
			"Where": filepath.Join(dir, "gen", "rel.y") + ":10",
			"There": filepath.Join(filepath.Dir(dir), "up.y") + ":20",
			"Block": filepath.Join(dir, "gen", "blk.y") + ":30",
		} {
			if got := p.Pos(name); got != want {
				t.Errorf("Go 1.%d: %s at %s, want %s", release, name, got, want)
			}
		}
		if release < lineDirRelease {
			// The names stay as written, the file in its directory.
			for _, d := range []string{"//line gen/rel.y:10", "//line ../up.y:20", "//line gen/inside.y:6", "/*line gen/blk.y:30:1*/"} {
				if !strings.Contains(string(out), d) {
					t.Errorf("Go 1.%d: the rewritten file lost %s:\n%s", release, d, out)
				}
			}
			checkPositions(t, path, []byte(lineSrc), out)
			continue
		}
		if strings.Contains(string(out), "line gen/") || strings.Contains(string(out), "line ../") {
			t.Errorf("Go 1.%d: the rewritten file keeps a relative line directive:\n%s", release, out)
		}
		checkPositionsAt(t, path, filepath.Join(t.TempDir(), "tmp", "0_sub.go"), []byte(lineSrc), out)
	}
}
