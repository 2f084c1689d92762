package inlinecost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// decision is the compiler's -m=2 verdict on one function.
type decision struct {
	inlinable bool
	cost      int
}

// compilerDecisions builds pkg (in dir) with -gcflags=-m=2 and returns the
// compiler's inlining decisions by function name as -m=2 prints it (F,
// T.M, (*T).M).
func compilerDecisions(t *testing.T, dir, pkg string) map[string]decision {
	t.Helper()
	cmd := exec.Command("go", "build", "-gcflags="+pkg+"=-m=2", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off") // testdata/mod is a module of its own
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m=2 %s: %v\n%s", pkg, err, out)
	}
	can := regexp.MustCompile(`: can inline (\S+) with cost (\d+)`)
	cannot := regexp.MustCompile(`: cannot inline (\S+): `)
	res := map[string]decision{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := can.FindStringSubmatch(sc.Text()); m != nil {
			c, _ := strconv.Atoi(m[2])
			res[m[1]] = decision{true, c}
		} else if m := cannot.FindStringSubmatch(sc.Text()); m != nil {
			res[m[1]] = decision{}
		}
	}
	return res
}

// exportFile returns the export data file of pkg (built in dir).
func exportFile(t *testing.T, dir, pkg string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-f", "{{.Export}}", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off") // testdata/mod is a module of its own
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export %s: %v", pkg, err)
	}
	return strings.TrimSpace(string(out))
}

func readPackage(t *testing.T, file, path string) *Package {
	t.Helper()
	p, err := ReadFile(token.NewFileSet(), file, path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// funcs returns the package's functions and the methods of its named
// types, by their -m=2 names.
func funcs(p *types.Package) map[string]*types.Func {
	res := map[string]*types.Func{}
	scope := p.Scope()
	for _, name := range scope.Names() {
		switch obj := scope.Lookup(name).(type) {
		case *types.Func:
			res[name] = obj
		case *types.TypeName:
			named, ok := obj.Type().(*types.Named)
			if !ok || obj.IsAlias() {
				continue
			}
			for i := range named.NumMethods() {
				m := named.Method(i)
				recv := name
				if _, ptr := m.Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
					recv = "(*" + name + ")"
				}
				res[recv+"."+m.Name()] = m
			}
		}
	}
	return res
}

// TestMatchesCompiler reads every recorded decision of real packages and
// compares it with what the compiler prints with -m=2.
func TestMatchesCompiler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages with -m=2; skipped in -short mode")
	}
	mod, err := filepath.Abs("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, pkg string }{
		{mod, "example.com/mod/lib"},
		{mod, "strings"},
		{mod, "bytes"},
		{mod, "strconv"},
		{mod, "encoding/json"},
		{mod, "net/url"},
		{mod, "sync"},
		{mod, "time"},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.pkg, "/", "_"), func(t *testing.T) {
			want := compilerDecisions(t, c.dir, c.pkg)
			p := readPackage(t, exportFile(t, c.dir, c.pkg), c.pkg)
			known := 0
			for name, fn := range funcs(p.Types) {
				got, err := p.Func(fn)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				w, ok := want[name]
				if !got.Known {
					sig := fn.Type().(*types.Signature)
					if ok && sig.TypeParams().Len() == 0 && (sig.Recv() == nil || sig.RecvTypeParams().Len() == 0) {
						t.Errorf("%s: no decision read; the compiler says %+v", name, w)
					}
					continue
				}
				known++
				if !ok {
					// Functions without bodies (assembly) have no
					// -m=2 line: they are never inlinable.
					if got.Inlinable {
						t.Errorf("%s: read as inlinable (cost %d), the compiler says nothing", name, got.Cost)
					}
					continue
				}
				if got.Inlinable != w.inlinable || got.Cost != w.cost {
					t.Errorf("%s: read inlinable=%v cost %d, the compiler says inlinable=%v cost %d", name, got.Inlinable, got.Cost, w.inlinable, w.cost)
				}
			}
			if known < 5 {
				t.Errorf("only %d decisions read", known)
			}
			t.Logf("%d decisions read and matched", known)
		})
	}
}

// TestLibKinds checks the decisions read for each kind of function in the
// test module by name, so that a reader that read nothing cannot pass.
func TestLibKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package; skipped in -short mode")
	}
	mod, _ := filepath.Abs("testdata/mod")
	p := readPackage(t, exportFile(t, mod, "example.com/mod/lib"), "example.com/mod/lib")
	fns := funcs(p.Types)
	newFn := p.Types.Scope().Lookup("New").(*types.Func)
	hidden := newFn.Type().(*types.Signature).Results().At(0).Type().(*types.Pointer).Elem().(*types.Named)
	for i := range hidden.NumMethods() {
		fns["hidden."+hidden.Method(i).Name()] = hidden.Method(i)
	}
	for name, want := range map[string]struct{ known, inlinable bool }{
		"Small":         {true, true},
		"Variadic":      {true, true},
		"Loop":          {true, false},
		"Marked":        {true, false},
		"Linked":        {true, true},
		"Generic":       {false, false},
		"T.Get":         {true, true},
		"(*T).Set":      {true, true},
		"(*T).Print":    {true, false},
		"T.unexported":  {true, true},
		"hidden.Append": {true, true},
		"hidden.Len":    {true, true},
		"G.Value":       {false, false},
	} {
		fn, ok := fns[name]
		if !ok {
			t.Errorf("%s: not in the export data", name)
			continue
		}
		got, err := p.Func(fn)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Known != want.known || got.Inlinable != want.inlinable {
			t.Errorf("%s: known=%v inlinable=%v, want %v %v", name, got.Known, got.Inlinable, want.known, want.inlinable)
		}
	}
}

// TestExportDataMalformed: what is not a compiler's archive is an error
// wrapping errFormat, never a panic.
func TestExportDataMalformed(t *testing.T) {
	member := func(name, body string) string {
		return fmt.Sprintf("!<arch>\n%-16s%-12s%-6s%-6s%-8s%-10d`\n%s", name, "0", "0", "0", "644", len(body), body)
	}
	for _, in := range []string{
		"",
		"go object linux amd64\n$$B\nu",
		member("_go_.o", "go object\n$$B\nu\n$$\n"),
		member("__.PKGDEF", "go object\n$$\nu\n$$\n"),
		member("__.PKGDEF", "go object\n$$B\nu"),
		member("__.PKGDEF", "go object"),
		"!<arch>\n__.PKGDEF       0           0     0     644     99999     `\n",
	} {
		if _, err := exportData([]byte(in)); !errors.Is(err, errFormat) {
			t.Errorf("exportData(%q) = %v, want an error wrapping errFormat", in, err)
		}
	}
	got, err := exportData([]byte(member("__.PKGDEF", "go object linux amd64 go1.26\nbuild id \"x\"\n$$B\nudata\n$$\n")))
	if err != nil || string(got) != "udata" {
		t.Errorf("exportData = %q, %v; want \"udata\"", got, err)
	}
}
