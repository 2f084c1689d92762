package idalloc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/internal/uuidv4"
)

// # High-water marks
//
// A map file can go back to an earlier content without changing its
// identity: git checkout, git stash or a merge restores the committed map.
// Packages compiled before still sit in the build cache under the same tool
// id, with the ids the map had given them; a function added afterwards would
// be given one of those ids again. To rule that out, OpenWith and Identify
// keep, outside the map (Options.MarkDir), a high-water mark per identity:
// the last record the map of that identity was seen with. A map that no
// longer has that record as it was (it shrank, or it went another way) gets
// a new identity, which changes the tool id: the next build recompiles
// every package instead of mixing ids of two histories.
//
// The mark of identity I is the file MarkDir/I holding the record line.
// Allocate raises it, under the map's lock, after each append. Writing a
// mark is best effort: when MarkDir cannot be written the map works as
// before, without the check.

// readMark returns the record line of the high-water mark of identity in
// dir ("-" for a map without records), and false if there is none (or it
// cannot be read).
func readMark(dir, identity string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(dir, identity))
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	if line == "-" {
		return line, true
	}
	if _, msg := parseRecord(line); msg != "" {
		return "", false
	}
	return line, true
}

// writeMark sets the high-water mark of identity in dir to line (the last
// record of the map, "-" for none). With onlyNew it does not replace an
// existing mark. Errors are ignored: the mark is best effort.
func writeMark(dir, identity, line string, onlyNew bool) {
	if dir == "" || identity == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	path := filepath.Join(dir, identity)
	tmp, err := os.CreateTemp(dir, identity+".tmp*")
	if err != nil {
		return
	}
	_, err = tmp.WriteString(line + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	defer os.Remove(tmp.Name())
	if err != nil {
		return
	}
	if onlyNew {
		_ = os.Link(tmp.Name(), path)
		return
	}
	_ = os.Rename(tmp.Name(), path)
}

// lastRecord returns the last complete record line of map data, or "-".
func lastRecord(data string) string {
	end := strings.LastIndexByte(data, '\n')
	for end > 0 {
		start := strings.LastIndexByte(data[:end], '\n') + 1
		line := data[start:end]
		if start > 0 && line != "" && line[0] != '#' {
			if _, msg := parseRecord(line); msg == "" {
				return line
			}
		}
		end = start - 1
	}
	return "-"
}

// hasRecord reports whether map data holds line as a complete line.
func hasRecord(data, line string) bool {
	if line == "-" {
		return true
	}
	return strings.Contains(data, "\n"+line+"\n")
}

// recordID returns the id of a record line ("-": 0).
func recordID(line string) uint32 {
	id, _, _ := strings.Cut(line, " ")
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// headerIdentity returns the identity in the first line of map data, or "".
func headerIdentity(data string) string {
	nl := strings.IndexByte(data, '\n')
	if nl < 0 {
		return ""
	}
	id, msg := parseHeader(data[:nl])
	if msg != "" {
		return ""
	}
	return id
}

// reconcile compares the map at path with the high-water mark of its
// identity in dir. A map seen for the first time sets the mark; a map that
// grew raises it; a map that lost the marked record (it was restored to an
// earlier content, or to another branch's) is given a new identity. A map
// that does not exist or does not parse is left to the caller.
func (m *Map) reconcile(dir string) error {
	if dir == "" {
		return nil
	}
	head, err := readHead(m.path)
	if err != nil {
		return nil
	}
	identity := headerIdentity(head)
	if identity == "" {
		return nil
	}
	// The mark first, then the map: Allocate appends first, then raises
	// the mark, so a map read after its mark holds the marked record.
	markLine, marked := readMark(dir, identity)
	if marked && endsWith(m.path, markLine) {
		return nil // the usual case: nothing appended since the mark
	}
	data, err := os.ReadFile(m.path)
	if err != nil || headerIdentity(string(data)) != identity {
		return nil
	}
	last := lastRecord(string(data))
	switch {
	case !marked:
		writeMark(dir, identity, last, true)
		return nil
	case hasRecord(string(data), markLine):
		if recordID(last) > recordID(markLine) {
			m.raiseMark(dir, identity)
		}
		return nil
	}
	return m.renew(dir, identity)
}

// endsWith reports whether the file at path ends with the record line.
func endsWith(path, line string) bool {
	if line == "-" {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	want := "\n" + line + "\n"
	if err != nil || st.Size() < int64(len(want)) {
		return false
	}
	buf := make([]byte, len(want))
	if _, err := f.ReadAt(buf, st.Size()-int64(len(want))); err != nil {
		return false
	}
	return string(buf) == want
}

// readHead returns the first line of the file at path, with its newline.
func readHead(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, err := f.Read(buf)
	if n == 0 {
		return "", err
	}
	return string(buf[:n]), nil
}

// raiseMark sets the mark of identity to the map's last record, under the
// map's lock, if the map can be locked (it may be read-only).
func (m *Map) raiseMark(dir, identity string) {
	unlock, err := ops.lock(m.lock)
	if err != nil {
		return
	}
	defer unlock()
	markLine, marked := readMark(dir, identity)
	data, err := os.ReadFile(m.path)
	if err != nil || headerIdentity(string(data)) != identity {
		return
	}
	if last := lastRecord(string(data)); !marked || (hasRecord(string(data), markLine) && recordID(last) > recordID(markLine)) {
		writeMark(dir, identity, last, false)
	}
}

// renew gives the map a new identity, keeping its records, after checking
// under the lock that it still lacks the record marked for identity.
func (m *Map) renew(dir, identity string) error {
	unlock, err := ops.lock(m.lock)
	if err != nil {
		return fileError("open lock file", m.lockPath, err, "the map was restored to an earlier content and could not be given a new identity")
	}
	defer unlock()
	markLine, _ := readMark(dir, identity)
	data, err := os.ReadFile(m.path)
	if err != nil {
		return fileError("read map", m.path, err, "")
	}
	if headerIdentity(string(data)) != identity || hasRecord(string(data), markLine) {
		return nil // renewed by another process meanwhile, or a false alarm
	}
	id := uuidv4.Random()
	nl := strings.IndexByte(string(data), '\n')
	content := headerPrefix + headerVersion + " id=" + id + string(data[nl:])
	tmp := fmt.Sprintf("%s.tmp%d-%s", m.path, os.Getpid(), id[:8])
	f, err := ops.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fileError("renew map", m.path, err, "the map was restored to an earlier content and could not be given a new identity")
	}
	defer os.Remove(tmp)
	if st, err := os.Stat(m.path); err == nil {
		_ = f.Chmod(st.Mode().Perm())
	}
	_, err = ops.writeAt(f, []byte(content), 0)
	if err == nil {
		err = ops.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ops.rename(tmp, m.path)
	}
	if err != nil {
		return fileError("renew map", m.path, err, "the map was restored to an earlier content and could not be given a new identity")
	}
	syncDir(filepath.Dir(m.path))
	writeMark(dir, id, lastRecord(content), false)
	return nil
}
