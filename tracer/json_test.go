package tracer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJSONListenerOneObjectPerLine(t *testing.T) {
	var buf bytes.Buffer
	l := NewJSONListener(&buf)
	is1 := NewIssue(TagEvilMethod, "5|", time.Time{}, map[string]any{
		"detail": DetailNormal, "cost": int64(812), "stack": "0,1048574,1,812\n1,5,1,800\n", "stackKey": "5|",
		"recorded": true, "threadId": uint64(42),
		"frames": []Frame{{Depth: 0, ID: 1048574, Count: 1, Cost: 812, Func: "DISPATCH"}, {Depth: 1, ID: 5, Count: 1, Cost: 800, Func: "example.com/p.F", File: "f.go", Line: 3}},
	})
	is2 := NewIssue(TagFPS, "", time.Time{}, map[string]any{"fps": 58.5})
	l.OnReportIssue(is1)
	l.OnReportIssue(is2)

	sc := bufio.NewScanner(&buf)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	m := lines[0]
	keys := []string{"tag", "process", "pid", "time", "id", "goVersion", "detail", "cost", "stack", "stackKey", "recorded", "threadId", "frames"}
	if hostName() != "" {
		keys = append(keys, "hostName")
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("line 1 lacks %q: %v", k, m)
		}
	}
	if len(m) != len(keys) {
		t.Errorf("line 1 has %d fields, want exactly the content's %d: %v", len(m), len(keys), m)
	}
	if m["tag"] != TagEvilMethod || m["cost"] != 812.0 || m["stack"] != "0,1048574,1,812\n1,5,1,800\n" || m["id"] != is1.ID || m["recorded"] != true {
		t.Errorf("line 1 = %v", m)
	}
	frames, ok := m["frames"].([]any)
	if !ok || len(frames) != 2 {
		t.Fatalf("frames = %#v", m["frames"])
	}
	f1 := frames[1].(map[string]any)
	want := map[string]any{"depth": 1.0, "id": 5.0, "count": 1.0, "cost": 800.0, "func": "example.com/p.F", "file": "f.go", "line": 3.0}
	for k, v := range want {
		if f1[k] != v {
			t.Errorf("frame[1].%s = %#v, want %#v", k, f1[k], v)
		}
	}
	if lines[1]["tag"] != TagFPS || lines[1]["fps"] != 58.5 {
		t.Errorf("line 2 = %v", lines[1])
	}
}

func TestOpenReportFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "issues.jsonl")
	l, c, err := OpenReport(path)
	if err != nil {
		t.Fatal(err)
	}
	l.OnReportIssue(NewIssue(TagEvilMethod, "1|", time.Time{}, nil))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("report file mode %v, want 0600", st.Mode().Perm())
	}
	// A second open appends.
	l, c, err = OpenReport(path)
	if err != nil {
		t.Fatal(err)
	}
	l.OnReportIssue(NewIssue(TagEvilMethod, "2|", time.Time{}, nil))
	c.Close()
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != 2 {
		t.Errorf("file has %d lines after two opens, want 2:\n%s", n, data)
	}
}

func TestOpenReportKeepsExistingPermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix permissions")
	}
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.jsonl")
	if err := os.WriteFile(loose, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(loose, 0o644)
	tight := filepath.Join(dir, "tight.jsonl")
	if err := os.WriteFile(tight, nil, 0o400|0o200); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{loose: 0o644, tight: 0o600} {
		_, c, err := OpenReport(path)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		st, _ := os.Stat(path)
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v after OpenReport, want %v", filepath.Base(path), st.Mode().Perm(), want)
		}
	}
}

