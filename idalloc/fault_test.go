package idalloc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// faultyOps is a file system that fails chosen operations, the way a full
// disk (ENOSPC), a read-only mount (EROFS) or a directory this user may not
// write (EACCES) does, which a test running as root cannot get from chmod.
type faultyOps struct {
	osOps
	fail map[string]error // op name ("lock", "write", ...) -> error
	// shortWrite makes a failing write first write half of its bytes, as a
	// disk that fills up during the write does.
	shortWrite bool
	calls      map[string]int
}

func (o *faultyOps) err(op string) error {
	o.calls[op]++
	return o.fail[op]
}

func (o *faultyOps) mkdirAll(dir string) error {
	if err := o.err("mkdir"); err != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return o.osOps.mkdirAll(dir)
}

func (o *faultyOps) lock(mu *lockedfile.Mutex) (func(), error) {
	if err := o.err("lock"); err != nil {
		return nil, &fs.PathError{Op: "open", Path: mu.Path, Err: err}
	}
	return o.osOps.lock(mu)
}

func (o *faultyOps) openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := o.err("open"); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return o.osOps.openFile(name, flag, perm)
}

func (o *faultyOps) writeAt(f *os.File, b []byte, off int64) (int, error) {
	if err := o.err("write"); err != nil {
		n := 0
		if o.shortWrite {
			n, _ = f.WriteAt(b[:len(b)/2], off)
		}
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return o.osOps.writeAt(f, b, off)
}

func (o *faultyOps) sync(f *os.File) error {
	if err := o.err("sync"); err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return o.osOps.sync(f)
}

func (o *faultyOps) truncate(f *os.File, size int64) error {
	if err := o.err("truncate"); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	return o.osOps.truncate(f, size)
}

// inject makes the named operations fail with their errors until the test
// ends.
func inject(t *testing.T, fail map[string]error, shortWrite bool) *faultyOps {
	o := &faultyOps{fail: fail, shortWrite: shortWrite, calls: map[string]int{}}
	old := ops
	ops = o
	t.Cleanup(func() { ops = old })
	return o
}

// wantFileError checks that err is a *FileError on path wrapping cause
// whose message contains every one of wants.
func wantFileError(t *testing.T, err error, path string, cause error, wants ...string) {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *FileError", err)
	}
	if fe.Path != path {
		t.Errorf("FileError.Path = %s, want %s", fe.Path, path)
	}
	if !errors.Is(err, cause) {
		t.Errorf("err = %v, want it to wrap %v", err, cause)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "idalloc: ") || !strings.Contains(msg, path) {
		t.Errorf("message %q does not start with idalloc: and name %s", msg, path)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not contain %q", msg, w)
		}
	}
}

// TestFullDisk: an append that runs out of space (in the write or, as on
// file systems with delayed allocation, in the fsync) fails naming the map
// and what to do, and leaves the map byte for byte as it was; once there is
// space again, allocation goes on as if nothing had happened.
func TestFullDisk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  string
		short bool
	}{
		{"write", "write", false},
		{"short write", "write", true},
		{"fsync", "sync", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "methodMapping.txt")
			m := mustOpen(t, path)
			mustAllocate(t, m, "example.com/a", funcsFor(0, 3))
			before := readFile(t, path)

			inject(t, map[string]error{tc.fail: syscall.ENOSPC}, tc.short)
			_, err := m.Allocate("example.com/b", funcsFor(0, 4))
			wantFileError(t, err, path, syscall.ENOSPC, "append to map", "no space left on device",
				"the file system that holds "+dir+" is full: free some space there", "nothing was added to the file")
			if !bytes.Equal(before, readFile(t, path)) {
				t.Fatalf("map changed by a failed append:\n%s", readFile(t, path))
			}
			// Another process sees the map as it was.
			if _, err := Open(path); err != nil {
				t.Fatal(err)
			}

			ops = osOps{}
			if got := mustAllocate(t, m, "example.com/b", funcsFor(0, 2)); fmt.Sprint(got) != "[4 5]" {
				t.Fatalf("ids after the disk was freed: %v, want [4 5]", got)
			}
			if ids := checkWellFormed(t, path); len(ids) != 5 {
				t.Fatalf("ids %v", ids)
			}
		})
	}
}

// TestFullDiskNotRestored: when even the truncation that undoes a short
// write fails, the message says so, and the partial line left behind is
// ignored by readers and removed by the next writer.
func TestFullDiskNotRestored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	m := mustOpen(t, path)
	mustAllocate(t, m, "example.com/a", funcsFor(0, 3))
	before := readFile(t, path)
	inject(t, map[string]error{"write": syscall.ENOSPC, "truncate": syscall.EIO}, true)
	_, err := m.Allocate("example.com/b", funcsFor(0, 4))
	wantFileError(t, err, path, syscall.ENOSPC, "is full", "what was written could not be removed", "input/output error")
	after := readFile(t, path)
	if !bytes.HasPrefix(after, before) || len(after) == len(before) || after[len(after)-1] == '\n' {
		t.Fatalf("want the old map plus a partial line, got:\n%s", after)
	}
	// The complete lines of the short write are records now; the rest of
	// the package gets the next ids and the partial line goes.
	ops = osOps{}
	m2 := mustOpen(t, path)
	if got := mustAllocate(t, m2, "example.com/b", funcsFor(0, 4)); fmt.Sprint(got) != "[4 5 6 7]" {
		t.Fatalf("ids %v, want [4 5 6 7]", got)
	}
	if ids := checkWellFormed(t, path); len(ids) != 7 {
		t.Fatalf("ids %v", ids)
	}
}

