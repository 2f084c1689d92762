package testgo

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// EnvLinkedBinary is set in the environment of the linked test binary
// MainLinked runs, so that it runs its tests rather than itself again.
const EnvLinkedBinary = "MATRIX_TEST_LINKED_BINARY"

// LinkedTest is the name of the test that runs a package's tests in a
// linked binary (see MainLinked and RunLinked).
const LinkedTest = "TestLinked"

// MainLinked is the TestMain of a package whose tests need the recorder
// linked into the test binary (the recorder's and the tracers' own
// packages), so that a plain go test runs every test and skips none. The
// package declares
//
//	func TestLinked(t *testing.T) { testgo.RunLinked(t) }
//
// linked says whether this binary is linked (beat.Linked()). A linked
// binary, built with -toolexec=matrixexec, runs its tests as any binary
// does, but for the tests named in plain and TestLinked. A plain binary
// runs only those: the tests named in plain check the plain build's no-op
// contract, and TestLinked runs every other test in a linked binary.
// MATRIX_TEST_LINKED=off leaves TestLinked out.
func MainLinked(m *testing.M, linked bool, plain ...string) int {
	flag.Parse()
	if linked || os.Getenv(EnvLinkedBinary) == "1" {
		setSkip("^(" + strings.Join(append(plain, LinkedTest), "|") + ")$")
		return m.Run()
	}
	run := flag.Lookup("test.run").Value.String()
	var mine []string
	for _, name := range plain {
		if ok, _ := regexp.MatchString(topLevel(run), name); ok || run == "" {
			mine = append(mine, name)
		}
	}
	if os.Getenv("MATRIX_TEST_LINKED") != "off" {
		mine = append(mine, LinkedTest)
	}
	if len(mine) == 0 {
		mine = append(mine, "$^") // nothing: -run selected no plain test
	}
	_ = flag.Set("test.run", "^("+strings.Join(mine, "|")+")$")
	return m.Run()
}

// RunLinked is TestLinked: it builds matrixexec and the package's test
// binary with -toolexec=matrixexec (and -race when this binary was built
// with it), with the module's shared test map (see SharedMap), and runs
// that binary with this one's command line (-test.run, -test.v,
// -test.short, … as go test gave them): its tests' output is this
// binary's, and its failure fails t.
//
// go test caches a package's result by the files its tests looked at:
// RunLinked looks at every Go source file of the module outside
// integration/, so that a change to matrixexec or to the runtime patch,
// which the linked binary is built with, runs the tests again.
func RunLinked(t *testing.T) {
	if err := runLinked(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("the package's tests failed in the linked binary: %v", err)
		}
		t.Fatalf("the package's tests in a linked binary: %v", err)
	}
}

// topLevel returns the part of a -run pattern that matches top-level test
// names (before the first slash).
func topLevel(run string) string {
	top, _, _ := strings.Cut(run, "/")
	return top
}

// setSkip adds pattern to the -test.skip flag.
func setSkip(pattern string) {
	f := flag.Lookup("test.skip")
	if f == nil {
		return
	}
	if old := f.Value.String(); old != "" {
		pattern = old + "|" + pattern
	}
	_ = f.Value.Set(pattern)
}

// runLinked builds the calling package's test binary with
// -toolexec=matrixexec and runs it with this binary's arguments.
func runLinked() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	statSources(root)
	dir, err := os.MkdirTemp("", "matrix-linked-test-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const goTool = "go" // go test puts its GOROOT/bin first in PATH
	exe := filepath.Join(dir, "matrixexec")
	build := exec.Command(goTool, "build", "-o", exe, "github.com/matrixgo/matrix/cmd/matrixexec")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build matrixexec: %w\n%s", err, out)
	}
	mapPath, err := SharedMap(dir, exe)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, "linked.test")
	args := []string{"test", "-c", "-o", bin, "-toolexec=" + exe}
	if raceEnabled {
		args = append(args, "-race")
	}
	compile := exec.Command(goTool, append(args, ".")...)
	compile.Dir = wd
	compile.Env = append(os.Environ(), "MATRIX_MAP="+mapPath)
	if out, err := compile.CombinedOutput(); err != nil {
		return fmt.Errorf("build the linked test binary: %w\n%s", err, out)
	}
	cmd := exec.Command(bin, linkedArgs(os.Args[1:])...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), EnvLinkedBinary+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}

// linkedArgs returns the command line of the linked binary: this binary's,
// without the files only one binary may write (go test's log of the
// files a test looked at, and coverage).
func linkedArgs(args []string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "test.testlogfile", "test.gocoverdir", "test.coverprofile":
			continue
		}
		out = append(out, a)
	}
	return out
}

// moduleRoot returns the directory of the module that holds the calling
// package (the first go.mod above the working directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// statSources looks at every Go source file of the module under root
// outside integration/ and testdata directories, so that go test's cache
// of the calling package's result depends on them.
func statSources(root string) {
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "integration", ".matrix":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			_, _ = os.Stat(path)
		}
		return nil
	})
}