func TestOpenReportTargets(t *testing.T) {
	for _, target := range []string{"stderr", "stdout"} {
		l, c, err := OpenReport(target)
		if err != nil || l == nil || c == nil {
			t.Fatalf("OpenReport(%q) = %v, %v, %v", target, l, c, err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("closing %s: %v", target, err)
		}
	}
	if _, err := os.Stderr.Stat(); err != nil {
		t.Errorf("closing the stderr target closed stderr: %v", err)
	}
	if _, _, err := OpenReport(""); err == nil {
		t.Error("empty target accepted")
	}
	if _, _, err := OpenReport(filepath.Join(t.TempDir(), "no", "such", "dir", "f")); err == nil {
		t.Error("unopenable path accepted")
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error does not wrap the open error: %v", err)
	}
}

func TestOpenReportRefusesSymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no O_NOFOLLOW")
	}
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "report.jsonl")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenReport(link); err == nil {
		t.Fatal("OpenReport followed a symbolic link")
	}
	// A dangling link is not followed to create its target either.
	dangling := filepath.Join(dir, "dangling.jsonl")
	if err := os.Symlink(filepath.Join(dir, "created"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenReport(dangling); err == nil {
		t.Fatal("OpenReport followed a dangling symbolic link")
	}
	if _, err := os.Lstat(filepath.Join(dir, "created")); err == nil {
		t.Error("OpenReport created the target of a dangling link")
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep\n" {
		t.Errorf("the link's target was changed: %q", data)
	}
}

func TestOpenReportRefusesOtherOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix owners")
	}
	path := filepath.Join(t.TempDir(), "report.jsonl")
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		// Only root can give a file away; as anyone else, check that an
		// own file is accepted (the refusal needs root to set up).
		_, c, err := OpenReport(path)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		t.Skip("making a file owned by another user needs root")
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	if _, _, err := OpenReport(path); err == nil || !strings.Contains(err.Error(), "owned by user 65534") {
		t.Fatalf("OpenReport of a file owned by another user: %v", err)
	}
}

// TestOpenReportFIFO: a named pipe as the report file is refused at once,
// with or without a reader, instead of blocking the program in the open.
func TestOpenReportFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system")
	}
	fifo := filepath.Join(t.TempDir(), "report.jsonl")
	if err := mkfifo(fifo); err != nil {
		t.Skip("cannot make a named pipe:", err)
	}
	open := func() error {
		done := make(chan error, 1)
		go func() {
			_, c, err := OpenReport(fifo)
			if err == nil {
				c.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("OpenReport of a named pipe blocks")
			return nil
		}
	}
	err := open()
	if err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO): reports are written only to a regular file") {
		t.Errorf("named pipe without a reader: %v", err)
	}
	// With a reader the open would succeed: the file's kind is checked.
	r, rerr := openFIFOReader(fifo)
	if rerr != nil {
		t.Fatal(rerr)
	}
	defer r.Close()
	if err := open(); err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO)") {
		t.Errorf("named pipe with a reader: %v", err)
	}
	if _, _, err := OpenReport(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
}

// TestOpenReportMissingDirectory: the error names the missing directory,
// and says nothing of symbolic links.
func TestOpenReportMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such")
	_, _, err := OpenReport(filepath.Join(dir, "r.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "directory "+dir+" does not exist") || strings.Contains(err.Error(), "symbolic") {
		t.Errorf("err %v, want it to say that directory %s does not exist", err, dir)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error does not wrap the open error: %v", err)
	}
}

// fullDisk is a report file on a disk with space bytes left: a write that
// does not fit writes what fits and fails.
type fullDisk struct {
	data  []byte
	space int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.space)
	d.data = append(d.data, p[:n]...)
	d.space -= n
	if n < len(p) {
		return n, &fs.PathError{Op: "write", Path: "/fake/r.jsonl", Err: errors.New("no space left on device")}
	}
	return n, nil
}

// fullFile is a fullDisk that can be truncated, as an *os.File can.
type fullFile struct{ fullDisk }

func (f *fullFile) Seek(offset int64, whence int) (int64, error) {
	if offset != 0 || whence != io.SeekCurrent {
		return 0, errors.New("unsupported seek")
	}
	return int64(len(f.data)), nil
}

func (f *fullFile) Stat() (fs.FileInfo, error) { return fileInfo{size: int64(len(f.data))}, nil }

