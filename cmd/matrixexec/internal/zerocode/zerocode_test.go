package zerocode

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/statcache"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
	"github.com/matrixgo/matrix/internal/self"
)

// TestNestedPGO: the nested build names the profile the go command was
// given, never the compile's preprocessed copy of it.
func TestNestedPGO(t *testing.T) {
	t.Setenv("GOFLAGS", "")
	compile := &toolcmd.Cmd{Tool: "compile", Flags: []string{"-p", "main", "-pgoprofile=/cache/ab-d"}}
	for _, tc := range []struct {
		name    string
		compile *toolcmd.Cmd
		parent  []string
		want    string
	}{
		{"no profile", &toolcmd.Cmd{Tool: "compile", Flags: []string{"-p", "main"}}, nil, ""},
		{"-pgo=FILE on the command line", compile, []string{"-pgo=/src/cpu.pprof"}, ""},
	} {
		got, err := nestedPGO(tc.compile, tc.parent, nil)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	// -pgo=auto (the default): default.pgo in the main package's
	// directory.
	dir := t.TempDir()
	mainDir := func() (string, error) { return dir, nil }
	if _, err := nestedPGO(compile, nil, mainDir); err == nil || !strings.Contains(err.Error(), "default.pgo does not exist") {
		t.Errorf("no default.pgo: err = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "default.pgo"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := nestedPGO(compile, nil, mainDir); err != nil || got != "-pgo="+filepath.Join(dir, "default.pgo") {
		t.Errorf("default.pgo: %q, %v", got, err)
	}
	if got, err := mainPackageDir("go", []string{filepath.Join(dir, "main.go")}); err != nil || got != dir {
		t.Errorf("mainPackageDir = %q, %v; want %q", got, err, dir)
	}
	t.Setenv("GOFLAGS", "-pgo=/src/cpu.pprof")
	if got, err := nestedPGO(compile, nil, mainDir); err != nil || got != "" {
		t.Errorf("-pgo=FILE in GOFLAGS: %q, %v", got, err)
	}
}

// TestMentionsSelf: the first test of the module graph reads the files the
// go command reads: the go.mod that GOFLAGS' -modfile names, the workspace
// file GOWORK names (whatever its name), none when GOWORK=off, and the
// modules a workspace uses, comments and all.
func TestMentionsSelf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) { t.Helper(); writeFile(t, dir, name, content) }
	const plain = "module example.com/app\n\ngo 1.24\n"
	const self = "module example.com/app\n\ngo 1.24\n\nrequire " + "github.com/matrixgo/matrix v0.1.0\n"
	write("app/go.mod", plain)
	write("app/tools.mod", self)
	write("ws/dev.work", "go 1.24\n\nuse (\n\t../tool // the module with matrixexec\n\t../app\n)\n")
	write("tool/go.mod", "module example.com/tool\n\ngo 1.24\n\ntool github.com/matrixgo/matrix/cmd/matrixexec\n")
	write("app/go.work", "go 1.24\n\nuse .\nuse ../tool\n")
	t.Chdir(filepath.Join(dir, "app"))

	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags []string // the go command's build flags
		want  bool
	}{
		{"go.work next to go.mod", nil, nil, true},
		{"GOWORK=off: go.mod alone", map[string]string{"GOWORK": "off"}, nil, false},
		{"-modfile in GOFLAGS", map[string]string{"GOWORK": "off", "GOFLAGS": "-mod=mod -modfile=tools.mod"}, nil, true},
		{"--modfile, absolute", map[string]string{"GOWORK": "off", "GOFLAGS": "--modfile=" + filepath.Join(dir, "app", "tools.mod")}, nil, true},
		{"GOWORK names another file", map[string]string{"GOWORK": filepath.Join(dir, "ws", "dev.work")}, nil, true},
		{"MATRIX_ZEROCODE_MODULE", map[string]string{"GOWORK": "off", EnvModule: filepath.Join(dir, "tool")}, nil, true},
		{"-modfile on the command line", map[string]string{"GOWORK": "off"}, []string{"-modfile=" + filepath.Join(dir, "app", "tools.mod")}, true},
		{"the command line overrides GOFLAGS", map[string]string{"GOWORK": "off", "GOFLAGS": "-modfile=tools.mod"}, []string{"-modfile=" + filepath.Join(dir, "app", "go.mod")}, false},
	} {
		getenv := func(k string) string { return tc.env[k] }
		if got := mentionsSelf(getenv, func() []string { return tc.flags }); got != tc.want {
			t.Errorf("%s: mentionsSelf = %v, want %v", tc.name, got, tc.want)
		}
	}

	// Without the workspace's second module, nothing names this module.
	write("app/go.work", "go 1.24\n\nuse .\n")
	if mentionsSelf(func(string) string { return "" }, func() []string { return nil }) {
		t.Errorf("a workspace of the app alone: mentionsSelf = true")
	}
}

