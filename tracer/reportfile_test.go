package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rotationClock is a clock the test moves.
type rotationClock struct{ t time.Time }

func (c *rotationClock) now() time.Time { return c.t }

// lines returns the lines of the file at path, nil if there is none.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestReportFileFollowsRotation: after the report file is renamed (logrotate's
// create mode, lumberjack) or removed, the reports written a second later
// go to a new file at the path, created owner-only; after a copytruncate
// they go on at the start of the truncated file.
func TestReportFileFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.jsonl")
	clock := &rotationClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l, c, err := openReportWith(path, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	report := func(seq int) {
		l.OnReportIssue(Issue{Content: map[string]any{"seq": seq}})
	}
	report(1)

	// Renamed: the next report, a second later, goes to a new file.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(rotationCheckInterval)
	report(2)
	if got := fileLines(t, path+".1"); len(got) != 1 || got[0] != `{"seq":1}` {
		t.Errorf("renamed file %q, want the first report alone", got)
	}
	if got := fileLines(t, path); len(got) != 1 || got[0] != `{"seq":2}` {
		t.Errorf("after a rename, the path holds %q, want the second report", got)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file created after the rename has mode %v, want 0600", st.Mode().Perm())
	}

	// Renamed, and a new file created in its place (logrotate's create).
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(rotationCheckInterval)
	report(3)
	if got := fileLines(t, path); len(got) != 1 || got[0] != `{"seq":3}` {
		t.Errorf("after logrotate's create, the path holds %q, want the third report", got)
	}

	// Removed.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(rotationCheckInterval)
	report(4)
	if got := fileLines(t, path); len(got) != 1 || got[0] != `{"seq":4}` {
		t.Errorf("after a removal, the path holds %q, want the fourth report", got)
	}

	// Truncated in place: the next report starts the file.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	report(5)
	if data, _ := os.ReadFile(path); string(data) != "{\"seq\":5}\n" {
		t.Errorf("after a copytruncate, the file holds %q, want the fifth report alone", data)
	}
	if got := fileLines(t, path+".2"); len(got) != 1 || got[0] != `{"seq":2}` {
		t.Errorf("the older rotated file holds %q, want the second report alone", got)
	}
}

// TestReportFileRotationChecksOnceASecond: within a second of the last
// look, the path is not looked at: a report goes to the file open.
func TestReportFileRotationChecksOnceASecond(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.jsonl")
	clock := &rotationClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l, c, err := openReportWith(path, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(rotationCheckInterval / 2)
	l.OnReportIssue(Issue{Content: map[string]any{"seq": 1}})
	if got := fileLines(t, path+".1"); len(got) != 1 {
		t.Errorf("renamed file %q, want the report written within the second", got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the path was opened again within the second: %v", err)
	}
}

// TestReportFileReopenRefused: when the path cannot be opened again (a
// named pipe put there), the reports are lost and told, nothing goes to
// the rotated file, and once the path is a file again they are written.
func TestReportFileReopenRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.jsonl")
	clock := &rotationClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var msgs strings.Builder
	rf, err := openRotating(path, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	lw := newLineWriter(rf, &msgs, clock.now)
	l := newJSONListener(lw)
	defer reportCloser{lw: lw, f: rf}.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(rotationCheckInterval)
	l.OnReportIssue(Issue{Content: map[string]any{"seq": 1}})
	if got := fileLines(t, path+".1"); got != nil && got[0] != "" {
		t.Errorf("rotated file got %q after the path was refused", got)
	}
	if want := "matrix: cannot write reports: reopening the report file after it was rotated: tracer: report file " + path + " is a directory"; !strings.HasPrefix(msgs.String(), want) {
		t.Errorf("message %q, want %q…", msgs.String(), want)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(rotationCheckInterval)
	l.OnReportIssue(Issue{Content: map[string]any{"seq": 2}})
	if got := fileLines(t, path); len(got) != 1 || got[0] != `{"seq":2}` {
		t.Errorf("once the path is free again it holds %q, want the second report", got)
	}
}
