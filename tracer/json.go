package tracer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// jsonListener writes each issue's content as one JSON object per line.
type jsonListener struct {
	mu  sync.Mutex
	buf bytes.Buffer
	lw  *lineWriter
}

// NewJSONListener returns the default listener: it writes the content of
// each issue to w as one JSON object on one line (keys sorted, <, > and &
// as they are), through encoding/json. A value that JSON cannot hold (a
// NaN or infinite number) is written as a string ("NaN", "+Inf", "-Inf"),
// and one that does not encode as the string "marshaling error: …", so
// that the report is still written. Each issue is one Write call of one whole line; w may be shared
// with other writers. A line that cannot be written is lost and counted,
// never retried, and the next one starts on a line of its own (see
// OpenReport); write errors are printed to the process' stderr at most
// once a minute ("matrix: …"), with the number of reports lost since the
// last such message.
func NewJSONListener(w io.Writer) Listener {
	return newJSONListener(newLineWriter(w, os.Stderr, time.Now))
}

func newJSONListener(lw *lineWriter) *jsonListener {
	return &jsonListener{lw: lw}
}

// OnReportIssue writes the issue's content.
func (l *jsonListener) OnReportIssue(is Issue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
	appendJSONLine(&l.buf, is.Content)
	_, _ = l.lw.Write(l.buf.Bytes())
}

// appendJSONLine appends content to buf as one JSON object and a newline
// (see NewJSONListener).
func appendJSONLine(buf *bytes.Buffer, content map[string]any) {
	n := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(content) == nil {
		return
	}
	// A value does not encode: each is encoded alone, and those that fail
	// are replaced.
	buf.Truncate(n)
	safe := make(map[string]any, len(content))
	var one bytes.Buffer
	for k, v := range content {
		one.Reset()
		e := json.NewEncoder(&one)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			v = unencodable(v, err)
		}
		safe[k] = v
	}
	_ = enc.Encode(safe)
}

// unencodable returns what is written for a value v that JSON cannot
// hold: a non-finite number's name, or the error.
func unencodable(v any, err error) string {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	default:
		return "marshaling error: " + err.Error()
	}
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return "marshaling error: " + err.Error()
}

// writeErrorInterval is the least time between two messages about reports
// that could not be written.
const writeErrorInterval = time.Minute

// lineWriter writes whole lines (one report each) to a report target, each
// in one Write call, and keeps write errors off the program's way.
//
// A write that fails is not retried: the report is lost and counted. A
// write that stops part-way (a full disk) leaves a torn line; when the
// target is a regular file that nothing was appended to since, the torn
// part is cut off again (truncated back to the last whole line). Otherwise
// the next report is written after a newline, so that it starts a line of
// its own and the torn part stays a line by itself, which the viewers skip.
// Errors are printed to errOut at most once per writeErrorInterval, with
// the number of reports lost since the previous message; Close prints the
// count of the lost reports not yet told.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	errOut io.Writer
	now    func() time.Time

	torn    bool      // the target ends inside a torn line
	buf     []byte    // a line after the newline that ends a torn one
	lost    uint64    // reports lost since the last message
	lastErr error     // the last write error not yet told
	told    time.Time // when the last message was printed; zero if none
}

// truncater is what the writer needs of a regular file to cut a torn line
// off again (an *os.File has it).
type truncater interface {
	Seek(offset int64, whence int) (int64, error)
	Stat() (fs.FileInfo, error)
	Truncate(size int64) error
}

func newLineWriter(w io.Writer, errOut io.Writer, now func() time.Time) *lineWriter {
	return &lineWriter{w: w, errOut: errOut, now: now}
}

// Write writes p, one whole line, and always reports success: a report
// that could not be written is counted and told about (see lineWriter),
// not passed to zerolog, whose handler would print a line per report.
func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	line := p
	if lw.torn {
		lw.buf = append(append(lw.buf[:0], '\n'), p...)
		line = lw.buf
	}
	n, err := lw.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err == nil {
		lw.torn = false
		return len(p), nil
	}
	if n > 0 && !lw.cut(n) {
		lw.torn = true
	}
	lw.lost++
	lw.lastErr = err
	if now := lw.now(); lw.told.IsZero() || now.Sub(lw.told) >= writeErrorInterval {
		lw.tell(now)
	}
	return len(p), nil
}

// cut truncates the n bytes just written off the end of the target, if it
// is a regular file whose end they still are; it reports whether it did.
func (lw *lineWriter) cut(n int) bool {
	f, ok := lw.w.(truncater)
	if !ok {
		return false
	}
	end, err := f.Seek(0, io.SeekCurrent)
	if err != nil || end < int64(n) {
		return false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != end {
		return false
	}
	return f.Truncate(end-int64(n)) == nil
}

// tell prints the last write error and the count of reports lost since the
// last message.
func (lw *lineWriter) tell(now time.Time) {
	since := ""
	if !lw.told.IsZero() {
		since = " since the last message"
	}
	word := "reports"
	if lw.lost == 1 {
		word = "report"
	}
	fmt.Fprintf(lw.errOut, "matrix: cannot write reports: %v; %d %s lost%s (told at most once a minute)\n", lw.lastErr, lw.lost, word, since)
	lw.lost, lw.lastErr, lw.told = 0, nil, now
}

// flush tells the reports lost since the last message, if any.
func (lw *lineWriter) flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.lost > 0 {
		lw.tell(lw.now())
	}
}