func (f *fullFile) Truncate(size int64) error {
	f.space += len(f.data) - int(size)
	f.data = f.data[:size]
	return nil
}

type fileInfo struct{ size int64 }

func (fi fileInfo) Name() string       { return "r.jsonl" }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() fs.FileMode  { return 0o600 }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return false }
func (fi fileInfo) Sys() any           { return nil }

// wholeLines checks that data is lines of JSON objects, but for the torn
// ones allowed, and returns the objects' "seq" fields.
func wholeLines(t *testing.T, data []byte, torn int) []float64 {
	t.Helper()
	var seqs []float64
	bad := 0
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			bad++
			continue
		}
		seqs = append(seqs, m["seq"].(float64))
	}
	if bad != torn {
		t.Errorf("%d lines are not JSON objects, want %d:\n%s", bad, torn, data)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the file does not end with a whole line:\n%s", data)
	}
	return seqs
}

// TestJSONListenerFullDisk: on a full disk each report is written whole
// or not at all, the program's stderr gets one message, not one per
// report, and once space returns the next report is a line of its own.
func TestJSONListenerFullDisk(t *testing.T) {
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = stderr
	defer func() { os.Stderr = saved }()

	for _, tc := range []struct {
		name string
		disk interface {
			io.Writer
			free(int)
			bytes() []byte
		}
		torn int
	}{
		{"file", &fullFile{}, 0},   // the torn part is cut off again
		{"stream", &fullDisk{}, 1}, // the torn part stays a line of its own
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr.Truncate(0)
			stderr.Seek(0, io.SeekStart)
			l := NewJSONListener(tc.disk)
			report := func(seq int) {
				l.OnReportIssue(Issue{Content: map[string]any{"seq": seq, "pad": strings.Repeat("x", 40)}})
			}
			tc.disk.free(150) // two reports and part of a third
			for i := 1; i <= 10; i++ {
				report(i)
			}
			tc.disk.free(1000) // space returns
			report(11)
			report(12)
			seqs := wholeLines(t, tc.disk.bytes(), tc.torn)
			if want := []float64{1, 2, 11, 12}; !slices.Equal(seqs, want) {
				t.Errorf("reports %v in the file, want %v", seqs, want)
			}
			msgs, _ := os.ReadFile(stderr.Name())
			if n := bytes.Count(msgs, []byte("\n")); n != 1 || !bytes.HasPrefix(msgs, []byte("matrix: cannot write reports: write /fake/r.jsonl: no space left on device; 1 report lost")) {
				t.Errorf("stderr has %d lines, want 1 message:\n%s", n, msgs)
			}
		})
	}
}

func (d *fullDisk) free(n int)    { d.space += n }
func (d *fullDisk) bytes() []byte { return d.data }
func (f *fullFile) free(n int)    { f.space += n }
func (f *fullFile) bytes() []byte { return f.data }

// The report line is one JSON object with its keys sorted, strings as they
// are (no HTML escaping, nested or not), and a value JSON cannot hold
// written as a string rather than losing the line.
func TestJSONLine(t *testing.T) {
	var b bytes.Buffer
	appendJSONLine(&b, map[string]any{
		"scene": "GET /a?b=1&c=<2>",
		"cost":  int64(312),
		"stack": []Frame{{Func: "main.f", File: "a<b>.go"}},
		"fps":   58.5,
	})
	want := `{"cost":312,"fps":58.5,"scene":"GET /a?b=1&c=<2>","stack":[`
	if got := b.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "}\n") || strings.Count(got, "\n") != 1 ||
		!strings.Contains(got, `"a<b>.go"`) {
		t.Errorf("line %q, want it to begin %q", got, want)
	}
	b.Reset()
	appendJSONLine(&b, map[string]any{"fps": math.NaN(), "rate": math.Inf(-1), "ch": make(chan int), "n": 1})
	if got, want := b.String(), `{"ch":"marshaling error: json: unsupported type: chan int","fps":"NaN","n":1,"rate":"-Inf"}`+"\n"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}
