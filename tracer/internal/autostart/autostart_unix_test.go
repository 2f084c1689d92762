//go:build unix

package autostart

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStartFIFO: a named pipe as a report file is refused at once with one
// line saying what it is; the other sinks are opened.
func TestStartFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo, file := filepath.Join(dir, "fifo"), filepath.Join(dir, "r.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("cannot make a named pipe:", err)
	}
	var err error
	msgs := captureStderr(t, func() { err = startFor(t, fifo+","+file, nil) })
	if err != nil {
		t.Fatalf("tracing not started: %v", err)
	}
	if want := "matrix: tracer: report file " + fifo + " is a named pipe (FIFO): reports are written only to a regular file; reports go to the other sinks of MATRIX_REPORT\n"; msgs != want {
		t.Errorf("stderr %q, want %q", msgs, want)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the other sink was not opened: %v", err)
	}
	// Alone, it leaves the program untraced, and says why.
	msgs = captureStderr(t, func() { err = startFor(t, fifo, nil) })
	if err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO)") || msgs != "" {
		t.Errorf("named pipe alone: err %v, stderr %q", err, msgs)
	}
}
