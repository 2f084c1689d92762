package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportToolVersion: matrixexec and matrixreport built from two
// versions of the module (go install of each at another tag) run the
// report commands with a warning naming both versions; built from one,
// without. The versions are the tags cmd/go stamps into a build from a
// git checkout of a copy of this module.
func TestReportToolVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds matrixexec and matrixreport twice; skipped in -short mode")
	}
	root := moduleRootDir(t)
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("the module's files are listed by git, and %s is not a git checkout: %v", root, err)
	}
	src, bin := t.TempDir(), t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(dir, name string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	tag := func(v string) {
		run(src, "git", "commit", "-q", "--allow-empty", "-m", v)
		run(src, "git", "tag", v)
	}
	build := func(pkg string) {
		run(src, "go", "build", "-buildvcs=true", "-o", bin+string(filepath.Separator), pkg)
	}
	run(src, "git", "init", "-q")
	run(src, "git", "add", "-A")
	tag("v1.4.0")
	build("./cmd/matrixexec/matrixreport")
	tag("v1.5.0")
	build("./cmd/matrixexec")
	if out, _ := run(src, "go", "version", "-m", filepath.Join(bin, "matrixexec"+exeSuffix())); !strings.Contains(out, "v1.5.0") {
		t.Fatalf("matrixexec built at the tag v1.5.0 does not know its version:\n%s", out)
	}

	work := t.TempDir()
	report := `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /w","cost":400,"stackKey":"app.h|","frames":[{"depth":0,"id":1048574,"count":1,"cost":400,"func":"DISPATCH","file":"","line":0},{"depth":1,"id":3,"count":1,"cost":400,"func":"example.com/app.h","file":"/src/app/h.go","line":10}]}` + "\n"
	if err := os.WriteFile(filepath.Join(work, "report.jsonl"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	matrixexec := filepath.Join(bin, "matrixexec"+exeSuffix())
	stdout, stderr := run(work, matrixexec, "show", "report.jsonl")
	want := "matrixexec: warning: matrixexec is v1.5.0 but matrixreport, which runs its report commands, is v1.4.0: install both from one version (go install github.com/matrixgo/matrix/cmd/matrixexec/...@v1.5.0)\n"
	if stderr != want {
		t.Errorf("matrixexec v1.5.0 with matrixreport v1.4.0: stderr\n%q\nwant\n%q", stderr, want)
	}
	if !strings.Contains(stdout, `scene="GET /w"`) {
		t.Errorf("matrixexec v1.5.0 with matrixreport v1.4.0 did not show the report:\n%s", stdout)
	}

	build("./cmd/matrixexec/matrixreport")
	stdout, stderr = run(work, matrixexec, "show", "report.jsonl")
	if stderr != "" || !strings.Contains(stdout, `scene="GET /w"`) {
		t.Errorf("both v1.5.0: stdout\n%s\nstderr\n%s", stdout, stderr)
	}
}
