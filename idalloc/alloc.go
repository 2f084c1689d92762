package idalloc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// Allocate returns ids for funcs of package pkg, in the same order as funcs,
// allocating new ones under the lock. A function that already has an id keeps
// it (whatever its Kind and Pos now are); a name listed twice gets one id. If
// the id space cannot hold all new functions, Allocate writes nothing and
// returns an error wrapping [ErrExhausted].
//
// Allocate reads and validates only what other processes appended since the
// map was opened or last used (syntax, increasing ids, no duplicate key);
// the rest was validated by [Open]. When every function already had an id
// when the map was opened, Allocate neither locks nor writes: a complete map
// works in a read-only directory.
func (m *Map) Allocate(pkg string, funcs []Func) ([]uint32, error) {
	if err := checkToken("package path", pkg); err != nil {
		return nil, err
	}
	for _, f := range funcs {
		if err := checkToken("function name", f.Name); err != nil {
			return nil, fmt.Errorf("%w (package %s)", err, pkg)
		}
		if !f.Kind.valid() {
			return nil, fmt.Errorf("idalloc: function %s.%s: unknown kind %q", pkg, f.Name, f.Kind)
		}
		if err := checkPos(f.Pos); err != nil {
			return nil, fmt.Errorf("%w (function %s.%s)", err, pkg, f.Name)
		}
	}
	ids := make([]uint32, len(funcs))
	if len(funcs) == 0 {
		return ids, nil
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known(pkg, funcs, ids) {
		return ids, nil
	}
	unlock, err := ops.lock(m.lock)
	if err != nil {
		return nil, fileError("open lock file", m.lockPath, err, "no id was allocated")
	}
	defer unlock()

	f, err := ops.openFile(m.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("idalloc: %s: map was deleted since it was opened (identity %s): %w", m.path, m.identity, err)
	}
	if err != nil {
		return nil, fileError("open map for writing", m.path, err, "no id was allocated")
	}
	defer f.Close()
	tail, err := m.readTail(f)
	if err != nil {
		return nil, err
	}
	// tail starts at m.end; it holds the lines other processes appended and
	// maybe a partial last line.
	complete := bytes.LastIndexByte(tail, '\n') + 1
	added := make(map[string]uint32) // keys appended by others, then by us
	lastID := m.lastID
	lineNo := m.lines
	for off := 0; off < complete; {
		i := bytes.IndexByte(tail[off:], '\n')
		line := string(tail[off : off+i])
		off += i + 1
		lineNo++
		if line == "" || line[0] == '#' {
			continue
		}
		r, msg := parseRecord(line)
		if msg == "" && r.id <= lastID {
			msg = fmt.Sprintf("id %d is not greater than the previous id %d", r.id, lastID)
		}
		if msg == "" {
			prev, dup := m.keys[r.key]
			if !dup {
				prev, dup = added[r.key]
			}
			if dup {
				msg = fmt.Sprintf("duplicate key %s %s (already has id %d)", r.pkg, r.fn, prev)
			}
		}
		if msg != "" {
			return nil, corrupt(m.path, lineNo, "%s", msg)
		}
		added[r.key] = r.id
		lastID = r.id
	}
	appendedByOthers := len(added)

	lookup := func(key string) (uint32, bool) {
		if id, ok := m.keys[key]; ok {
			return id, true
		}
		id, ok := added[key]
		return id, ok
	}
	// Count new keys first so that exhaustion writes nothing.
	var newFuncs []int // indexes into funcs of first occurrences of new names
	keys := make([]string, len(funcs))
	seen := make(map[string]bool)
	for i, fn := range funcs {
		keys[i] = pkg + " " + fn.Name
		if _, ok := lookup(keys[i]); ok || seen[keys[i]] {
			continue
		}
		seen[keys[i]] = true
		newFuncs = append(newFuncs, i)
	}
	if len(newFuncs) > 0 && uint64(lastID)+uint64(len(newFuncs)) > MaxID {
		return nil, fmt.Errorf("idalloc: %w: package %s needs %d new ids but only %d of %d remain in %s, split the build or blacklist packages",
			ErrExhausted, pkg, len(newFuncs), MaxID-lastID, MaxID, m.path)
	}
	var buf []byte
	next := lastID
	for _, i := range newFuncs {
		fn := funcs[i]
		next++
		added[keys[i]] = next
		pos := fn.Pos
		if pos == "" {
			pos = "-"
		}
		buf = strconv.AppendUint(buf, uint64(next), 10)
		buf = append(buf, ' ')
		buf = append(buf, fn.Kind...)
		buf = append(buf, ' ')
		buf = append(buf, pkg...)
		buf = append(buf, ' ')
		buf = append(buf, fn.Name...)
		buf = append(buf, ' ')
		buf = append(buf, pos...)
		buf = append(buf, '\n')
	}
	for i := range funcs {
		ids[i], _ = lookup(keys[i])
	}
	if len(buf) > 0 {
		if err := appendAt(f, m.end+int64(len(tail)), m.end+int64(complete), buf); err != nil {
			return nil, appendError("append to map", m.path, err)
		}
		writeMark(m.markDir, m.identity, string(buf[bytes.LastIndexByte(buf[:len(buf)-1], '\n')+1:len(buf)-1]), false)
	} else if appendedByOthers == 0 {
		return ids, nil
	}
	// Commit what is now known to be in the file.
	for k, id := range added {
		m.keys[k] = id
	}
	m.end += int64(complete + len(buf))
	m.lines = lineNo + len(newFuncs)
	m.lastID = next
	return ids, nil
}

// known reports whether every function of funcs had an id in pkg when the
// map was validated, and if so stores the ids in ids. The caller holds m.mu.
func (m *Map) known(pkg string, funcs []Func, ids []uint32) bool {
	for i, fn := range funcs {
		id, ok := m.keys[pkg+" "+fn.Name]
		if !ok {
			return false
		}
		ids[i] = id
	}
	return true
}

// readTail checks that the part of the map validated so far is still there
// (same header, same length, ends with a newline) and returns what follows.
func (m *Map) readTail(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("idalloc: read map: %w", err)
	}
	size := st.Size()
	hdr := make([]byte, len(m.header))
	if _, err := f.ReadAt(hdr, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("idalloc: read map: %w", err)
	}
	if string(hdr) != m.header {
		now := "no valid header"
		if nl := bytes.IndexByte(hdr, '\n'); nl >= 0 {
			if id, msg := parseHeader(string(hdr[:nl])); msg == "" {
				now = "identity " + id
			}
		}
		return nil, fmt.Errorf("idalloc: %s: map was replaced since it was opened (identity %s, now %s)", m.path, m.identity, now)
	}
	// Read from the newline that ends the validated part.
	buf := make([]byte, max(size-m.end+1, 1))
	n, err := f.ReadAt(buf, m.end-1)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("idalloc: read map: %w", err)
	}
	if n == 0 || buf[0] != '\n' {
		return nil, fmt.Errorf("idalloc: %s: map was truncated or rewritten since it was opened (%d bytes were valid, %d remain)", m.path, m.end, size)
	}
	return buf[1:n], nil
}

