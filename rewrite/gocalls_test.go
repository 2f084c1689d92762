package rewrite

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goCallsSrc starts goroutines in each way a go statement's call can be
// wrapped (in a function, a generic function's body and a function
// literal), and one that is not. Each called function prints the tag its
// go statement passes and its own name, as the runtime knows it.
const goCallsSrc = `package main

import (
	"fmt"
	"runtime"
	"sync"
)

var (
	wg sync.WaitGroup
	mu sync.Mutex
)

//go:noinline
func report(tag int) {
	pcs := make([]uintptr, 1)
	runtime.Callers(2, pcs)
	mu.Lock()
	fmt.Printf("%d %s\n", tag, runtime.FuncForPC(pcs[0]-1).Name())
	mu.Unlock()
	wg.Done()
}

type T struct{}

type G[E any] struct{}

//go:noinline
func f(x int) { report(x) }

//go:noinline
func (t *T) m(x int) { report(x) }

//go:noinline
func (t T) v(x int) { report(x) }

//go:noinline
func (g *G[E]) gm(x int, _ E) { report(x) }

//go:noinline
func plain() { wg.Done() }

// inGeneric starts a goroutine from a generic function's body.
func inGeneric[E any](_ E) {
	go f(6)
}

func main() {
	wg.Add(8)
	t := &T{}
	go f(1)
	go t.m(2)
	go T{}.v(3)
	go (&G[string]{}).gm(4, "")
	go func(x int) { report(x) }(5)
	go plain()
	inGeneric("")
	func() {
		go f(7)
	}()
	wg.Wait()
}
`

// TestGoCallsMatchCompiler plans goCallsSrc with types and checks its
// GoCalls against the program the compiler builds: the go statements
// whose calls the compiler wrapped are at the positions GoCalls lists
// (the entries of the binary's ….gowrap<n> functions), and each names the
// function the runtime says its goroutine ran.
func TestGoCallsMatchCompiler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program; skipped in -short mode")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "main.go")
	for name, content := range map[string]string{
		"go.mod":  "module example.com/gocalls\n\ngo 1.24\n",
		"main.go": goCallsSrc,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}", "fmt", "runtime", "sync")
	cmd.Dir = dir
	importcfg, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	tc := &TypesConfig{Importcfg: importcfg, GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)}
	p, err := NewPlan([]string{path}, Options{PkgPath: "main", Types: tc})
	if err != nil {
		t.Fatal(err)
	}
	var planned, plannedPos []string
	for _, g := range p.GoCalls {
		planned = append(planned, g.Pos+" "+g.Func)
		plannedPos = append(plannedPos, g.Pos)
	}

	bin := filepath.Join(dir, "gocalls")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// What each goroutine ran, at the line of the go statement that
	// passed its tag.
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		tag, fn, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		at := goLine(t, goCallsSrc, tag)
		ran = append(ran, path+":"+strconv.Itoa(at)+" "+fn)
	}
	slices.Sort(planned)
	slices.Sort(ran)
	if len(ran) != 7 {
		t.Errorf("the program reported %d goroutines, want 7:\n%s", len(ran), out)
	}
	if !slices.Equal(planned, ran) {
		t.Errorf("GoCalls:\n%s\nthe goroutines ran:\n%s", strings.Join(planned, "\n"), strings.Join(ran, "\n"))
	}

	// The compiler's wrappers start at exactly those positions.
	wrappers, err := goWrappers(bin)
	if err != nil {
		t.Skipf("reading the binary's line table: %v", err)
	}
	slices.Sort(plannedPos)
	slices.Sort(wrappers)
	if !slices.Equal(plannedPos, wrappers) {
		t.Errorf("GoCalls' positions:\n%s\nthe binary's go wrappers start at:\n%s", strings.Join(plannedPos, "\n"), strings.Join(wrappers, "\n"))
	}
}

// goLine returns the line of src with the go statement that passes tag.
func goLine(t *testing.T, src, tag string) int {
	for i, line := range strings.Split(src, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "go ") && (strings.Contains(l, "("+tag+")") || strings.Contains(l, "("+tag+",")) {
			return i + 1
		}
	}
	t.Fatalf("no go statement passes %s", tag)
	return 0
}

// goWrappers returns the entry positions (file:line) of the go statement
// wrappers of package main in an ELF binary.
func goWrappers(bin string) ([]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".gopclntab")
	text := f.Section(".text")
	if sec == nil || text == nil {
		return nil, fmt.Errorf("%s: no .gopclntab or .text", bin)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, fn := range tab.Funcs {
		if strings.HasPrefix(fn.Name, "main.") && isGoWrapperName(fn.Name) {
			file, line, _ := tab.PCToLine(fn.Entry)
			out = append(out, file+":"+strconv.Itoa(line))
		}
	}
	return out, nil
}

// isGoWrapperName reports whether fn is named as the compiler names a go
// statement's wrapper, "….gowrap<n>".
func isGoWrapperName(fn string) bool {
	i := strings.LastIndex(fn, ".gowrap")
	return i >= 0 && strings.Trim(fn[i+len(".gowrap"):], "0123456789") == "" && len(fn) > i+len(".gowrap")
}

// TestGoCallsAmbiguousLine checks that a line with two go statements
// calling different functions names neither, and that a package that did
// not type-check names only function literals.
func TestGoCallsAmbiguousLine(t *testing.T) {
	src := `package p

func a(int) {}
func b(int) {}

func f() {
	go a(1); go b(2)
	go a(3); go a(4)
	go func(x int) { a(x) }(5)
}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "p.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []*TypesConfig{nil, {GoVersion: "go1.24", Sizes: types.SizesFor("gc", runtime.GOARCH)}} {
		p, err := NewPlan([]string{path}, Options{PkgPath: "example.com/p", Types: tc})
		if err != nil {
			t.Fatal(err)
		}
		want := []GoCall{{Pos: path + ":9", Func: "example.com/p.f.func1"}}
		if tc != nil {
			want = append([]GoCall{{Pos: path + ":8", Func: "example.com/p.a"}}, want...)
		}
		if !slices.Equal(p.GoCalls, want) {
			t.Errorf("typed %v: GoCalls = %v, want %v", tc != nil, p.GoCalls, want)
		}
	}
}