// reportCloser is the closer OpenReport returns: it tells the reports lost
// since the last message, then closes the file (f is nil for a standard
// stream, which stays open).
type reportCloser struct {
	lw *lineWriter
	f  io.Closer
}

func (c reportCloser) Close() error {
	c.lw.flush()
	if c.f == nil {
		return nil
	}
	if err := c.f.Close(); err != nil {
		return fmt.Errorf("tracer: close report file: %w", err)
	}
	return nil
}

// OpenReport opens a report target for the JSON listener: "stderr" or
// "stdout" for the process' standard streams (the closer then leaves them
// open), anything else a regular file that issues are appended to. A new
// file is created with mode 0600 (owner only: reports name the program's
// functions); an existing file keeps its permissions.
//
// Only a regular file, or a path where one can be created, is opened: a
// symbolic link is never followed (O_NOFOLLOW where the system has it), a
// named pipe, device, socket or directory is refused, and so is a file
// owned by another user or with more than one hard link. A symbolic link
// in the file's directory path is followed only if no other user could
// have planted it: owned by root or by the process' user, in a directory
// that is neither sticky nor writable by others (root's /var/run → /run
// is followed; a link in /tmp is not). The open never blocks (O_NONBLOCK: a named pipe
// without a reader does not hold the program up). Each error says what the
// path is, or which directory is missing.
//
// The file follows log rotation: at most once a second, before a write,
// the path is looked at again (stat: device and inode), and when it names
// another file or none (renamed or removed by logrotate, lumberjack, …),
// it is opened again by the same rules, created if need be. A file
// truncated in place (copytruncate) is written at its new end (O_APPEND).
//
// Reports are written as NewJSONListener writes them: whole lines or not
// at all. Close the closer after the plugins have stopped; it prints the
// count of reports lost since the last message about write errors.
func OpenReport(target string) (Listener, io.Closer, error) {
	return openReportWith(target, time.Now)
}

// openReportWith is OpenReport with the clock of the rotation checks and
// the write error messages.
func openReportWith(target string, now func() time.Time) (Listener, io.Closer, error) {
	var w io.Writer
	switch target {
	case "":
		return nil, nil, errors.New("tracer: empty report target; want \"stderr\", \"stdout\" or a file path")
	case "stderr":
		w = os.Stderr
	case "stdout":
		w = os.Stdout
	}
	if w != nil {
		lw := newLineWriter(w, os.Stderr, now)
		return newJSONListener(lw), reportCloser{lw: lw}, nil
	}
	f, err := openRotating(target, now)
	if err != nil {
		return nil, nil, err
	}
	lw := newLineWriter(f, os.Stderr, now)
	return newJSONListener(lw), reportCloser{lw: lw, f: f}, nil
}

// openReportFile opens path to append reports to, if it is a regular file
// or can be created as one (see OpenReport), and returns it with its
// information.
func openReportFile(path string) (*os.File, fs.FileInfo, error) {
	real, err := safeReportPath(path)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := os.Lstat(real); err == nil {
		if err := checkReportMode(path, fi.Mode()); err != nil {
			return nil, nil, err
		}
	}
	f, err := os.OpenFile(real, os.O_CREATE|os.O_APPEND|os.O_WRONLY|oNoFollow|oNonblock, 0o600)
	if err != nil {
		return nil, nil, openReportError(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("tracer: report file %s: %w", path, err)
	}
	if err := checkReportMode(path, fi.Mode()); err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := checkReportOwner(fi); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("tracer: report file %s: %w", path, err)
	}
	if err := checkReportLinks(fi); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("tracer: report file %s: %w", path, err)
	}
	return f, fi, nil
}

// checkReportMode refuses anything but a regular file, saying what it is.
func checkReportMode(path string, mode fs.FileMode) error {
	var what string
	switch {
	case mode.IsRegular():
		return nil
	case mode&fs.ModeSymlink != 0:
		return fmt.Errorf("tracer: report file %s is a symbolic link, which is never followed: name the file it points to", path)
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = fmt.Sprintf("of mode %v", mode)
	}
	return fmt.Errorf("tracer: report file %s is %s: reports are written only to a regular file", path, what)
}

// openReportError says why a report file could not be opened: a missing
// directory, a symbolic link, …; it wraps err.
func openReportError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			return fmt.Errorf("tracer: report file %s: directory %s does not exist: %w", path, dir, err)
		}
	}
	if fi, lerr := os.Lstat(path); lerr == nil {
		if merr := checkReportMode(path, fi.Mode()); merr != nil {
			return fmt.Errorf("%w: %w", merr, err)
		}
	}
	if why := openErrorReason(err); why != "" {
		return fmt.Errorf("tracer: report file %s: %s: %w", path, why, err)
	}
	return fmt.Errorf("tracer: open report file: %w", err)
}