// RecordSkipped appends the skipped functions of pkg not yet listed in the
// skipped file ("<map file>.skipped"), creating it if needed. An entry is
// listed if the file has a line with the same package, function and reason.
// When every entry is listed already, RecordSkipped neither locks nor
// writes.
func (m *Map) RecordSkipped(pkg string, skips []Skip) error {
	if err := checkToken("package path", pkg); err != nil {
		return err
	}
	for _, s := range skips {
		if err := checkToken("function name", s.Name); err != nil {
			return fmt.Errorf("%w (package %s)", err, pkg)
		}
		if err := checkToken("skip reason", s.Reason); err != nil {
			return fmt.Errorf("%w (function %s.%s)", err, pkg, s.Name)
		}
		if err := checkPos(s.Pos); err != nil {
			return fmt.Errorf("%w (function %s.%s)", err, pkg, s.Name)
		}
	}
	if len(skips) == 0 {
		return nil
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if data, err := os.ReadFile(m.skipPath); err == nil {
		listed, _, err := m.listedSkips(pkg, data)
		if err != nil {
			return err
		}
		if allListed(listed, skips) {
			return nil
		}
	}
	unlock, err := ops.lock(m.lock)
	if err != nil {
		return fileError("open lock file", m.lockPath, err, "the skipped functions were not recorded")
	}
	defer unlock()

	f, err := ops.openFile(m.skipPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return fileError("open skipped file", m.skipPath, err, "")
	}
	defer f.Close()
	data, err := readAll(f)
	if err != nil {
		return fileError("read skipped file", m.skipPath, err, "")
	}
	listed, complete, err := m.listedSkips(pkg, data)
	if err != nil {
		return err
	}

	var buf []byte
	if complete == 0 {
		buf = append(buf, skippedHeader...)
	}
	n := 0
	for _, s := range skips {
		k := s.Name + " " + s.Reason
		if listed[k] {
			continue
		}
		listed[k] = true
		n++
		pos := s.Pos
		if pos == "" {
			pos = "-"
		}
		buf = append(buf, pkg...)
		buf = append(buf, ' ')
		buf = append(buf, s.Name...)
		buf = append(buf, ' ')
		buf = append(buf, s.Reason...)
		buf = append(buf, ' ')
		buf = append(buf, pos...)
		buf = append(buf, '\n')
	}
	if n == 0 {
		return nil
	}
	if err := appendAt(f, int64(len(data)), int64(complete), buf); err != nil {
		return appendError("append to skipped file", m.skipPath, err)
	}
	return nil
}

// listedSkips parses the skipped file data and returns the "func reason"
// entries of pkg it lists and the length of its complete lines.
func (m *Map) listedSkips(pkg string, data []byte) (listed map[string]bool, complete int, err error) {
	complete = bytes.LastIndexByte(data, '\n') + 1
	listed = make(map[string]bool)
	lineNo := 0
	for off := 0; off < complete; {
		i := bytes.IndexByte(data[off:complete], '\n')
		line := data[off : off+i]
		off += i + 1
		lineNo++
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		p, rest, ok1 := bytes.Cut(line, []byte{' '})
		fn, rest, ok2 := bytes.Cut(rest, []byte{' '})
		reason, pos, ok3 := bytes.Cut(rest, []byte{' '})
		if !ok1 || !ok2 || !ok3 || len(p) == 0 || len(fn) == 0 || len(reason) == 0 || len(pos) == 0 {
			return nil, 0, corrupt(m.skipPath, lineNo, "want 4 fields separated by single spaces: <pkgpath> <func> <reason> <file:line>")
		}
		if string(p) == pkg {
			listed[string(fn)+" "+string(reason)] = true
		}
	}
	return listed, complete, nil
}

func allListed(listed map[string]bool, skips []Skip) bool {
	for _, s := range skips {
		if !listed[s.Name+" "+s.Reason] {
			return false
		}
	}
	return true
}

// errRestore wraps the error of an append that could not be undone.
type errRestore struct{ err, restore error }

func (e *errRestore) Error() string { return e.err.Error() }
func (e *errRestore) Unwrap() error { return e.err }

// appendError reports a failed append to path. Nothing was added to the
// file unless err is an *errRestore.
func appendError(op, path string, err error) error {
	note := "nothing was added to the file"
	if re, ok := err.(*errRestore); ok {
		note = fmt.Sprintf("what was written could not be removed (%v): readers ignore a partial last line and the next writer removes it", re.restore)
	}
	return fileError(op, path, err, note)
}

// appendAt writes buf at offset complete of f, whose size is size, first
// truncating a partial last line left by a writer that died; then it fsyncs.
// If the write or the fsync fails (a full disk, an I/O error), it truncates
// the file back to complete, so that what was there before is exactly what
// remains; an *errRestore says this failed too. The caller holds the lock.
func appendAt(f *os.File, size, complete int64, buf []byte) error {
	if complete < size {
		if err := ops.truncate(f, complete); err != nil {
			return err
		}
	}
	if testHookAppend != nil {
		testHookAppend(f, complete, buf)
	}
	_, err := ops.writeAt(f, buf, complete)
	if err == nil {
		err = ops.sync(f)
	}
	if err != nil {
		if rerr := ops.truncate(f, complete); rerr != nil {
			return &errRestore{err: err, restore: rerr}
		}
		_ = ops.sync(f)
	}
	return err
}

// readAll reads the whole of f from offset 0.
func readAll(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, st.Size())
	n, err := f.ReadAt(data, 0)
	if err == io.EOF {
		err = nil // shrank meanwhile: only possible without the lock
	}
	return data[:n], err
}
