package statcache

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestKey: a key changes with a file's size or modification time, with a
// file added to a directory, and with a string; an entry written under a
// key is read back under an equal key only.
func TestKey(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	f := filepath.Join(dir, "go.mod")
	if err := os.WriteFile(f, []byte("module a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := func() *Key { return NewKey("test").String("x").File(f).Dir(dir) }
	k0 := key().Sum()
	if k := key().Sum(); k != k0 {
		t.Fatalf("the same inputs gave two keys: %s, %s", k0, k)
	}
	if NewKey("test").String("y").File(f).Dir(dir).Sum() == k0 {
		t.Errorf("another string gave the same key")
	}
	if NewKey("other").String("x").File(f).Dir(dir).Sum() == k0 {
		t.Errorf("another kind gave the same key")
	}

	file, data := Lookup(key())
	if file == "" || data != nil {
		t.Fatalf("Lookup before Write: %q, %q", file, data)
	}
	Write(file, []byte("value"))
	if _, data := Lookup(key()); string(data) != "value" {
		t.Fatalf("Lookup after Write: %q", data)
	}

	// The same size, another modification time.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	k1 := key().Sum()
	if k1 == k0 {
		t.Errorf("a new modification time gave the same key")
	}
	if _, data := Lookup(key()); data != nil {
		t.Errorf("an entry was found under a changed key: %q", data)
	}
	// A file added to the directory.
	if err := os.WriteFile(filepath.Join(dir, "new.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if key().Sum() == k1 {
		t.Errorf("a new file in the directory gave the same key")
	}
	// A missing file is part of the key too.
	if NewKey("test").File(filepath.Join(dir, "none")).Sum() == NewKey("test").Sum() {
		t.Errorf("a missing file left the key unchanged")
	}
}
