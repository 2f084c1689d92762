package rewrite

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/testgo"
)

// TestPatchedStdCompiles applies the runtime, net/http, testing and
// database/sql patches to the sources of each supported Go release,
// compiles the patched
// packages through go build -overlay and runs go vet on them: the
// recorder's runtime file and the dispatch sources are checked as the Go
// code they are, by the compiler and the vet checks of that release. With
// the patched runtime it also builds and vets a module whose packages are
// instrumented (with their hooks files) and a test binary's main package
// patched by PatchTestMain: the files added to users' packages are checked
// too, linked against the runtime entry points they name.
func TestPatchedStdCompiles(t *testing.T) {
	releases := []string{"local"}
	if !testing.Short() {
		releases = append(releases, testgo.OtherReleases()...)
	}
	for _, rel := range releases {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			env := append(os.Environ(), "GOTOOLCHAIN="+rel, "GOFLAGS=-buildvcs=false")
			goBin := "go"
			if rel != "local" {
				// A toolchain fetched through GOTOOLCHAIN lives in the
				// module cache, whose files go build -overlay does not
				// replace: build with a copy of it.
				goBin, env = copyToolchain(t, rel)
			}
			goCmdIn := func(dir string, args ...string) *exec.Cmd {
				cmd := exec.Command(goBin, args...)
				cmd.Env, cmd.Dir = env, dir
				return cmd
			}
			goCmd := func(args ...string) *exec.Cmd { return goCmdIn(t.TempDir(), args...) }
			out, err := goCmd("list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "runtime", "net/http", "testing", "database/sql").Output()
			if err != nil {
				t.Fatalf("go list with %s: %v", rel, err)
			}
			dir := t.TempDir()
			replace := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.SplitN(line, "\t", 3)
				pkg, pkgDir := f[0], f[1]
				var files []string
				for _, name := range strings.Fields(f[2]) {
					files = append(files, filepath.Join(pkgDir, name))
				}
				patchDir := filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_"))
				if err := os.Mkdir(patchDir, 0o755); err != nil {
					t.Fatal(err)
				}
				var patched []string
				if pkg == "runtime" {
					if err := CheckGoRelease(filepath.Dir(filepath.Dir(pkgDir))); err != nil {
						t.Fatal(err)
					}
					// With deferred exits: deferreturn's fast path
					// is compiled and vetted too.
					patched, err = PatchRuntime(files, patchDir, false, true)
				} else {
					patched, err = PatchStd(pkg, files, patchDir)
				}
				if err != nil {
					t.Fatalf("patch %s: %v", pkg, err)
				}
				// Each patched or added file takes the place of a file of
				// the package's directory in the overlay.
				for _, p := range patched {
					if strings.HasPrefix(p, patchDir) {
						replace[filepath.Join(pkgDir, filepath.Base(p))] = p
					}
				}
			}
			overlay, err := json.Marshal(map[string]any{"Replace": replace})
			if err != nil {
				t.Fatal(err)
			}
			ov := filepath.Join(dir, "overlay.json")
			if err := os.WriteFile(ov, overlay, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"build", "-overlay=" + ov, "runtime", "net/http", "testing", "database/sql"},
				{"vet", "-overlay=" + ov, "runtime", "net/http", "testing", "database/sql"},
			} {
				if out, err := goCmd(args...).CombinedOutput(); err != nil {
					t.Errorf("go %s with %s: %v\n%s", args[0], rel, err, out)
				}
			}
			mod := instrumentedModule(t)
			for _, args := range [][]string{
				{"build", "-overlay=" + ov, "-o", t.TempDir() + string(filepath.Separator), "./..."},
				{"vet", "-overlay=" + ov, "./..."},
			} {
				if out, err := goCmdIn(mod, args...).CombinedOutput(); err != nil {
					t.Errorf("go %s of the instrumented module with %s: %v\n%s", args[0], rel, err, out)
				}
			}
		})
	}
}

// instrumentedModule writes a module of three packages as matrixexec
// compiles them: a library and a program instrumented with their hooks
// files (the program's declaring the main-entered hook too), and a main
// package as go test generates it, patched by PatchTestMain. It returns the
// module's directory.
func instrumentedModule(t *testing.T) string {
	t.Helper()
	mod := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		path = filepath.Join(mod, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.24\n")
	write("p/p.go", "package p\n\nimport \"strings\"\n\n// F counts the words of s.\nfunc F(s string) int { return len(strings.Fields(s)) }\n")
	write("cmd/main.go", "package main\n\nimport \"example.com/m/p\"\n\nfunc main() { println(p.F(\"a b\")) }\n")
	for _, pkg := range []struct{ dir, path, name string }{{"p", "example.com/m/p", "p.go"}, {"cmd", "example.com/m/cmd", "main.go"}} {
		src := filepath.Join(mod, pkg.dir, pkg.name)
		p, err := NewPlan([]string{src}, Options{PkgPath: pkg.path, InlineBudget: -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Funcs) != 1 {
			t.Fatalf("%s: %d functions instrumented, want 1", pkg.path, len(p.Funcs))
		}
		ids := []uint32{1}
		out, err := p.Apply(ids)
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Src == nil {
			t.Fatalf("%s: not rewritten", pkg.path)
		}
		write(filepath.Join(pkg.dir, pkg.name), string(out[0].Src))
		write(filepath.Join(pkg.dir, HooksFileName), string(p.HooksFile(ids)))
	}
	testMain := filepath.Join(t.TempDir(), TestMainFile)
	if err := os.WriteFile(testMain, []byte("package main\n\nfunc main() {\n\tprintln()\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(mod, "testmain"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := PatchTestMain(testMain, filepath.Join(mod, "testmain"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Dir(f) != filepath.Join(mod, "testmain") {
			t.Fatalf("PatchTestMain left %s in place", f)
		}
		// The go command leaves out files whose names begin with "_".
		if filepath.Base(f) == TestMainFile {
			if err := os.Rename(f, filepath.Join(mod, "testmain", "main.go")); err != nil {
				t.Fatal(err)
			}
		}
	}
	return mod
}

// copyToolchain copies the GOROOT of Go release rel (fetched through
// GOTOOLCHAIN) to a temporary directory and returns its go command and the
// environment to run it in.
func copyToolchain(t *testing.T, rel string) (string, []string) {
	t.Helper()
	// GOROOT is read from stdout alone: the go command reports the
	// toolchain's download on stderr.
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+rel)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOTOOLCHAIN=%s go env GOROOT: %v\n%s", rel, err, stderr.Bytes())
	}
	src := strings.TrimSpace(string(out))
	dst := filepath.Join(t.TempDir(), "go")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	// The module cache keeps files read-only, and the copy keeps modes.
	err = filepath.WalkDir(dst, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(path, info.Mode().Perm()|0o200)
	})
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GOROOT="+dst)
	return filepath.Join(dst, "bin", "go"), env
}
