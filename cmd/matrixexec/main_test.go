package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestFindReportTool: matrixreport is the one beside matrixexec, else the
// current module's tool, else an error that says how to install it.
func TestFindReportTool(t *testing.T) {
	dir := t.TempDir()
	self := func() (string, error) { return filepath.Join(dir, "matrixexec"), nil }
	noTool := func(string) (string, error) { return "", errors.New("no such tool") }
	moduleTool := func(name string) (string, error) { return "/cache/" + name, nil }

	if _, err := findReportTool(self, noTool); err == nil || !strings.Contains(err.Error(), "go get -tool github.com/matrixgo/matrix/cmd/matrixexec/matrixreport") || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "no such tool") {
		t.Errorf("neither beside nor a tool: %v, want an error naming %s and how to install it", err, dir)
	}
	if got, err := findReportTool(self, moduleTool); err != nil || got != "/cache/matrixreport" {
		t.Errorf("the module's tool: %q, %v", got, err)
	}
	beside := filepath.Join(dir, "matrixreport")
	if runtime.GOOS == "windows" {
		beside += ".exe"
	}
	if err := os.WriteFile(beside, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findReportTool(self, moduleTool); err != nil || got != beside {
		t.Errorf("beside matrixexec: %q, %v; want %q", got, err, beside)
	}
}

// TestWrapperDeps: the build wrapper, which cmd/go starts for every tool
// of every build, links none of what only the report commands need (they
// run in matrixreport), nor package net, which would make it a dynamically
// linked executable that waits for the dynamic loader at every start.
func TestWrapperDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{
		"net", "os/user", "runtime/cgo", "net/http", "html/template",
		"github.com/matrixgo/matrix/cmd/matrixexec/internal/commands",
		"github.com/google/pprof/profile", "google.golang.org/protobuf/proto",
	} {
		if slices.Contains(deps, banned) {
			t.Errorf("matrixexec links %s", banned)
		}
	}
}
