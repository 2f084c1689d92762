package tracer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// rotationCheckInterval is the least time between two looks at whether a
// report file's path still names the file open.
const rotationCheckInterval = time.Second

// reportFile is a report file that follows log rotation: at most once per
// rotationCheckInterval, before a write, it compares the file its path
// names now (stat of the path: device and inode) with the one it has open,
// and when they differ (the file was renamed, as logrotate's create mode
// and lumberjack do, or removed), it opens the path again, creating the
// file with the same rules as the first open (openReportFile). A file
// truncated in place (copytruncate) is the same file: the writes go on at
// its new end (O_APPEND).
//
// When the path cannot be opened again, the writes fail with the reason
// (the line writer counts and tells them) and the open is tried again a
// rotationCheckInterval later; nothing more is written to the old file.
type reportFile struct {
	mu      sync.Mutex
	path    string // absolute, so that a change of directory changes nothing
	now     func() time.Time
	f       *os.File    // nil after a failed reopen
	fi      fs.FileInfo // of f, to compare with the path's
	err     error       // why f is nil
	checked time.Time   // the last look at the path
}

// openRotating opens path as a report file that follows rotation.
func openRotating(path string, now func() time.Time) (*reportFile, error) {
	abs := path
	if !filepath.IsAbs(path) {
		// Not filepath.Abs, which cleans "link/.." away: the path keeps
		// what the system makes of it.
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("tracer: report file %s: %w", path, err)
		}
		abs = wd + string(filepath.Separator) + path
	}
	f, fi, err := openReportFile(abs)
	if err != nil {
		return nil, err
	}
	return &reportFile{path: abs, now: now, f: f, fi: fi, checked: now()}, nil
}

// Write appends p to the file the path names, reopening it first if it
// was rotated away.
func (r *reportFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= rotationCheckInterval {
		r.checked = now
		r.follow()
	}
	if r.f == nil {
		return 0, r.err
	}
	return r.f.Write(p)
}

// follow opens the path again if it no longer names the open file. Call
// it with r.mu held.
func (r *reportFile) follow() {
	if r.f != nil {
		if fi, err := os.Stat(r.path); err == nil && os.SameFile(fi, r.fi) {
			return
		}
	}
	f, fi, err := openReportFile(r.path)
	if err != nil {
		if r.f != nil {
			r.f.Close()
		}
		r.f, r.fi, r.err = nil, nil, fmt.Errorf("reopening the report file after it was rotated: %w", err)
		return
	}
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.fi, r.err = f, fi, nil
}

// errNoReportFile is the error of cutting a torn line off a report file
// that is not open.
var errNoReportFile = errors.New("tracer: no report file open")

// Seek, Stat and Truncate let the line writer cut a torn line off the
// open file (truncater).
func (r *reportFile) Seek(offset int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, errNoReportFile
	}
	return r.f.Seek(offset, whence)
}

// Stat returns the open file's information.
func (r *reportFile) Stat() (fs.FileInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil, errNoReportFile
	}
	return r.f.Stat()
}

// Truncate truncates the open file.
func (r *reportFile) Truncate(size int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return errNoReportFile
	}
	return r.f.Truncate(size)
}

// Close closes the open file.
func (r *reportFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	r.err = errNoReportFile
	return err
}
