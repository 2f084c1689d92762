package idalloc

import (
	"os"
	"path/filepath"
	"testing"
)

// openMarked opens the map at path with high-water marks kept in marks.
func openMarked(t *testing.T, path, marks string) *Map {
	t.Helper()
	m, err := OpenWith(path, Options{MarkDir: marks})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func allocOne(t *testing.T, m *Map, pkg, fn string) uint32 {
	t.Helper()
	ids, err := m.Allocate(pkg, []Func{{Name: fn, Kind: KindFunc, Pos: "a.go:1"}})
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// TestRestoredMapGetsNewIdentity: a map put back to an earlier content
// (git checkout) keeps no identity under which cached packages hold ids it
// no longer lists.
func TestRestoredMapGetsNewIdentity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "methodMapping.txt")
	marks := filepath.Join(dir, "marks")

	m := openMarked(t, path, marks)
	allocOne(t, m, "p", "A")
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := m.Identity()
	idB := allocOne(t, m, "q", "B") // compiled into a cached package

	// Reopening the grown map keeps its identity.
	if m2 := openMarked(t, path, marks); m2.Identity() != first {
		t.Fatalf("the map grew and changed identity %s -> %s", first, m2.Identity())
	}
	if id, _, err := Identify(path, Options{MarkDir: marks}); err != nil || id != first {
		t.Fatalf("Identify = %s, %v; want %s", id, err, first)
	}

	// Restored: same identity in the file, one record fewer.
	if err := os.WriteFile(path, saved, 0o666); err != nil {
		t.Fatal(err)
	}
	id, _, err := Identify(path, Options{MarkDir: marks})
	if err != nil {
		t.Fatal(err)
	}
	if id == first {
		t.Fatalf("restored map kept its identity %s: packages cached with id %d would collide", first, idB)
	}
	m3 := openMarked(t, path, marks)
	if m3.Identity() != id {
		t.Fatalf("OpenWith after Identify: identity %s, want %s", m3.Identity(), id)
	}
	// The records are kept; the next allocation reuses B's old number, now
	// under an identity no cached package was built with.
	entries, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[1].Func != "A" {
		t.Fatalf("renewed map lost its records: %v", entries)
	}
	allocOne(t, m3, "r", "C")
	if m4 := openMarked(t, path, marks); m4.Identity() != id {
		t.Fatalf("the renewed map changed identity again: %s -> %s", id, m4.Identity())
	}
}

// TestDivergedMapGetsNewIdentity: a map of the same identity that went
// another way (another branch added a different function under the same
// id) is renewed too.
func TestDivergedMapGetsNewIdentity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "methodMapping.txt")
	marks := filepath.Join(dir, "marks")
	m := openMarked(t, path, marks)
	allocOne(t, m, "p", "A")
	saved, _ := os.ReadFile(path)
	allocOne(t, m, "p", "B")
	first := m.Identity()
	other := append(saved, []byte("2 func p Other a.go:9\n")...)
	if err := os.WriteFile(path, other, 0o666); err != nil {
		t.Fatal(err)
	}
	if m2 := openMarked(t, path, marks); m2.Identity() == first {
		t.Fatal("a map that went another way kept its identity")
	}
}

// TestMapWithoutMarkDir: without MarkDir a restored map is not checked.
func TestMapWithoutMarkDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	m := openMarked(t, path, "")
	allocOne(t, m, "p", "A")
	saved, _ := os.ReadFile(path)
	allocOne(t, m, "p", "B")
	os.WriteFile(path, saved, 0o666)
	if m2 := openMarked(t, path, ""); m2.Identity() != m.Identity() {
		t.Fatal("identity changed without MarkDir")
	}
}

func TestLastRecord(t *testing.T) {
	for data, want := range map[string]string{
		"# h\n# c\n":                                      "-",
		"# h\n1 func p A a.go:1\n":                        "1 func p A a.go:1",
		"# h\n1 func p A a.go:1\n2 func p":                "1 func p A a.go:1",
		"# h\n1 func p A a.go:1\n# x\n\n":                 "1 func p A a.go:1",
		"# h\n1 func p A a b.go:1\n2 func p B c d.go:2\n": "2 func p B c d.go:2",
	} {
		if got := lastRecord(data); got != want {
			t.Errorf("lastRecord(%q) = %q, want %q", data, got, want)
		}
	}
}