// The tracer's source hash is kept between answers, and an edit of a
// source in place or a new file gives another one.
func TestTracerSourceHashKept(t *testing.T) {
	dir, write, hashOf := tracerModule(t)
	write("tracer/auto/local/local.go", "package local\n")
	hash := func() string { t.Helper(); return hashOf(moduleDir{dir: dir}) }
	first := hash()
	if first != hash() {
		t.Fatal("the same sources hash differently")
	}
	want, err := hashTracerSources(dir)
	if err != nil || want != first {
		t.Fatalf("kept hash %s, sources hash %s (%v)", first, want, err)
	}
	// The same size, another content, a later modification time.
	later := time.Now().Add(time.Hour)
	write("beat/beat.go", "package tabe\n")
	if err := os.Chtimes(filepath.Join(dir, "beat/beat.go"), later, later); err != nil {
		t.Fatal(err)
	}
	second := hash()
	if second == first {
		t.Error("an edit in place kept the hash")
	}
	write("tracer/auto/local/zz.go", "package local\n")
	if third := hash(); third == second {
		t.Error("a new file kept the hash")
	}
}

// Only the Go files of the tracer's packages are covered: not tests, nor
// testdata; and the directory of a module in the module cache, which never
// changes, is not listed at all.
func TestTracerSourceHashCovers(t *testing.T) {
	dir, write, hash := tracerModule(t)
	first := hash(moduleDir{dir: dir})
	write("beat/beat_test.go", "package beat\n")
	write("tracer/testdata/x.go", "package x\n")
	if sum, _ := hashTracerSources(dir); sum != first {
		t.Error("a test or a testdata file changed the sources hash")
	}
	write("tracer/internal/new.go", "package internal\n")
	second := hash(moduleDir{dir: dir})
	if second == first {
		t.Error("a new package kept the hash")
	}
	// A module cache directory is keyed by its path: the hash is kept
	// however its files are touched (they never are).
	cached := moduleDir{dir: dir, immutable: true}
	kept := hash(cached)
	write("tracer/internal/new.go", "package internal // edit\n")
	if hash(cached) != kept {
		t.Error("a module cache directory was listed again")
	}
	if hash(moduleDir{dir: dir}) == second {
		t.Error("an edit kept the hash of sources that can change")
	}
}