// TestFullDiskSkipped: the skipped file is treated like the map.
func TestFullDiskSkipped(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "methodMapping.txt")
	m := mustOpen(t, path)
	skips := []Skip{{"F", "no-calls", "f.go:1"}, {"G", "inlinable", "f.go:2"}}
	if err := m.RecordSkipped("p", skips[:1]); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path+".skipped")
	inject(t, map[string]error{"write": syscall.ENOSPC}, true)
	err := m.RecordSkipped("p", skips)
	wantFileError(t, err, path+".skipped", syscall.ENOSPC, "append to skipped file", "free some space", "nothing was added")
	if !bytes.Equal(before, readFile(t, path+".skipped")) {
		t.Fatal("skipped file changed by a failed append")
	}
}

// TestCreateOnFullDisk: no map, and no temporary file, is left behind.
func TestCreateOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "methodMapping.txt")
	inject(t, map[string]error{"write": syscall.ENOSPC}, true)
	_, err := Open(path)
	wantFileError(t, err, path, syscall.ENOSPC, "create map", "is full", "no map was created")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "methodMapping.txt.lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestReadOnlyMap: in a read-only directory (EROFS) or one this user may not
// write (EACCES), a complete map still works; anything that must be written
// fails naming the file that could not be written and what to do, and
// writes nothing.
func TestReadOnlyMap(t *testing.T) {
	for _, tc := range []struct {
		errno error
		want  []string
		hint  func(dir string) string // the hint naming dir
	}{
		{syscall.EROFS, []string{"read-only file system", "is on a read-only file system: make it writable"},
			func(dir string) string { return "; " + dir + " is on a read-only file system" }},
		{syscall.EACCES, []string{"permission denied", "no permission: make", "writable by this user"},
			func(dir string) string { return "; no permission: make " + dir + " and" }},
	} {
		t.Run(tc.errno.Error(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "methodMapping.txt")
			m := mustOpen(t, path)
			ids := mustAllocate(t, m, "example.com/a", funcsFor(0, 3))
			skips := []Skip{{"F", "no-calls", "f.go:1"}}
			if err := m.RecordSkipped("example.com/a", skips); err != nil {
				t.Fatal(err)
			}
			before, beforeSkipped := readFile(t, path), readFile(t, path+".skipped")

			o := inject(t, map[string]error{"lock": tc.errno, "open": tc.errno, "mkdir": tc.errno}, false)
			m2 := mustOpen(t, path)
			// Everything known: no lock, no write.
			if got := mustAllocate(t, m2, "example.com/a", funcsFor(0, 3)); fmt.Sprint(got) != fmt.Sprint(ids) {
				t.Fatalf("ids %v, want %v", got, ids)
			}
			if err := m2.RecordSkipped("example.com/a", skips); err != nil {
				t.Fatalf("RecordSkipped of listed entries: %v", err)
			}
			if o.calls["lock"] != 0 || o.calls["open"] != 0 {
				t.Fatalf("a complete map was locked or opened for writing: %v", o.calls)
			}
			// Something new: the lock file cannot be opened.
			_, err := m2.Allocate("example.com/a", funcsFor(0, 4))
			wantFileError(t, err, path+".lock", tc.errno, append(tc.want, tc.hint(dir), "no id was allocated")...)
			err = m2.RecordSkipped("example.com/a", []Skip{{"G", "trivial", "f.go:2"}})
			wantFileError(t, err, path+".lock", tc.errno, tc.want...)
			if !bytes.Equal(before, readFile(t, path)) || !bytes.Equal(beforeSkipped, readFile(t, path+".skipped")) {
				t.Fatal("files changed")
			}
			// A new map cannot be created there; the hint names the
			// directory where the map's directory could not be made.
			_, err = Open(filepath.Join(dir, "sub", "new.txt"))
			wantFileError(t, err, filepath.Join(dir, "sub", "new.txt"), tc.errno, append(tc.want, tc.hint(dir))...)
		})
	}
}

// TestMapNotWritable: the lock file can be written but the map cannot (a
// map file made read-only).
func TestMapNotWritable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "methodMapping.txt")
	m := mustOpen(t, path)
	before := readFile(t, path)
	inject(t, map[string]error{"open": syscall.EACCES}, false)
	_, err := m.Allocate("p", funcsFor(0, 1))
	wantFileError(t, err, path, syscall.EACCES, "open map for writing", "permission denied", "no permission: make "+dir)
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("map changed")
	}
}

// TestFileErrorWithoutHint: causes a user cannot fix by freeing space or
// permissions get no hint beyond what became of the map.
func TestFileErrorWithoutHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	before := readFile(t, path)
	inject(t, map[string]error{"write": syscall.EIO}, false)
	_, err := m.Allocate("p", funcsFor(0, 1))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Hint != "" || fe.Note != "nothing was added to the file" {
		t.Fatalf("err = %#v", err)
	}
	if want := "idalloc: append to map " + path + ": input/output error; nothing was added to the file"; err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("map changed")
	}
}
