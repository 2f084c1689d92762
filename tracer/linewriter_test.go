package tracer

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLineWriterTellsOnceAMinute: write errors are told at most once a
// minute, each message with the count of reports lost since the last one;
// closing tells the rest.
func TestLineWriterTellsOnceAMinute(t *testing.T) {
	var msgs bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	disk := &fullDisk{}
	lw := newLineWriter(disk, &msgs, func() time.Time { return now })
	l := newJSONListener(lw)
	lose := func(n int) {
		for range n {
			l.OnReportIssue(Issue{Content: map[string]any{"k": 1}})
		}
	}
	lose(3)
	now = now.Add(59 * time.Second)
	lose(4)
	now = now.Add(time.Second)
	lose(1)
	lose(2)
	reportCloser{lw: lw}.Close()
	want := []string{
		"matrix: cannot write reports: write /fake/r.jsonl: no space left on device; 1 report lost (told at most once a minute)",
		"matrix: cannot write reports: write /fake/r.jsonl: no space left on device; 7 reports lost since the last message (told at most once a minute)",
		"matrix: cannot write reports: write /fake/r.jsonl: no space left on device; 2 reports lost since the last message (told at most once a minute)",
	}
	if got := strings.Split(strings.TrimSuffix(msgs.String(), "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("messages:\n%s\nwant:\n%s", msgs.String(), strings.Join(want, "\n"))
	}
	if len(disk.data) != 0 {
		t.Errorf("a disk without space got %q", disk.data)
	}
}

// TestCheckReportMode: what is not a regular file is named.
func TestCheckReportMode(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{
		fs.ModeDevice | fs.ModeCharDevice: "is a device: reports are written only to a regular file",
		fs.ModeSocket:                     "is a socket",
		fs.ModeNamedPipe:                  "is a named pipe (FIFO)",
		fs.ModeDir:                        "is a directory",
		fs.ModeSymlink:                    "is a symbolic link, which is never followed",
	} {
		if err := checkReportMode("/r", mode); err == nil || !strings.Contains(err.Error(), "report file /r "+want) {
			t.Errorf("mode %v: %v, want %q", mode, err, want)
		}
	}
	if err := checkReportMode("/r", 0o600); err != nil {
		t.Errorf("regular file: %v", err)
	}
}
