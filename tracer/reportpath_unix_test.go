//go:build unix

package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantedDir makes a sticky world-writable directory, as /tmp is, with a
// symbolic link in it to a directory of the test's; the link is owned by
// uid (when the test runs as root), and the target holds a file.
func plantedDir(t *testing.T, uid int) (shared, target string) {
	t.Helper()
	base := t.TempDir()
	shared = filepath.Join(base, "shared")
	target = filepath.Join(base, "target")
	for _, d := range []string{shared, target} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "report.jsonl"), []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(shared, "logs")); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if os.Geteuid() != 0 {
			t.Skip("planting a link of another user needs root")
		}
		if err := os.Lchown(filepath.Join(shared, "logs"), uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return shared, target
}

// TestOpenReportRefusesPlantedParentLink: a report path whose directory is
// reached through a symbolic link another user could have planted (one
// of another user, or any in a sticky world-writable directory) is
// refused, saying which link and why; the file it points to is unchanged.
func TestOpenReportRefusesPlantedParentLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		uid  int
		want string
	}{
		{"other owner", 65534, "which user 65534 owns (not root, not this process' user"},
		{"own link in a sticky directory", -1, "is sticky (mode "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared, target := plantedDir(t, tc.uid)
			path := filepath.Join(shared, "logs", "report.jsonl")
			_, _, err := OpenReport(path)
			if err == nil {
				t.Fatal("OpenReport followed a planted link")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "tracer: report file "+path+" is reached through the symbolic link "+filepath.Join(shared, "logs")+", ") ||
				!strings.Contains(msg, tc.want) || !strings.Contains(msg, "another user could have planted it") || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want the link named and %q, on one line", msg, tc.want)
			}
			if data, _ := os.ReadFile(filepath.Join(target, "report.jsonl")); string(data) != "keep\n" {
				t.Errorf("the link's target was changed: %q", data)
			}
		})
	}
}

// TestOpenReportFollowsTrustedParentLink: a link of the process' user (or
// root's) in a directory only its owner writes, as /var/run → /run, is
// followed, relative or absolute, and so is one that leads through "..".
func TestOpenReportFollowsTrustedParentLink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "run", "app")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	varDir := filepath.Join(base, "var")
	if err := os.Mkdir(varDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../run", filepath.Join(varDir, "run")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "abs")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		filepath.Join(varDir, "run", "app", "report.jsonl"),
		filepath.Join(base, "abs", "report.jsonl"),
		filepath.Join(base, "abs") + "/../app/report.jsonl", // .. of the link's target
	} {
		l, c, err := OpenReport(path)
		if err != nil {
			t.Fatalf("OpenReport(%s): %v", path, err)
		}
		l.OnReportIssue(Issue{Content: map[string]any{"path": path}})
		c.Close()
	}
	got := fileLines(t, filepath.Join(real, "report.jsonl"))
	if len(got) != 3 {
		t.Errorf("the file the links lead to holds %q, want the 3 reports", got)
	}
}

// TestOpenReportRefusesHardLink: a file with another name is refused, and
// left unchanged.
func TestOpenReportRefusesHardLink(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.jsonl")
	if err := os.Link(other, path); err != nil {
		t.Skip("no hard links here:", err)
	}
	_, _, err := OpenReport(path)
	if err == nil || err.Error() != "tracer: report file "+path+": the file has 2 hard links, and another name of it could be someone else's: reports are written only to a file with one link" {
		t.Fatalf("OpenReport of a hard-linked file: %v", err)
	}
	if data, _ := os.ReadFile(other); string(data) != "keep\n" {
		t.Errorf("the hard-linked file was changed: %q", data)
	}
}