// A module cache directory is one go list names as neither the main
// module nor a replacement by a directory, and named path@version.
func TestParseSelfModule(t *testing.T) {
	for _, tc := range []struct {
		line string
		want moduleDir
	}{
		{"/m/pkg/mod/github.com/matrixgo/matrix@v1.2.0\tmodcache", moduleDir{"/m/pkg/mod/github.com/matrixgo/matrix@v1.2.0", true}},
		{"/src/matrix", moduleDir{"/src/matrix", false}},
		{"/src/matrix\tmodcache", moduleDir{"/src/matrix", false}},
		{"", moduleDir{}},
	} {
		if got := parseSelfModule(tc.line); got != tc.want {
			t.Errorf("parseSelfModule(%q) = %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

// tracerModule makes a module of this module's path with a beat package
// in a new directory, with a cache directory of its own, and returns the
// directory, a function that writes a file in it, and hashKept.
func tracerModule(t *testing.T) (dir string, write func(name, content string), hash func(moduleDir) string) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir = t.TempDir()
	write = func(name, content string) { t.Helper(); writeFile(t, dir, name, content) }
	write("go.mod", "module github.com/matrixgo/matrix\n")
	write("beat/beat.go", "package beat\n")
	hash = func(m moduleDir) string {
		t.Helper()
		sum, err := hashKept(m)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	return dir, write, hash
}

// writeFile writes content to dir/name, making its directory.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTracerSourcesCovered checks that the tracer source hash, part of the
// tool id of every main package compiled against the zero-code tracer,
// covers every package of this module that either tracer links: a change
// in one it missed would leave main packages compiled against the old
// tracer in the build cache.
func TestTracerSourcesCovered(t *testing.T) {
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	var visited []string
	if err := walkTracerSources(root, func(dir string, _ []fs.DirEntry) error { visited = append(visited, dir); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{blacklist.LocalTracerPkg, self.Module + "/tracer/auto"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}} {{.Dir}}{{end}}", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			mod, dir, _ := strings.Cut(line, " ")
			if mod != self.Module {
				continue
			}
			if !slices.Contains(visited, dir) {
				t.Errorf("%s links %s, which the tracer source hash does not cover (it covers %v)", pkg, dir, visited)
			}
		}
	}
}

// TestTracerDepsAnchored: every package outside the standard library and
// this module that the zero-code tracers link is imported by this package
// too (sums.go), so that pinning matrixexec records its go.sum entry.
func TestTracerDepsAnchored(t *testing.T) {
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	list := func(pkg string) []string {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}} {{.ImportPath}}{{end}}", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		var pkgs []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if mod, path, _ := strings.Cut(line, " "); mod != self.Module && path != "" {
				pkgs = append(pkgs, path)
			}
		}
		return pkgs
	}
	anchored := list(self.Module + "/cmd/matrixexec/internal/zerocode")
	for _, tracer := range []string{blacklist.LocalTracerPkg, blacklist.AutoTracerPkg} {
		for _, pkg := range list(tracer) {
			if !slices.Contains(anchored, pkg) {
				t.Errorf("%s links %s, which matrixexec does not import: a module pinning matrixexec would have no go.sum entry for it", tracer, pkg)
			}
		}
	}
	if !slices.Contains(list(blacklist.AutoTracerPkg), "golang.org/x/net/http2/hpack") {
		t.Errorf("%s no longer links hpack: the list of packages it links outside this module is empty, and this test checks nothing", blacklist.AutoTracerPkg)
	}
}

// TestGraphKeyIgnoresShellVariables: the key under which the tracer's
// module directory and export files are kept changes with what the nested
// go command sees, not with a cd in the user's shell.
func TestGraphKeyIgnoresShellVariables(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	sum := func() string { return graphKey(statcache.NewKey("test"), "go").Sum() }
	t.Setenv("OLDPWD", "/one")
	t.Setenv("SHLVL", "1")
	first := sum()
	t.Setenv("OLDPWD", "/two")
	t.Setenv("SHLVL", "2")
	if sum() != first {
		t.Error("OLDPWD and SHLVL changed the key")
	}
	t.Setenv("GOFLAGS", "-tags=other")
	if sum() == first {
		t.Error("GOFLAGS did not change the key")
	}
}

func TestMissingSumPackage(t *testing.T) {
	msg := "/m/tracer/otlp/h2.go:18:2: missing go.sum entry for module providing package golang.org/x/net/http2/hpack (imported by github.com/matrixgo/matrix/tracer/otlp); to add:\n\tgo get github.com/matrixgo/matrix/tracer/otlp@v0.0.0"
	if got := missingSumPackage(msg); got != "golang.org/x/net/http2/hpack" {
		t.Errorf("missingSumPackage = %q", got)
	}
	if got := missingSumPackage("no required module provides package x"); got != "" {
		t.Errorf("missingSumPackage of another error = %q", got)
	}
	e := &MissingSumError{Package: "p/q", Module: "p", Tracer: "t"}
	if !strings.Contains(e.Error(), `run "go mod download p"`) {
		t.Errorf("message %q does not say what to run", e.Error())
	}
}

// A package that the main package imports with another archive than the
// tracer was built against is expected in a test binary of one of the
// tracer's dependencies (its test variant); in a program it means the
// two builds came from different sources, which is said, not passed over.
func TestVariantConflict(t *testing.T) {
	if err := variantConflict("github.com/matrixgo/matrix/beat", "github.com/matrixgo/matrix/beat.test"); err != nil {
		t.Errorf("test binary: %v", err)
	}
	err := variantConflict("example.com/lib", "example.com/app")
	if err == nil || !strings.Contains(err.Error(), "example.com/lib") || !strings.Contains(err.Error(), "build again") {
		t.Errorf("program: %v", err)
	}
}
