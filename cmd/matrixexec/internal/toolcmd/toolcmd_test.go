package toolcmd

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestToolCmd(t *testing.T) {
	t.Setenv("TOOLEXEC_IMPORTPATH", "")
	dir := t.TempDir()
	rsp := filepath.Join(dir, "args")
	if err := os.WriteFile(rsp, []byte("-importcfg=/w/b001/importcfg\n-pack\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"/go/pkg/tool/compile", "-o", "/w/b001/_pkg_.a", "-p", "example.com/lib", "@" + rsp, "-std", "/src/a.go", "/src/b.go"}
	c, err := ParseCompile(args)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tool != args[0] || !slices.Equal(c.Operands, []string{"/src/a.go", "/src/b.go"}) {
		t.Errorf("tool %q, files %q", c.Tool, c.Operands)
	}
	if v, ok := c.Flag("importcfg"); !ok || v != "/w/b001/importcfg" {
		t.Errorf("importcfg from the response file: %q, %v", v, ok)
	}
	if !c.Has("std") || c.Has("race") {
		t.Errorf("has(std) %v, has(race) %v", c.Has("std"), c.Has("race"))
	}
	if got := c.ImportPath(); got != "example.com/lib" {
		t.Errorf("importPath %q", got)
	}
	c.Set("importcfg", "/tmp/new")
	c.Set("o", "/tmp/out.a")
	want := []string{"/go/pkg/tool/compile", "-o", "/tmp/out.a", "-p", "example.com/lib", "-importcfg=/tmp/new", "-pack", "-std", "/src/a.go", "/src/b.go"}
	if got := c.Args(); !slices.Equal(got, want) {
		t.Errorf("args\n got %q\nwant %q", got, want)
	}

	// The rewritten files' directory is trimmed first, before cmd/go's
	// rules; without -trimpath, it is the only rule.
	c, err = ParseCompile([]string{"/go/pkg/tool/compile", "-trimpath", "/w/b001=>", "-p", "x", "/src/x.go"})
	if err != nil {
		t.Fatal(err)
	}
	c.TrimDir("/tmp/mx1")
	if got, want := c.Args(), []string{"/go/pkg/tool/compile", "-trimpath", "/tmp/mx1=>;/w/b001=>", "-p", "x", "/src/x.go"}; !slices.Equal(got, want) {
		t.Errorf("args after trimDir\n got %q\nwant %q", got, want)
	}
	c, err = ParseCompile([]string{"/go/pkg/tool/compile", "-p", "x", "/src/x.go"})
	if err != nil {
		t.Fatal(err)
	}
	c.TrimDir("/tmp/mx2")
	if got, want := c.Args(), []string{"/go/pkg/tool/compile", "-p", "x", "-trimpath", "/tmp/mx2=>", "/src/x.go"}; !slices.Equal(got, want) {
		t.Errorf("args after trimDir\n got %q\nwant %q", got, want)
	}

	// A command's -p is main; the import path comes from cmd/go.
	t.Setenv("TOOLEXEC_IMPORTPATH", "example.com/cmd/app [example.com/cmd/app.test]")
	c, err = ParseCompile([]string{"/go/pkg/tool/compile", "-p", "main", "/src/main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ImportPath(); got != "example.com/cmd/app" {
		t.Errorf("importPath %q", got)
	}
	if got := c.SymbolPkg(); got != "main" || !c.IsMain() {
		t.Errorf("symbol package %q, main %v", got, c.IsMain())
	}

	l, err := ParseLink([]string{"/go/pkg/tool/link", "-o", "/w/a.out", "-importcfg", "/w/importcfg.link", "/w/b001/_pkg_.a"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Operands, []string{"/w/b001/_pkg_.a"}) || l.MainArchive() != "/w/b001/_pkg_.a" {
		t.Errorf("link operands %q, main archive %q", l.Operands, l.MainArchive())
	}
	l.Set("importcfg", "/tmp/importcfg.link")
	if got, want := l.Args(), []string{"/go/pkg/tool/link", "-o", "/w/a.out", "-importcfg", "/tmp/importcfg.link", "/w/b001/_pkg_.a"}; !slices.Equal(got, want) {
		t.Errorf("link args\n got %q\nwant %q", got, want)
	}
}

func TestResponseFiles(t *testing.T) {
	dir := t.TempDir()
	rsp := filepath.Join(dir, "args")
	if err := os.WriteFile(rsp, []byte("-p\nexample.com/x\nline\\nbreak\nback\\\\slash\n/abs/a.go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ExpandArgs([]string{"/tool/compile", "@" + rsp, "/abs/b.go"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/tool/compile", "-p", "example.com/x", "line\nbreak", `back\slash`, "/abs/a.go", "/abs/b.go"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("expandArgs = %q, want %q", got, want)
	}
	// Long argument lists go back into a response file that decodes the same.
	long := []string{"/tool/compile"}
	for i := 0; i < 5000; i++ {
		long = append(long, filepath.Join("/very/long/path/to/a/package", "file_with_a_long_name.go"))
	}
	long = append(long, "tricky\nname.go")
	packed, err := (&Cmd{Tool: long[0], Flags: long[1:]}).Argv(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(packed) != 2 || packed[1][0] != '@' {
		t.Fatalf("long args not packed: %d args", len(packed))
	}
	back, err := ExpandArgs(packed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, long) {
		t.Fatal("response file round trip changed the arguments")
	}
}

// TestImportcfg: a command's importcfg is read when asked for, read anew
// after the flag changes, and SetImportcfg writes a changed copy and points
// the command at it.
func TestImportcfg(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "importcfg")
	if err := os.WriteFile(orig, []byte("# import config\npackagefile fmt=/c/fmt.a\nimportmap old=example.com/new\npackagefile example.com/new=/c/new.a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ParseCompile([]string{"/go/pkg/tool/compile", "-p", "example.com/lib", "-importcfg", orig, "/src/a.go"})
	if err != nil {
		t.Fatal(err)
	}
	if c.IsMain() || c.SymbolPkg() != "example.com/lib" {
		t.Errorf("symbol package %q, main %v", c.SymbolPkg(), c.IsMain())
	}
	cfg, err := c.Importcfg()
	if err != nil {
		t.Fatal(err)
	}
	if pkg, file, ok := cfg.Lookup("old"); !ok || pkg != "example.com/new" || file != "/c/new.a" {
		t.Errorf("Lookup(old) = %q, %q, %v", pkg, file, ok)
	}
	changed := cfg.Clone()
	changed.SetFile("example.com/auto", "/c/auto.a")
	if _, ok := cfg.File("example.com/auto"); ok {
		t.Errorf("a change to the clone changed the command's importcfg")
	}
	next := filepath.Join(dir, "importcfg.link")
	if err := c.SetImportcfg(changed, next); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Flag("importcfg"); v != next {
		t.Errorf("-importcfg %q after SetImportcfg, want %q", v, next)
	}
	data, err := os.ReadFile(next)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# import config\npackagefile fmt=/c/fmt.a\nimportmap old=example.com/new\npackagefile example.com/new=/c/new.a\npackagefile example.com/auto=/c/auto.a\n"; string(data) != want {
		t.Errorf("written importcfg\n%s\nwant\n%s", data, want)
	}
	// The flag points at another file: it is read.
	c.Set("importcfg", orig)
	if cfg, err := c.Importcfg(); err != nil || cfg == nil {
		t.Fatalf("Importcfg after Set: %v, %v", cfg, err)
	} else if _, ok := cfg.File("example.com/auto"); ok {
		t.Errorf("Importcfg after Set returns the config of the former file")
	}
	// Without the flag there is none; with a missing file, an error.
	if cfg, err := (&Cmd{Tool: "compile"}).Importcfg(); cfg != nil || err != nil {
		t.Errorf("Importcfg without -importcfg: %v, %v", cfg, err)
	}
	if _, err := (&Cmd{Tool: "compile", Flags: []string{"-importcfg", filepath.Join(dir, "missing")}}).Importcfg(); err == nil {
		t.Errorf("Importcfg of a missing file: no error")
	}
}

// TestAddFlags checks that flags added to a parsed command go before its
// operands and leave them whole: the flags and the operands are parsed from
// one argument list, and appending to the first must not write over the
// second.
func TestAddFlags(t *testing.T) {
	for _, parse := range []func([]string) (*Cmd, error){ParseCompile, ParseLink} {
		args := []string{"/go/pkg/tool/tool", "-p", "example.com/lib", "/src/a.go"}
		c, err := parse(args)
		if err != nil {
			t.Fatal(err)
		}
		c.AddFlag("-d=gcstart=150")
		c.TrimDir("/tmp/work")
		want := []string{"/go/pkg/tool/tool", "-p", "example.com/lib", "-d=gcstart=150", "-trimpath", "/tmp/work=>", "/src/a.go"}
		if got := c.Args(); !slices.Equal(got, want) {
			t.Errorf("args\n got %q\nwant %q", got, want)
		}
	}
}

// TestUnknownFlags checks that flags the package does not know, a value
// joined or separate (Go 1.28's -exportfd), are kept as they are, in
// place, and do not hide the flags and operands around them.
func TestUnknownFlags(t *testing.T) {
	t.Setenv("TOOLEXEC_IMPORTPATH", "")
	for _, flags := range [][]string{
		{"-exportfd=3"},
		{"-exportfd", "3"},
		{"-exportfd", "3", "-future-flag", "x.go=1"},
	} {
		args := slices.Concat([]string{"/go/pkg/tool/compile", "-o", "/w/_pkg_.a", "-p", "example.com/lib"}, flags, []string{"-lang=go1.28", "-pack", "/src/a.go", "/src/b.go"})
		c, err := ParseCompile(args)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Operands, []string{"/src/a.go", "/src/b.go"}) {
			t.Errorf("%q: operands %q", flags, c.Operands)
		}
		if v, _ := c.Flag("exportfd"); v != "3" {
			t.Errorf("%q: -exportfd %q", flags, v)
		}
		if v, _ := c.Flag("lang"); v != "go1.28" || !c.Has("pack") || c.ImportPath() != "example.com/lib" {
			t.Errorf("%q: -lang %q, -pack %v, import path %q", flags, v, c.Has("pack"), c.ImportPath())
		}
		c.TrimDir("/tmp/mx")
		c.Set("o", "/tmp/out.a")
		want := slices.Concat([]string{"/go/pkg/tool/compile", "-o", "/tmp/out.a", "-p", "example.com/lib"}, flags, []string{"-lang=go1.28", "-pack", "-trimpath", "/tmp/mx=>", "/src/a.go", "/src/b.go"})
		if got := c.Args(); !slices.Equal(got, want) {
			t.Errorf("%q: args\n got %q\nwant %q", flags, got, want)
		}
	}
}
