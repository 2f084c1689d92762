package idalloc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// FileError reports a file operation on a map, its lock file or its skipped
// file that failed. When the cause is a full or read-only file system or a
// missing permission, Hint says what to do.
type FileError struct {
	// Op is what failed, e.g. "create map", "open lock file" or "append to
	// map".
	Op string
	// Path is the file the operation was on.
	Path string
	// Err is the underlying error.
	Err error
	// Hint says what to do about Err, or is empty.
	Hint string
	// Note says what became of the map, or is empty.
	Note string
}

// Error returns "idalloc: <op> <path>: <cause>[; <hint>][ (<note>)]".
func (e *FileError) Error() string {
	cause := e.Err.Error()
	var pe *fs.PathError
	if errors.As(e.Err, &pe) && pe.Path == e.Path {
		cause = pe.Err.Error() // the path is in the message already
	}
	msg := fmt.Sprintf("idalloc: %s %s: %s", e.Op, e.Path, cause)
	switch {
	case e.Hint != "" && e.Note != "":
		msg += "; " + e.Hint + " (" + e.Note + ")"
	case e.Hint != "":
		msg += "; " + e.Hint
	case e.Note != "":
		msg += "; " + e.Note
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// fileError wraps err, from operation op on path, in a *FileError with a
// hint for the causes a user can fix and note, which says what became of
// the map.
func fileError(op, path string, err error, note string) *FileError {
	dir := filepath.Dir(path)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "mkdir" {
		dir = filepath.Dir(pe.Path) // where the directory could not be made
	}
	var hint string
	switch {
	case isNoSpace(err):
		hint = "the file system that holds " + dir + " is full: free some space there or keep the map on another file system"
	case errors.Is(err, syscall.EROFS):
		hint = dir + " is on a read-only file system: make it writable or keep the map on a writable file system"
	case errors.Is(err, fs.ErrPermission):
		hint = "no permission: make " + dir + " and the map's files there readable and writable by this user, or keep the map elsewhere"
	}
	return &FileError{Op: op, Path: path, Err: err, Hint: hint, Note: note}
}

// isNoSpace reports whether err says that a file system or a quota is full.
func isNoSpace(err error) bool {
	if runtime.GOOS == "windows" {
		// ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL
		return errors.Is(err, syscall.Errno(39)) || errors.Is(err, syscall.Errno(112))
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// fileOps are the operations by which a Map changes the file system. Tests
// replace ops to inject the failures that a test running as root cannot get
// from the file system (ENOSPC, EROFS, EACCES), including a short write.
type fileOps interface {
	mkdirAll(dir string) error
	lock(mu *lockedfile.Mutex) (unlock func(), err error)
	openFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	writeAt(f *os.File, b []byte, off int64) (int, error)
	sync(f *os.File) error
	truncate(f *os.File, size int64) error
	link(oldname, newname string) error
	rename(oldname, newname string) error
}

// ops is the file system; only tests change it.
var ops fileOps = osOps{}

// osOps are the real file operations.
type osOps struct{}

func (osOps) mkdirAll(dir string) error                            { return os.MkdirAll(dir, 0o777) }
func (osOps) lock(mu *lockedfile.Mutex) (func(), error)            { return mu.Lock() }
func (osOps) writeAt(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }
func (osOps) sync(f *os.File) error                                { return f.Sync() }
func (osOps) truncate(f *os.File, size int64) error                { return f.Truncate(size) }
func (osOps) link(oldname, newname string) error                   { return os.Link(oldname, newname) }
func (osOps) rename(oldname, newname string) error                 { return os.Rename(oldname, newname) }

func (osOps) openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
