package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestToolLineCached checks that the tool's -V=full line is kept between
// runs, and that a changed tool is asked again.
func TestToolLineCached(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake tool is a shell script")
	}
	tool, write, runs := fakeTool(t, "compile")
	write("go1.0")
	for i := 0; i < 3; i++ {
		line, err := cachedToolLine([]string{tool, "-V=full"}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if line != "compile version go1.0" {
			t.Fatalf("line %q", line)
		}
	}
	if n := runs(); n != 1 {
		t.Errorf("the tool ran %d times for 3 questions, want 1", n)
	}
	// A new toolchain in place: another size and modification time.
	write("go1.10")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(tool, later, later); err != nil {
		t.Fatal(err)
	}
	line, err := cachedToolLine([]string{tool, "-V=full"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if line != "compile version go1.10" || runs() != 2 {
		t.Errorf("after the tool changed: line %q, %d runs", line, runs())
	}
}

// TestCCQuery: cmd/go asks the C compiler for its version through the
// -toolexec command, by the name CC gives (here a name found in PATH), on
// every build with a cgo package. The answer is the compiler's own, on the
// streams it wrote it to; it is kept, and asked again when the compiler,
// the arguments or the message language change, and a failing compiler's
// answer is never kept.
func TestCCQuery(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake compiler is a shell script")
	}
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("HOME", dir)
	t.Setenv("LC_ALL", "C")
	count := filepath.Join(dir, "count")
	cc := filepath.Join(dir, "fakecc")
	write := func(version string, status int) {
		script := "#!/bin/sh\necho run >> " + count + "\necho out\necho \"args: $*\" >&2\necho 'fakecc version " + version + " (test)' >&2\nexit " + strconv.Itoa(status) + "\n"
		if err := os.WriteFile(cc, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "run")
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ask := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		code = run(append([]string{"fakecc", "-###"}, args...), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	check := func(version string, wantRuns int, args ...string) {
		t.Helper()
		code, stdout, stderr := ask(args...)
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		want := "args: -### " + strings.Join(args, " ") + "\nfakecc version " + version + " (test)\n"
		if stdout != "out\n" || stderr != want {
			t.Errorf("answer %q, %q; want the compiler's own: %q, %q", stdout, stderr, "out\n", want)
		}
		if n := runs(); n != wantRuns {
			t.Errorf("the compiler ran %d times, want %d", n, wantRuns)
		}
	}
	write("9.8.7", 0)
	for i := 0; i < 3; i++ {
		check("9.8.7", 1, "-x", "c", "-c", "-")
	}
	check("9.8.7", 2, "-x", "c++", "-c", "-")
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	check("9.8.7", 3, "-x", "c", "-c", "-")
	t.Setenv("LC_ALL", "C")
	check("9.8.7", 3, "-x", "c", "-c", "-")

	// A new compiler in place: another size and modification time.
	write("10.0.1", 0)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(cc, later, later); err != nil {
		t.Fatal(err)
	}
	check("10.0.1", 4, "-x", "c", "-c", "-")

	// A failing compiler: its status and its words, every time.
	write("10.0.2", 3)
	later = later.Add(time.Minute)
	if err := os.Chtimes(cc, later, later); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		code, _, stderr := ask("-x", "c", "-c", "-")
		if code != 3 || !strings.Contains(stderr, "fakecc version 10.0.2") {
			t.Errorf("failing compiler: exit %d, stderr %q; want 3 and its own words", code, stderr)
		}
	}
	if n := runs(); n != 6 {
		t.Errorf("the failing compiler ran %d times for 2 questions after 4 runs, want 6 in all", n)
	}
}

// TestOtherToolLinesCached: cmd/go asks every tool it may run for its line
// on every build; matrixexec answers asm's (and cgo's, vet's) from the same
// cache as the compiler's, unchanged, so a build with nothing to assemble
// runs no assembler.
func TestOtherToolLinesCached(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake tool is a shell script")
	}
	tool, write, runs := fakeTool(t, "asm")
	write("go1.0")
	for i := 0; i < 3; i++ {
		var stdout, stderr bytes.Buffer
		if code := run([]string{tool, "-V=full"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
		if stdout.String() != "asm version go1.0\n" {
			t.Fatalf("answer %q, want the tool's own line", stdout.String())
		}
	}
	if n := runs(); n != 1 {
		t.Errorf("the tool ran %d times for 3 questions, want 1", n)
	}
}

// fakeTool makes a user cache directory of the test's own and a tool
// named name in a temporary directory: write(version) makes it answer
// -V=full with "name version VERSION", and runs counts how often it ran.
func fakeTool(t *testing.T, name string) (tool string, write func(version string), runs func() int) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("HOME", dir)
	count := filepath.Join(dir, "count")
	tool = filepath.Join(dir, name)
	write = func(version string) {
		script := "#!/bin/sh\necho run >> " + count + "\necho '" + name + " version " + version + "'\n"
		if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runs = func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "run")
	}
	return tool, write, runs
}
