package idalloc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestOwnerRecordedOnCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	m, err := OpenWith(path, Options{Owner: NewOwner(false, "example.com/app"), CheckOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	mustAllocate(t, m, "example.com/app", funcsFor(0, 3))
	lines := strings.Split(string(readFile(t, path)), "\n")
	if lines[1] != "# module example.com/app" {
		t.Fatalf("line 2 = %q, want the owner line", lines[1])
	}
	if ids := checkWellFormed(t, path); len(ids) != 3 {
		t.Fatalf("ids %v", ids)
	}
	// Readers without options (and older readers: it is a comment) accept
	// the owner line.
	m2 := mustOpen(t, path)
	if got := m2.Owner(); !reflect.DeepEqual(got, NewOwner(false, "example.com/app")) {
		t.Fatalf("Owner() = %+v", got)
	}
	if m2.Identity() != m.Identity() {
		t.Fatal("identity changed")
	}
	if ents, _ := mustLoad(t, path); len(ents) != 3 {
		t.Fatalf("Load: %d entries, want 3", len(ents))
	}

	// A workspace map records its modules sorted; a build outside any
	// module records nothing.
	ws := filepath.Join(t.TempDir(), "ws.txt")
	if _, err := OpenWith(ws, Options{Owner: NewOwner(true, "example.com/b", "example.com/a", "example.com/b")}); err != nil {
		t.Fatal(err)
	}
	if line := strings.Split(string(readFile(t, ws)), "\n")[1]; line != "# workspace example.com/a example.com/b" {
		t.Fatalf("workspace owner line %q", line)
	}
	none := filepath.Join(t.TempDir(), "none.txt")
	if _, err := OpenWith(none, Options{Owner: NewOwner(false, "")}); err != nil {
		t.Fatal(err)
	}
	if line := strings.Split(string(readFile(t, none)), "\n")[1]; line != strings.TrimSuffix(columnsLine, "\n") {
		t.Fatalf("map without an owner: line 2 = %q", line)
	}
}

func TestForeignMap(t *testing.T) {
	mod := func(p string) Owner { return NewOwner(false, p) }
	ws := func(p ...string) Owner { return NewOwner(true, p...) }
	for _, tc := range []struct {
		name          string
		created, used Owner
		ok            bool
	}{
		{"same module", mod("example.com/a"), mod("example.com/a"), true},
		{"other module", mod("example.com/a"), mod("example.com/b"), false},
		{"prefix is not the module", mod("example.com/a"), mod("example.com/a/v2"), false},
		{"module map in a workspace using it", mod("example.com/a"), ws("example.com/a", "example.com/x"), true},
		{"module map in another workspace", mod("example.com/a"), ws("example.com/x", "example.com/y"), false},
		{"workspace map, module of it", ws("example.com/a", "example.com/b"), mod("example.com/b"), true},
		{"workspace map, other module", ws("example.com/a", "example.com/b"), mod("example.com/c"), false},
		{"workspace with a module added", ws("example.com/a", "example.com/b"), ws("example.com/b", "example.com/c"), true},
		{"other workspace", ws("example.com/a", "example.com/b"), ws("example.com/c", "example.com/d"), false},
		{"build outside a module", mod("example.com/a"), Owner{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "methodMapping.txt")
			m, err := OpenWith(path, Options{Owner: tc.created})
			if err != nil {
				t.Fatal(err)
			}
			mustAllocate(t, m, "example.com/a", funcsFor(0, 2))
			before := readFile(t, path)
			_, err = OpenWith(path, Options{Owner: tc.used, CheckOwner: true})
			if tc.ok {
				if err != nil {
					t.Fatalf("OpenWith: %v", err)
				}
			} else {
				var fe *ForeignMapError
				if !errors.As(err, &fe) {
					t.Fatalf("OpenWith: err = %v, want a *ForeignMapError", err)
				}
				if !reflect.DeepEqual(fe.Recorded, tc.created) || !reflect.DeepEqual(fe.Build, tc.used) || fe.Path != path {
					t.Fatalf("error fields %+v", fe)
				}
				msg := err.Error()
				for _, want := range []string{path, tc.created.String(), tc.used.String(), "delete the file"} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not contain %q", msg, want)
					}
				}
			}
			// Without the check, any map opens; and the map is never
			// rewritten by either.
			if _, err := OpenWith(path, Options{Owner: tc.used}); err != nil {
				t.Fatalf("OpenWith without CheckOwner: %v", err)
			}
			if !bytes.Equal(before, readFile(t, path)) {
				t.Fatal("opening changed the map")
			}
		})
	}
}

// TestOldMapAccepted: maps written before owners were recorded open with
// the check on, and are not upgraded.
func TestOldMapAccepted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	old := testHeader + columnsLine + "1 func example.com/x F x.go:3\n"
	if err := os.WriteFile(path, []byte(old), 0o666); err != nil {
		t.Fatal(err)
	}
	m, err := OpenWith(path, Options{Owner: NewOwner(false, "example.com/other"), CheckOwner: true})
	if err != nil {
		t.Fatalf("old map refused: %v", err)
	}
	if !m.Owner().IsZero() {
		t.Fatalf("old map has owner %v", m.Owner())
	}
	if got := mustAllocate(t, m, "example.com/other", funcsFor(0, 1)); got[0] != 2 {
		t.Fatalf("id %d, want 2", got[0])
	}
	if !strings.HasPrefix(string(readFile(t, path)), old) {
		t.Fatal("old map was rewritten")
	}
	// Header only, no columns line.
	bare := filepath.Join(t.TempDir(), "bare.txt")
	os.WriteFile(bare, []byte(testHeader+"1 func p F f.go:1\n"), 0o666)
	if _, err := OpenWith(bare, Options{Owner: NewOwner(false, "example.com/other"), CheckOwner: true}); err != nil {
		t.Fatalf("map without a columns line: %v", err)
	}
}

