package rewrite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckGoRelease(t *testing.T) {
	for _, tc := range []struct {
		minor, version string
		ok             bool
	}{
		{"23", "go1.23.12", false},
		{"24", "go1.24.13", true},
		{"27", "go1.27.4", true},
		{"28", "go1.28rc1", false},
	} {
		goroot := t.TempDir()
		dir := filepath.Join(goroot, "src", "internal", "goversion")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src := "package goversion\n\n// Version is the minor version.\nconst Version = " + tc.minor + "\n"
		if err := os.WriteFile(filepath.Join(dir, "goversion.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(goroot, "VERSION"), []byte(tc.version+"\ntime 2026-01-01\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := CheckGoRelease(goroot)
		if tc.ok != (err == nil) {
			t.Errorf("Go 1.%s: error %v, want ok=%v", tc.minor, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), tc.version) {
			t.Errorf("Go 1.%s: error %q does not name %s", tc.minor, err, tc.version)
		}
	}
	if err := CheckGoRelease(t.TempDir()); err == nil {
		t.Error("no error for a GOROOT without internal/goversion")
	}
}

func TestCheckArch(t *testing.T) {
	for _, arch := range []string{"386", "arm", "wasm", "mips", "mipsle"} {
		if err := CheckArch(arch); err == nil || !strings.Contains(err.Error(), "GOARCH="+arch) {
			t.Errorf("GOARCH=%s: error %v", arch, err)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		if err := CheckArch(arch); err != nil {
			t.Errorf("GOARCH=%s: %v", arch, err)
		}
	}
}

func TestCheckOS(t *testing.T) {
	if err := CheckOS("plan9"); err == nil || !strings.Contains(err.Error(), "GOOS=plan9") {
		t.Errorf("GOOS=plan9: error %v", err)
	}
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd", "android", ""} {
		if err := CheckOS(goos); err != nil {
			t.Errorf("GOOS=%s: %v", goos, err)
		}
	}
}
