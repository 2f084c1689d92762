package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
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

// TestCCQueryPassesThrough: cmd/go asks the C compiler for its version
// through the -toolexec command, by the name CC gives (here a name found
// in PATH); the answer is the compiler's own.
func TestCCQueryPassesThrough(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake compiler is a shell script")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"args: $*\" >&2\necho 'fakecc version 9.8.7 (test)' >&2\n"
	if err := os.WriteFile(filepath.Join(dir, "fakecc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	code := run([]string{"fakecc", "-###", "-x", "c", "-c", "-"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "args: -### -x c -c -") || !strings.Contains(stderr.String(), "fakecc version 9.8.7") {
		t.Errorf("stderr %q: want the compiler's own answer", stderr.String())
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
