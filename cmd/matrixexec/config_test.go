package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMapOutsideAnyModule: a build with no main module keeps its map in
// the user cache directory, never in .matrix/ under the current directory
// (which may be $HOME or /tmp).
func TestMapOutsideAnyModule(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache) // os.UserCacheDir on darwin
	wd := t.TempDir()
	t.Chdir(wd)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	cfg, _, err := parseConfig(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(userCacheDir("nomodule"), defaultMap)
	if cfg.mapPath != want {
		t.Errorf("map outside a module at %s, want %s", cfg.mapPath, want)
	}
	if rel, err := filepath.Rel(wd, cfg.mapPath); err == nil && filepath.IsLocal(rel) {
		t.Errorf("map %s is under the current directory %s", cfg.mapPath, wd)
	}

	// In a module, the map is the module's.
	if err := os.WriteFile(filepath.Join(wd, "go.mod"), []byte("module example.com/m\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = parseConfig(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, defaultDir, defaultMap); cfg.mapPath != want {
		t.Errorf("map in a module at %s, want %s", cfg.mapPath, want)
	}
	// go install pkg@version ignores the module of the current directory:
	// its ids go to the user's cache, not to that module's map.
	defer func(f func() []string) { goCommandLine = f }(goCommandLine)
	for _, tc := range []struct {
		args     []string
		inModule bool
	}{
		{[]string{"go", "install", "-tags", "x", "example.com/tool@latest"}, false},
		{[]string{"go", "run", "example.com/tool@v1.2.3", "-flag", "a@b"}, false},
		{[]string{"go", "install", "./cmd/tool"}, true},
		{[]string{"go", "run", ".", "user@host"}, true},
		{[]string{"go", "build", "-o", "x@y", "."}, true},
		{nil, true},
	} {
		goCommandLine = func() []string { return tc.args }
		cfg, _, err = parseConfig(nil, getenv)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(userCacheDir("nomodule"), defaultMap)
		if tc.inModule {
			want = filepath.Join(wd, defaultDir, defaultMap)
		}
		if cfg.mapPath != want {
			t.Errorf("%q: map at %s, want %s", tc.args, cfg.mapPath, want)
		}
	}
	goCommandLine = func() []string { return nil }

	// GOPATH mode has no main module even with a go.mod around.
	env["GO111MODULE"] = "off"
	cfg, _, err = parseConfig(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(userCacheDir("nomodule"), defaultMap); cfg.mapPath != want {
		t.Errorf("map in GOPATH mode at %s, want %s", cfg.mapPath, want)
	}
}