func TestMalformedOwner(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"# module \n", "malformed owner line"},
		{"# module  example.com/a\n", "malformed owner line"},
		{"# module example.com/a example.com/b\n", "names 2 modules, want one"},
		{"# workspace example.com/b example.com/a\n", "not sorted"},
		{"# workspace example.com/a example.com/a\n", "not sorted and unique"},
	} {
		path := filepath.Join(t.TempDir(), "m.txt")
		os.WriteFile(path, []byte(testHeader+tc.line+columnsLine), 0o666)
		_, err := Open(path)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("owner line %q: err = %v, want a corrupt line 2: %s", tc.line, err, tc.want)
		}
	}
	// Only line 2 is the owner line: elsewhere it is a comment.
	path := filepath.Join(t.TempDir(), "m.txt")
	os.WriteFile(path, []byte(testHeader+columnsLine+"# module example.com/x\n1 func p F f.go:1\n"), 0o666)
	m, err := OpenWith(path, Options{Owner: NewOwner(false, "example.com/y"), CheckOwner: true})
	if err != nil || !m.Owner().IsZero() {
		t.Fatalf("owner line on line 3: owner %v, err %v", m.Owner(), err)
	}
	// A bad owner is refused before anything is created.
	bad := filepath.Join(t.TempDir(), "bad.txt")
	for _, o := range []Owner{{Modules: []string{"a b"}}, {Modules: []string{"a", "b"}}} {
		if _, err := OpenWith(bad, Options{Owner: o}); err == nil {
			t.Errorf("OpenWith(owner %q) succeeded", o.Modules)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Fatal("a map was created with a bad owner")
	}
}

func TestModuleAndWorkspaceOwner(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ gomod, want string }{
		{"module example.com/a\n\ngo 1.24\n", "example.com/a"},
		{"// Module comment\nmodule \"example.com/quoted\" // trailing\ngo 1.24\n", "example.com/quoted"},
		{"module `example.com/raw`\n", "example.com/raw"},
		{"  module   example.com/spaced  \r\n", "example.com/spaced"},
	} {
		o, err := ModuleOwner(write("m/go.mod", tc.gomod))
		if err != nil || !reflect.DeepEqual(o, NewOwner(false, tc.want)) {
			t.Errorf("ModuleOwner(%q) = %+v, %v; want %s", tc.gomod, o, err, tc.want)
		}
	}
	if _, err := ModuleOwner(filepath.Join(dir, "nowhere", "go.mod")); err == nil {
		t.Error("ModuleOwner of a missing go.mod succeeded")
	}
	if _, err := ModuleOwner(write("nomod/go.mod", "go 1.24\n")); err == nil || !strings.Contains(err.Error(), "no module directive") {
		t.Errorf("go.mod without module: err = %v", err)
	}

	write("w/a/go.mod", "module example.com/a\n")
	write("w/b b/go.mod", "module example.com/b\n")
	write("w/c/go.mod", "module example.com/c\n")
	abs := filepath.Join(dir, "abs")
	write("abs/go.mod", "module example.com/abs\n")
	work := write("w/go.work", "go 1.24\n\n// use ./ignored\nuse ./c // the c module\nuse (\n\t./a\n\t\"./b b\"\n\t./missing\n\t"+
		`"`+filepath.ToSlash(abs)+`"`+"\n)\n")
	o, err := WorkspaceOwner(work)
	want := NewOwner(true, "example.com/a", "example.com/abs", "example.com/b", "example.com/c")
	if err != nil || !reflect.DeepEqual(o, want) {
		t.Fatalf("WorkspaceOwner = %+v, %v; want %+v", o, err, want)
	}
	if _, err := WorkspaceOwner(write("empty/go.work", "go 1.24\n")); err == nil {
		t.Error("WorkspaceOwner of a go.work without modules succeeded")
	}
}

// Identify reads the header only: the same identity and owner as a full
// open, the same owner check, and a map created when there is none.
func TestIdentify(t *testing.T) {
	a := NewOwner(false, "example.com/a")
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	id, owner, err := Identify(path, Options{Owner: a, CheckOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(owner, a) {
		t.Fatalf("owner %+v", owner)
	}
	m := mustOpen(t, path)
	if m.Identity() != id || id == "" {
		t.Fatalf("identity %q, Open says %q", id, m.Identity())
	}
	mustAllocate(t, m, "example.com/a", funcsFor(0, 3))
	if id2, _, err := Identify(path, Options{Owner: a, CheckOwner: true}); err != nil || id2 != id {
		t.Fatalf("after allocation: %q, %v", id2, err)
	}
	_, _, err = Identify(path, Options{Owner: NewOwner(false, "example.com/b"), CheckOwner: true})
	var foreign *ForeignMapError
	if !errors.As(err, &foreign) {
		t.Fatalf("foreign map: %v", err)
	}
	if _, _, err := Identify(path, Options{Owner: NewOwner(false, "example.com/b")}); err != nil {
		t.Fatalf("unchecked: %v", err)
	}
}
