package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/defaults"
	"github.com/matrixgo/matrix/rewrite"
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
	want := filepath.Join(defaults.UserCacheDir("nomodule"), defaults.Map)
	if cfg.mapFile() != want {
		t.Errorf("map outside a module at %s, want %s", cfg.mapFile(), want)
	}
	if rel, err := filepath.Rel(wd, cfg.mapFile()); err == nil && filepath.IsLocal(rel) {
		t.Errorf("map %s is under the current directory %s", cfg.mapFile(), wd)
	}

	// In a module, the map is the module's.
	if err := os.WriteFile(filepath.Join(wd, "go.mod"), []byte("module example.com/m\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = parseConfig(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, defaults.Dir, defaults.Map); cfg.mapFile() != want {
		t.Errorf("map in a module at %s, want %s", cfg.mapFile(), want)
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
		want := filepath.Join(defaults.UserCacheDir("nomodule"), defaults.Map)
		if tc.inModule {
			want = filepath.Join(wd, defaults.Dir, defaults.Map)
		}
		if cfg.mapFile() != want {
			t.Errorf("%q: map at %s, want %s", tc.args, cfg.mapFile(), want)
		}
	}
	goCommandLine = func() []string { return nil }

	// GOPATH mode has no main module even with a go.mod around.
	env["GO111MODULE"] = "off"
	cfg, _, err = parseConfig(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(defaults.UserCacheDir("nomodule"), defaults.Map); cfg.mapFile() != want {
		t.Errorf("map in GOPATH mode at %s, want %s", cfg.mapFile(), want)
	}
}

// TestExitsConfig: -exits and -copy-budget (and their variables) choose
// where exits are recorded and which functions keep a hook-free copy.
func TestExitsConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		returns bool
		budget  int
		err     string
	}{
		{nil, nil, true, rewrite.DefaultCopyBudget, ""},
		{[]string{"-exits", "copy", "-copy-budget", "900"}, nil, true, 900, ""},
		{nil, map[string]string{"MATRIX_COPY_BUDGET": "0"}, true, 0, ""},
		{[]string{"-copy-budget", "50"}, map[string]string{"MATRIX_COPY_BUDGET": "0"}, true, 50, ""},
		{[]string{"-exits", "returns", "-copy-budget", "900"}, nil, true, 0, ""},
		{nil, map[string]string{"MATRIX_EXITS": "defer"}, false, 0, ""},
		{[]string{"-exits", "sometimes"}, nil, false, 0, `bad exit hook mode "sometimes"`},
		{[]string{"-copy-budget", "big"}, nil, false, 0, `bad copy budget "big"`},
	} {
		getenv := func(k string) string { return tc.env[k] }
		cfg, _, err := parseConfig(tc.args, getenv)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %v: error %v, want %q", tc.args, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q %v: %v", tc.args, tc.env, err)
		}
		if cfg.returnExits != tc.returns || cfg.copyBudget != tc.budget {
			t.Errorf("%q %v: returns %v, copy budget %d; want %v, %d", tc.args, tc.env, cfg.returnExits, cfg.copyBudget, tc.returns, tc.budget)
		}
	}
}

// TestBoundedConfig: -bounded (and MATRIX_BOUNDED) chooses whether
// functions proven bounded are left out, and takes part in the cache key.
func TestBoundedConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	checkSetting(t, "hook bounded", func(c *config) bool { return c.hookBounded }, []string{"-bounded", "hook"}, []settingCase{
		{nil, nil, false, ""},
		{[]string{"-bounded", "skip"}, nil, false, ""},
		{[]string{"-bounded", "hook"}, nil, true, ""},
		{nil, map[string]string{"MATRIX_BOUNDED": "hook"}, true, ""},
		{[]string{"-bounded", "skip"}, map[string]string{"MATRIX_BOUNDED": "hook"}, false, ""},
		{[]string{"-bounded", "always"}, nil, false, `bad bounded-function mode "always"`},
	})
}

// settingCase is a command line and an environment of matrixexec, and the
// value of a setting they give, or the error they fail with.
type settingCase struct {
	args []string
	env  map[string]string
	want bool
	err  string
}

// checkSetting checks the value get reads from the configuration of each
// case, and that the configuration of the command line on (the setting
// turned on) hashes apart from the defaults', so that a change rebuilds.
func checkSetting(t *testing.T, name string, get func(*config) bool, on []string, cases []settingCase) {
	t.Helper()
	for _, tc := range cases {
		cfg, _, err := parseConfig(tc.args, func(k string) string { return tc.env[k] })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %v: error %v, want %q", tc.args, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q %v: %v", tc.args, tc.env, err)
		}
		if got := get(cfg); got != tc.want {
			t.Errorf("%q %v: %s %v, want %v", tc.args, tc.env, name, got, tc.want)
		}
	}
	off, _, _ := parseConfig(nil, func(string) string { return "" })
	onCfg, _, _ := parseConfig(on, func(string) string { return "" })
	hoff, err := configHash(off)
	if err != nil {
		t.Fatal(err)
	}
	hon, err := configHash(onCfg)
	if err != nil {
		t.Fatal(err)
	}
	if hoff == hon {
		t.Errorf("%q and the defaults hash alike: a change would not rebuild", on)
	}
}

// MATRIX_OTLP (-otlp) chooses the tracer package of zero-code programs (by
// default the one with the OTLP sink, except with a MATRIX_ZEROCODE_MODULE),
// and is part of the configuration's hash: main packages compiled with one
// setting are not reused with the other.
func TestOTLPSetting(t *testing.T) {
	t.Chdir(t.TempDir())
	otlp := func(c *config) bool {
		pkg := c.zeroCodeConfig().TracerPkg()
		if c.otlp != (pkg == blacklist.AutoTracerPkg) || (!c.otlp && pkg != blacklist.LocalTracerPkg) {
			t.Errorf("otlp %v links %s", c.otlp, pkg)
		}
		return c.otlp
	}
	module := t.TempDir()
	if err := os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkSetting(t, "otlp", otlp, []string{"-otlp", "off"}, []settingCase{
		{nil, nil, true, ""},
		{nil, map[string]string{"MATRIX_ZEROCODE_MODULE": module}, false, ""},
		{nil, map[string]string{"MATRIX_ZEROCODE_MODULE": module, "MATRIX_OTLP": "on"}, true, ""},
		{[]string{"-otlp", "on"}, nil, true, ""},
		{nil, map[string]string{"MATRIX_OTLP": "off"}, false, ""},
		{[]string{"-otlp", "off"}, map[string]string{"MATRIX_OTLP": "on"}, false, ""},
		{nil, map[string]string{"MATRIX_OTLP": "1"}, false, `bad OTLP sink setting "1" (MATRIX_OTLP or -otlp): want on or off`},
	})
}
