//go:build unix

package tracer

import (
	"os"
	"syscall"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

// openFIFOReader opens the reading end of a named pipe without waiting
// for a writer.
func openFIFOReader(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
