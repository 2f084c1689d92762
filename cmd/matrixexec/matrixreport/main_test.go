package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCaptured runs matrixreport of the given version with args and the
// environment env, and returns its exit code, stdout and stderr.
func runCaptured(t *testing.T, version string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	outFile, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outFile, errFile
	code := run(args, func(k string) string { return env[k] }, version)
	os.Stdout, os.Stderr = oldOut, oldErr
	outFile.Close()
	errFile.Close()
	out, _ := os.ReadFile(outFile.Name())
	errs, _ := os.ReadFile(errFile.Name())
	return code, string(out), string(errs)
}

// TestVersionSkew: matrixexec tells matrixreport its version
// (MATRIX_EXEC_VERSION): a matrixreport of another version warns, and runs
// the command all the same. A version either build does not know (a
// development build) is no skew.
func TestVersionSkew(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.jsonl")
	line := `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /w","cost":400,"stackKey":"example.com/app.query[sleep]|","frames":[{"depth":0,"id":1048574,"count":1,"cost":400,"func":"DISPATCH","file":"","line":0},{"depth":1,"id":3,"count":1,"cost":400,"func":"example.com/app.handler","file":"/src/app/h.go","line":10}]}` + "\n"
	if err := os.WriteFile(report, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = "matrixexec: warning: matrixexec is v1.5.0 but matrixreport, which runs its report commands, is v1.4.0: install both from one version (go install github.com/matrixgo/matrix/cmd/matrixexec/...@v1.5.0)\n"
	for _, c := range []struct {
		exec, report, stderr string
	}{
		{"v1.5.0", "v1.4.0", warning},
		{"v1.4.0", "v1.4.0", ""},
		{"", "v1.4.0", ""},
		{"v1.5.0", "", ""},
	} {
		code, out, errs := runCaptured(t, c.report, map[string]string{"MATRIX_EXEC_VERSION": c.exec}, "show", report)
		if code != 0 || errs != c.stderr || !strings.Contains(out, "Trace_EvilMethod") {
			t.Errorf("matrixexec %q, matrixreport %q: exit %d, stderr %q (want %q), stdout %q", c.exec, c.report, code, errs, c.stderr, out)
		}
	}
}
