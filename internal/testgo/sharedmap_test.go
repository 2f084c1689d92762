package testgo

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestSharedMap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the user cache directory is moved with XDG_CACHE_HOME, which only Linux reads")
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("MATRIX_TEST_FRESH_MAP", "")
	dir := t.TempDir()
	exe := filepath.Join(dir, "matrixexec")
	write := func(content string) {
		if err := os.WriteFile(exe, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	p1, err := SharedMap(filepath.Join(dir, "fresh"), exe)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p1, filepath.Join(cache, "matrix", "testmaps")+string(filepath.Separator)) || filepath.Base(p1) != "methodMapping.txt" {
		t.Fatalf("map %s is not a methodMapping.txt under the user cache directory %s", p1, cache)
	}
	again, err := SharedMap(filepath.Join(dir, "fresh"), exe)
	if err != nil {
		t.Fatal(err)
	}
	if again != p1 {
		t.Errorf("the same matrixexec got two maps: %s, then %s", p1, again)
	}

	// Another matrixexec gets another map, and a map unused for
	// SharedMapAge is removed by the next run.
	old := time.Now().Add(-SharedMapAge - time.Hour)
	if err := os.Chtimes(filepath.Dir(p1), old, old); err != nil {
		t.Fatal(err)
	}
	write("two")
	p2, err := SharedMap(filepath.Join(dir, "fresh"), exe)
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p1 {
		t.Errorf("two matrixexec binaries share the map %s", p1)
	}
	if _, err := os.Stat(filepath.Dir(p1)); !os.IsNotExist(err) {
		t.Errorf("the map unused for %v is still there (stat: %v)", SharedMapAge, err)
	}
	if _, err := os.Stat(filepath.Dir(p2)); err != nil {
		t.Errorf("the map in use: %v", err)
	}

	t.Setenv("MATRIX_TEST_FRESH_MAP", "1")
	p3, err := SharedMap(filepath.Join(dir, "fresh"), exe)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "fresh", "methodMapping.txt"); p3 != want {
		t.Errorf("MATRIX_TEST_FRESH_MAP=1: map %s, want %s", p3, want)
	}
}
