// Package integration holds the end-to-end tests of Matrix for Go: they
// build real programs with go build -toolexec=matrixexec, run them, and
// compare them with plain builds. The scripts are in testdata/script and use
// the testscript language of cmd/go's own tests, plus the commands defined
// in commands_test.go.
package integration

import (
	"fmt"
	"go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/testgo"
	"github.com/rogpeppe/go-internal/testscript"
)

// binDir holds the matrixexec built for this test run.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "matrix-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	// The tools are built in this module's own module, without the
	// workspace (go.work at the repository's root), so that they link
	// the versions of their dependencies the module asks for, the oldest
	// that work, as in a service that pins them; and without version
	// control information, so that they do not change with every commit.
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", binDir+string(filepath.Separator), "./cmd/matrixexec/...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building matrixexec:", err)
		return 1
	}
	// The scripts build modules offline (GOPROXY=off) that require this
	// module: the go command then reads the go.mod file of every module
	// in its graph, versions the build does not select included. A module
	// cache filled by building this module lacks those on a new machine;
	// loading the graph once, with the proxy, fetches them.
	cmd = exec.Command("go", "mod", "graph")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "loading the module graph:", err)
		return 1
	}
	sharedMap, err = testgo.SharedMap(filepath.Join(dir, "shared"), filepath.Join(binDir, "matrixexec"+exeSuffix()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// sharedMap is one mapping file shared by the scripts that do not test the
// map itself, so that the standard library compiled under matrixexec is
// cached across scripts, and across runs (the map's identity is part of the
// tool id): see testgo.SharedMap.
var sharedMap string

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func goEnv(t testing.TB, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func params(t *testing.T, dir string) testscript.Params {
	goroot := goEnv(t, "GOROOT")
	env := map[string]string{
		"GOCACHE":    goEnv(t, "GOCACHE"),
		"GOMODCACHE": goEnv(t, "GOMODCACHE"),
		"GOPATH":     goEnv(t, "GOPATH"),
		"GOPROXY":    goEnv(t, "GOPROXY"),
		// The scripts build modules offline (GOPROXY=off) against this
		// checkout; the checksum database is served through the proxy, so
		// checksums come from the module cache.
		"GOSUMDB":    "off",
		"GOFLAGS":    "-buildvcs=false",
		"MATRIX_MAP": sharedMap,
		// A rewrite the compiler rejects fails the build, rather than
		// leave functions uninstrumented with a warning.
		"MATRIX_STRICT": "1",
		"MATRIXROOT":    moduleRootDir(t),
		// The directory of the matrixexec and matrixreport built for
		// this test run.
		"MATRIXBIN": binDir,
	}
	return testscript.Params{
		Dir: dir,
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", binDir+string(os.PathListSeparator)+filepath.Join(goroot, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
			for k, v := range env {
				e.Setenv(k, v)
			}
			e.Setenv("GOTOOLCHAIN", "local")
			return nil
		},
		Cmds:                scriptCommands(),
		Condition:           releaseCondition(goEnv(t, "GOVERSION")),
		RequireExplicitExec: true,
	}
}

// releaseCondition returns the scripts' conditions for scripts that build
// with the Go release goversion (go1.26.8): "release:go1.N" holds for
// go1.N and later ([go1.N], built into testscript, is about the Go the
// tests were built with); the others are scriptCondition's.
func releaseCondition(goversion string) func(string) (bool, error) {
	return func(cond string) (bool, error) {
		if v, ok := strings.CutPrefix(cond, "release:"); ok {
			if !version.IsValid(v) {
				return false, fmt.Errorf("condition %q: %q is not a Go version", cond, v)
			}
			return version.Compare(goversion, v) >= 0, nil
		}
		return scriptCondition(cond)
	}
}

func moduleRootDir(t testing.TB) string {
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "short":
		return testing.Short(), nil
	case "root":
		// Giving a file or link to another user needs root.
		return os.Geteuid() == 0, nil
	case "cgo":
		out, err := exec.Command("go", "env", "CGO_ENABLED").Output()
		return err == nil && strings.TrimSpace(string(out)) == "1", nil
	case "race":
		// -race compiles the standard library once more, and the race
		// detector slows what runs: the full suite only.
		return !testing.Short() && (runtime.GOOS == "linux" || runtime.GOOS == "darwin"), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

func TestScripts(t *testing.T) {
	p := params(t, "testdata/script")
	if testing.Short() {
		files, err := filepath.Glob(filepath.Join(p.Dir, "*.txtar"))
		if err != nil {
			t.Fatal(err)
		}
		p.Dir = ""
		left := 0
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".txtar")
			if why, ok := fullOnly[name]; ok {
				left++
				t.Run(name, func(t *testing.T) { t.Skip("skipped in -short mode: " + why) })
				continue
			}
			p.Files = append(p.Files, f)
		}
		if left != len(fullOnly) {
			t.Errorf("fullOnly names %d scripts, %d of which are in %s", len(fullOnly), left, "testdata/script")
		}
	}
	testscript.Run(t, p)
}

// fullOnly are the scripts that -short leaves out, and why. Every other
// script compiles the standard library once for all runs (see sharedMap);
// these compile it again on every run, or in a configuration of their
// own, so they would take most of a -short run's time. (The [race] parts
// of scripts are left out too: see scriptCondition.)
var fullOnly = map[string]string{
	"boundaries":     "downloads modernc.org/sqlite's module graph and compiles it instrumented",
	"buildmodes":     "compiles the standard library once per build mode (race, PIE, cover, -N -l, other systems)",
	"fw_chi":         framework,
	"fw_connect":     framework,
	"fw_connect2":    framework,
	"fw_echo":        framework,
	"fw_echo5":       framework,
	"fw_fasthttp":    framework,
	"fw_fiber":       framework,
	"fw_gateway":     framework,
	"fw_gin":         framework,
	"fw_gozero":      framework,
	"fw_grpc":        framework,
	"fw_hertz":       framework,
	"fw_httprouter":  framework,
	"fw_mux":         framework,
	"fw_nats":        framework,
	"cache":          ownMap,
	"linedirectives": "compiles the standard library with -trimpath",
	"mapfs":          ownMap,
	"mappaths":       ownMap,
	"modules":        ownMap,
	"nplusone_sql":   "downloads modernc.org/sqlite's module graph and compiles it instrumented, as boundaries does",
	"pgo":            runProfile,
	"plugins":        "compiles the standard library for -buildmode=plugin",
	"pgozerocode":    runProfile,
	"revertedmap":    ownMap,
	"targets":        "compiles the standard library for GOARCH=386 and arm, and for Plan 9",
	"zerocodecache":  "compiles the zero-code tracer from a copy of this checkout, three times",
}

const (
	ownMap     = "builds with maps of its own, whose new identities compile the standard library again on every run"
	runProfile = "compiles the standard library with a CPU profile recorded during the run"
	framework  = "downloads a web framework's module graph and compiles it plain and instrumented"
)

// releaseScripts are scripts about what changed in a Go release, with that
// release: TestScripts runs them with the installed Go, and TestGoVersions
// with the other releases from that one on, so that both sides of the
// change are checked.
var releaseScripts = []struct{ name, since string }{
	{"linedirectives", "go1.27"}, // relative //line names resolved against the directive's file
	{"http2", "go1.27"},          // HTTP/2 moved into net/http/internal/http2
}

// TestGoVersions runs the semantics and entry point scripts with each
// supported Go release other than the installed one, and the scripts of
// releaseScripts with the releases they concern.
func TestGoVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads Go toolchains; skipped in -short mode")
	}
	releases := testgo.OtherReleases()
	if len(releases) == 0 {
		t.Skip(testgo.NoReleases)
	}
	for _, v := range releases {
		t.Run(v, func(t *testing.T) {
			p := params(t, "testdata/script")
			p.Dir = ""
			p.Files = []string{"testdata/script/semantics.txtar", "testdata/script/entrypoints.txtar"}
			for _, s := range releaseScripts {
				if version.Compare(v, s.since) >= 0 {
					p.Files = append(p.Files, "testdata/script/"+s.name+".txtar")
				}
			}
			p.Condition = releaseCondition(v)
			setup := p.Setup
			p.Setup = func(e *testscript.Env) error {
				if err := setup(e); err != nil {
					return err
				}
				setRelease(t, e, v)
				return nil
			}
			testscript.Run(t, p)
		})
	}
}

// setRelease makes a script build with Go release v, and with a map of
// that release's own (kept across runs, as sharedMap is).
func setRelease(t *testing.T, e *testscript.Env, v string) {
	e.Setenv("GOTOOLCHAIN", v)
	// Switching toolchains verifies the toolchain module against the
	// checksum database.
	e.Setenv("GOSUMDB", goEnv(t, "GOSUMDB"))
	e.Setenv("MATRIX_MAP", releaseMap(v))
}

// releaseMap is the map of the builds with Go release v and the matrixexec
// of binDir.
func releaseMap(v string) string {
	return filepath.Join(filepath.Dir(sharedMap), v, "methodMapping.txt")
}
