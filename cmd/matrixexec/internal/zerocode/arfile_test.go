package zerocode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestArMember: a member appended to a package archive the compiler wrote
// is read back, listed by the toolchain's pack, and skipped by the linker.
func TestArMember(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and links a program; skipped in -short mode")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "m.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "m.a")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		// The output is data (an importcfg, a listing): stdout alone,
		// without what the go command says on stderr (downloads).
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
	// A program's main package, as go build compiles it.
	run("go", "tool", "compile", "-p", "main", "-pack", "-o", archive, src)
	if got, err := readArMember(archive, linkMember); err != nil || got != nil {
		t.Fatalf("before: member %q, %v", got, err)
	}
	if err := appendArMember(archive, linkMember, []byte("packagefile a=b\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := readArMember(archive, linkMember); err != nil || string(got) != "packagefile a=b\n" {
		t.Fatalf("member %q, %v", got, err)
	}
	if list := run("go", "tool", "pack", "t", archive); list != "__.PKGDEF\n_go_.o\n"+linkMember+"\n" {
		t.Errorf("pack t lists\n%s", list)
	}
	if got := run("go", "tool", "pack", "p", archive, linkMember); got != "packagefile a=b\n" {
		t.Errorf("pack p prints %q", got)
	}
	// The linker skips the members.
	importcfg := filepath.Join(dir, "importcfg")
	std := run("go", "list", "-export", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}", "-deps", "runtime")
	if err := os.WriteFile(importcfg, []byte(std), 0o644); err != nil {
		t.Fatal(err)
	}
	run("go", "tool", "link", "-importcfg", importcfg, "-o", filepath.Join(dir, "m"), archive)
	// The program prints with println, on stderr.
	if out, err := exec.Command(filepath.Join(dir, "m")).CombinedOutput(); err != nil || string(out) != "hello\n" {
		t.Errorf("the linked program printed %q, %v", out, err)
	}
	// A member of odd length is padded; the next is found after it.
	for _, m := range []string{"x.odd", "x.next"} {
		if err := appendArMember(archive, m, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{linkMember, "x.odd", "x.next"} {
		if got, err := readArMember(archive, m); err != nil || got == nil {
			t.Errorf("member %s: %q, %v", m, got, err)
		}
	}
	if got, err := readArMember(archive, "x.none"); err != nil || got != nil {
		t.Errorf("missing member: %q, %v", got, err)
	}
	if _, err := readArMember(src, linkMember); !errors.Is(err, errNotArchive) {
		t.Error("a Go source file read as an archive")
	}
}
