package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestToolCmd(t *testing.T) {
	t.Setenv("TOOLEXEC_IMPORTPATH", "")
	dir := t.TempDir()
	rsp := filepath.Join(dir, "args")
	if err := os.WriteFile(rsp, []byte("-importcfg=/w/b001/importcfg\n-pack\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"/go/pkg/tool/compile", "-o", "/w/b001/_pkg_.a", "-p", "example.com/lib", "@" + rsp, "-std", "/src/a.go", "/src/b.go"}
	c, err := parseCompile(args)
	if err != nil {
		t.Fatal(err)
	}
	if c.tool != args[0] || !slices.Equal(c.operands, []string{"/src/a.go", "/src/b.go"}) {
		t.Errorf("tool %q, files %q", c.tool, c.operands)
	}
	if v, ok := c.flag("importcfg"); !ok || v != "/w/b001/importcfg" {
		t.Errorf("importcfg from the response file: %q, %v", v, ok)
	}
	if !c.has("std") || c.has("race") {
		t.Errorf("has(std) %v, has(race) %v", c.has("std"), c.has("race"))
	}
	if got := c.importPath(); got != "example.com/lib" {
		t.Errorf("importPath %q", got)
	}
	c.set("importcfg", "/tmp/new")
	c.set("o", "/tmp/out.a")
	want := []string{"/go/pkg/tool/compile", "-o", "/tmp/out.a", "-p", "example.com/lib", "-importcfg=/tmp/new", "-pack", "-std", "/src/a.go", "/src/b.go"}
	if got := c.args(); !slices.Equal(got, want) {
		t.Errorf("args\n got %q\nwant %q", got, want)
	}

	// A command's -p is main; the import path comes from cmd/go.
	t.Setenv("TOOLEXEC_IMPORTPATH", "example.com/cmd/app [example.com/cmd/app.test]")
	c, err = parseCompile([]string{"/go/pkg/tool/compile", "-p", "main", "/src/main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.importPath(); got != "example.com/cmd/app" {
		t.Errorf("importPath %q", got)
	}

	l, err := parseLink([]string{"/go/pkg/tool/link", "-o", "/w/a.out", "-importcfg", "/w/importcfg.link", "/w/b001/_pkg_.a"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.operands, []string{"/w/b001/_pkg_.a"}) || l.mainArchive() != "/w/b001/_pkg_.a" {
		t.Errorf("link operands %q, main archive %q", l.operands, l.mainArchive())
	}
	l.set("importcfg", "/tmp/importcfg.link")
	if got, want := l.args(), []string{"/go/pkg/tool/link", "-o", "/w/a.out", "-importcfg", "/tmp/importcfg.link", "/w/b001/_pkg_.a"}; !slices.Equal(got, want) {
		t.Errorf("link args\n got %q\nwant %q", got, want)
	}
}
