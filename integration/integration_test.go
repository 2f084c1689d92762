// Package integration holds the end-to-end tests of Matrix for Go: they
// build real programs with go build -toolexec=matrixexec, run them, and
// compare them with plain builds. The scripts are in testdata/script and use
// the testscript language of cmd/go's own tests, plus the commands defined
// in commands_test.go.
package integration

import (
	"fmt"
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
	cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "../cmd/matrixexec")
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
		Condition:           scriptCondition,
		RequireExplicitExec: true,
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
	"buildmodes":  "compiles the standard library once per build mode (race, PIE, cover, -N -l, other systems)",
	"fw_chi":      framework,
	"fw_echo":     framework,
	"fw_gin":      framework,
	"fw_mux":      framework,
	"cache":       ownMap,
	"mapfs":       ownMap,
	"mappaths":    ownMap,
	"modules":     ownMap,
	"pgo":         runProfile,
	"plugins":     "compiles the standard library for -buildmode=plugin",
	"pgozerocode": runProfile,
	"revertedmap": ownMap,
}

const (
	ownMap     = "builds with maps of its own, whose new identities compile the standard library again on every run"
	runProfile = "compiles the standard library with a CPU profile recorded during the run"
	framework  = "downloads a web framework's module graph and compiles it plain and instrumented"
)

// TestGoVersions runs the semantics and entry point scripts with each
// supported Go release other than the installed one.
func TestGoVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads Go toolchains; skipped in -short mode")
	}
	for _, v := range testgo.OtherReleases() {
		t.Run(v, func(t *testing.T) {
			p := params(t, "testdata/script")
			p.Dir = ""
			p.Files = []string{"testdata/script/semantics.txtar", "testdata/script/entrypoints.txtar"}
			setup := p.Setup
			p.Setup = func(e *testscript.Env) error {
				if err := setup(e); err != nil {
					return err
				}
				e.Setenv("GOTOOLCHAIN", v)
				// Switching toolchains verifies the toolchain module
				// against the checksum database.
				e.Setenv("GOSUMDB", goEnv(t, "GOSUMDB"))
				e.Setenv("MATRIX_MAP", filepath.Join(filepath.Dir(sharedMap), v, "methodMapping.txt"))
				return nil
			}
			testscript.Run(t, p)
		})
	}
}
