// Package idalloc is the shared, persistent function-id allocator used by the
// matrix `go build -toolexec` compiler wrapper.
//
// Many compile processes run in parallel, each instrumenting one package; each
// asks a [Map] for the ids of that package's functions with [Map.Allocate].
// Ids are stable (the same package path and function name get the same id
// forever), are never reused, and are allocated in increasing order.
//
// # Id space
//
// The id space is Tencent Matrix's: ids 1..[MaxID] (1048573) are functions,
// [Dispatch] (0xFFFFE) is the reserved DISPATCH pseudo-function and
// 0xFFFFF and above are invalid. An allocation that would go past MaxID fails
// with an error wrapping [ErrExhausted] before anything is written.
//
// # Mapping file
//
// The mapping file is plain text:
//
//	# matrix method mapping v1 id=3f0c1c3e-8a51-4a7e-9d0b-6f1e2a4b5c6d
//	# module example.com/app
//	# <id> <kind> <pkgpath> <func> <file:line>
//	1 func example.com/app main /src/app/main.go:12
//	2 method example.com/app (*Server).Handle /src/app/server.go:40
//	3 closure example.com/app main.func1 /src/app/main.go:15
//	4 init example.com/app init.0 /src/app/main.go:8
//
// Line 1 is the header; its id= field is the map's identity, a random UUID
// chosen when the file is created. Line 2 records the map's [Owner]: "#
// module <module path>" for a map created by a module build, or "#
// workspace <module path>..." (the modules of the go.work, sorted) for one
// created in a workspace. It is a comment line, so older readers accept it;
// maps written before owners were recorded have none (their owner is
// unknown and is never checked), and neither has a map created by a build
// outside any module. [OpenWith] can refuse a map whose owner shares no
// module with the build's ([ForeignMapError]). Other lines starting with '#' are comments and empty
// lines are ignored. Every other line is a record of five fields
// separated by single spaces: id, kind ([KindFunc], [KindMethod],
// [KindClosure], [KindInit]), package path, function name and position. The
// position is last and may contain spaces; the other fields may not. Ids are
// strictly increasing through the file and each (package path, function) key
// appears once. A record keeps the position it had when its id was allocated.
//
// # Skipped file
//
// Next to the map, "<map file>.skipped" lists the functions that were not
// instrumented, one per line, as "<pkgpath> <func> <reason> <file:line>"
// (reason is a single token such as no-calls, trivial, inlinable,
// pragma:go:nosplit, blacklist or cgo), and the instrumented functions that
// keep a deferred exit hook, with a reason exit-defer:<why> (see package
// rewrite). It is append-only; an entry is only
// appended if its (pkgpath, func, reason) is not listed yet.
//
// # Concurrency and crash safety
//
// Writers take one exclusive lock per call on "<map file>.lock" (see
// lockedfile), re-read what other processes appended, append all new lines in
// a single write and fsync before releasing the lock. Readers do not lock.
// A [Map] validates the whole file when it is opened and afterwards reads only
// what was appended.
// A writer killed mid-append can leave a partial last line without a trailing
// newline: readers ignore it and the next writer truncates it. Anything else
// that does not parse is reported as a [*CorruptError] naming the file and
// line; the map is never silently reset or rewritten.
//
// The lock relies on flock(2) (LockFileEx on Windows), so the map should live
// on a local file system.
//
// # Read-only and full file systems
//
// Allocating ids that are already in the map, and recording skipped
// functions that are already listed, write nothing and take no lock, so a
// complete map works in a read-only directory. Anything that has to write
// there fails with a [*FileError] that names the file and, for a full or
// read-only file system or a missing permission, says what to do. A failed
// append is undone (the file is truncated back to its last complete line),
// so the map keeps exactly its previous content.
package idalloc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/matrixgo/matrix/internal/abi"
	"github.com/rogpeppe/go-internal/lockedfile"
)

// Dispatch is the id reserved for the DISPATCH pseudo-function (0xFFFFE). It
// is never allocated to a function.
const Dispatch = abi.DispatchID

// MaxID is the largest id that can be allocated to a function (0xFFFFD).
const MaxID = abi.MaxFuncID

// Kind is the kind of an instrumented function: one of [KindFunc],
// [KindMethod], [KindClosure] and [KindInit].
type Kind string

// The kinds of functions recorded in the mapping file.
const (
	// KindFunc is a top-level function such as "Handler".
	KindFunc Kind = "func"
	// KindMethod is a method such as "(*T).Method", "(T).Method" or
	// "(*List[...]).Push".
	KindMethod Kind = "method"
	// KindClosure is a function literal such as "F.func1".
	KindClosure Kind = "closure"
	// KindInit is a package initialiser such as "init.0".
	KindInit Kind = "init"
)

func (k Kind) valid() bool {
	switch k {
	case KindFunc, KindMethod, KindClosure, KindInit:
		return true
	}
	return false
}

// Func is a function that needs an id.
type Func struct {
	// Name is the function's name within its package, e.g. "Handler",
	// "(*T).Method", "F.func1" or "init.0". It must not contain white space.
	Name string
	// Kind is the function's kind.
	Kind Kind
	// Pos is the function's position as file:line. It may contain spaces but
	// no line breaks; an empty Pos is recorded as "-".
	Pos string
}

// Skip is a function that was not instrumented, and why.
type Skip struct {
	// Name is the function's name within its package (no white space).
	Name string
	// Reason is a single token such as "no-calls", "trivial", "inlinable",
	// "pragma:go:nosplit", "blacklist" or "cgo".
	Reason string
	// Pos is the function's position as file:line; an empty Pos is recorded
	// as "-".
	Pos string
}

// Entry is one record line of a mapping file.
type Entry struct {
	// ID is the function's id.
	ID uint32
	// Kind is the function's kind.
	Kind Kind
	// Pkg is the package path.
	Pkg string
	// Func is the function name within the package.
	Func string
	// Pos is the position (file:line) recorded when the id was allocated.
	Pos string
}

// ErrExhausted is wrapped by the error [Map.Allocate] returns when the id
// space 1..MaxID cannot hold the package's new functions.
var ErrExhausted = errors.New("id space exhausted")

// CorruptError reports a mapping or skipped file that cannot be trusted: a
// complete line that does not parse, a non-increasing id, a duplicate key or a
// bad header. Its message is "idalloc: <path>:<line>: <what is wrong>".
type CorruptError struct {
	// Path is the file's path.
	Path string
	// Line is the 1-based line number.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("idalloc: %s:%d: %s", e.Path, e.Line, e.Msg)
}

func corrupt(path string, line int, format string, args ...any) error {
	return &CorruptError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

const (
	headerPrefix  = "# matrix method mapping "
	headerVersion = "v1"
	columnsLine   = "# <id> <kind> <pkgpath> <func> <file:line>\n"
	skippedHeader = "# matrix skipped functions v1: <pkgpath> <func> <reason> <file:line>\n"
)

// testHookAppend, if set, is called under the lock just before an append is
// written (tests use it to simulate a writer killed mid-append).
var testHookAppend func(f *os.File, off int64, buf []byte)

// Map is an open mapping file. Its methods are safe for concurrent use, and
// any number of processes may use the same file at once.
//
// A Map keeps the keys of the map in memory (about 25 MB for 100k records),
// so that Allocate only has to read what other processes appended.
type Map struct {
	path     string
	lockPath string
	skipPath string
	identity string
	owner    Owner
	header   string // the header line including its newline
	lock     *lockedfile.Mutex
	markDir  string // Options.MarkDir

	mu     sync.Mutex        // guards the fields below
	end    int64             // length of the validated part (ends with a newline)
	lines  int               // number of lines in the validated part
	lastID uint32            // largest id in the validated part
	keys   map[string]uint32 // "pkg func" -> id for the validated part
}

// Open opens the map at path, creating it (and its directory) with a new
// identity and no owner if it does not exist. It validates the whole file.
// It is OpenWith with no options.
func Open(path string) (*Map, error) {
	return OpenWith(path, Options{})
}

// Options are the options of [OpenWith].
type Options struct {
	// Owner is recorded in the header of a map that OpenWith creates.
	Owner Owner
	// CheckOwner makes OpenWith refuse, with a [*ForeignMapError], an
	// existing map whose recorded owner shares no module with Owner. A map
	// without a recorded owner, or a zero Owner, passes.
	CheckOwner bool
	// MarkDir, if set, is a directory outside the map (the user's cache)
	// where the last record of each map identity is kept. A map that has
	// lost the record marked for its identity (restored to an earlier
	// content) is given a new identity when it is opened, so that packages
	// compiled with the ids it had are never mixed with ids allocated anew.
	MarkDir string
}

// OpenWith opens the map at path, creating it (and its directory) with a
// new identity if it does not exist, and validates the whole file.
func OpenWith(path string, opts Options) (*Map, error) {
	if path == "" {
		return nil, errors.New("idalloc: empty map path")
	}
	if err := opts.Owner.check(); err != nil {
		return nil, err
	}
	m := &Map{
		path:     path,
		lockPath: path + ".lock",
		skipPath: path + ".skipped",
	}
	m.lock = lockedfile.MutexAt(m.lockPath)
	m.markDir = opts.MarkDir
	if err := m.reconcile(opts.MarkDir); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := m.create(opts.Owner); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fileError("open map", path, err, "")
	}
	p, err := parseMap(path, string(data), false)
	if err != nil {
		return nil, err
	}
	if err := opts.accepts(path, p.owner); err != nil {
		return nil, err
	}
	m.identity = p.identity
	m.owner = p.owner
	m.header = p.header
	m.end = int64(p.end)
	m.lines = p.lines
	m.lastID = p.lastID
	m.keys = p.keys
	return m, nil
}

// accepts checks the owner recorded in the map at path (zero in maps
// older than owners) against the build's.
func (opts Options) accepts(path string, recorded Owner) error {
	if opts.CheckOwner && !recorded.IsZero() && !opts.Owner.IsZero() && !recorded.Shares(opts.Owner) {
		return &ForeignMapError{Path: path, Recorded: recorded, Build: opts.Owner}
	}
	return nil
}

// Identify opens the map at path like OpenWith, creating it if needed and
// checking its owner, but reads only its header: it returns the map's
// identity and owner without reading or checking the records, for callers
// that need no id (matrixexec answering -V=full on every build).
func Identify(path string, opts Options) (identity string, owner Owner, err error) {
	if path == "" {
		return "", Owner{}, errors.New("idalloc: empty map path")
	}
	if err := opts.Owner.check(); err != nil {
		return "", Owner{}, err
	}
	m := &Map{path: path, lockPath: path + ".lock", skipPath: path + ".skipped"}
	m.lock = lockedfile.MutexAt(m.lockPath)
	if err := m.reconcile(opts.MarkDir); err != nil {
		return "", Owner{}, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := m.create(opts.Owner); err != nil {
			return "", Owner{}, err
		}
		f, err = os.Open(path)
	}
	if err != nil {
		return "", Owner{}, fileError("open map", path, err, "")
	}
	defer f.Close()
	// The header is the identity line and, optionally, the owner line.
	br := bufio.NewReader(f)
	var head strings.Builder
	for range 2 {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return "", Owner{}, fileError("read map", path, err, "")
		}
		head.WriteString(line)
		if err == io.EOF {
			break
		}
	}
	p, err := parseMap(path, head.String(), false)
	if err != nil {
		return "", Owner{}, err
	}
	if err := opts.accepts(path, p.owner); err != nil {
		return "", Owner{}, err
	}
	return p.identity, p.owner, nil
}

// create creates the map file with a new identity and the given owner,
// atomically: the content is written to a temporary file which is then
// linked (or, where hard links are not supported, renamed) into place under
// the lock.
func (m *Map) create(owner Owner) error {
	dir := filepath.Dir(m.path)
	if err := ops.mkdirAll(dir); err != nil {
		return fileError("create map directory for", m.path, err, "")
	}
	unlock, err := ops.lock(m.lock)
	if err != nil {
		return fileError("open lock file", m.lockPath, err, "")
	}
	defer unlock()
	if _, err := os.Lstat(m.path); err == nil {
		return nil // created by another process meanwhile
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fileError("create map", m.path, err, "")
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return fmt.Errorf("idalloc: create map %s: new identity: %w", m.path, err)
	}
	content := headerPrefix + headerVersion + " id=" + id.String() + "\n" + owner.line() + columnsLine
	tmp := fmt.Sprintf("%s.tmp%d-%s", m.path, os.Getpid(), id.String()[:8])
	f, err := ops.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fileError("create map", m.path, err, "")
	}
	defer os.Remove(tmp)
	_, err = ops.writeAt(f, []byte(content), 0)
	if err == nil {
		err = ops.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileError("create map", m.path, err, "no map was created")
	}
	if err := ops.link(tmp, m.path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // someone not holding the lock won; use theirs
		}
		if err := ops.rename(tmp, m.path); err != nil {
			return fileError("create map", m.path, err, "no map was created")
		}
	}
	syncDir(dir)
	return nil
}

// syncDir makes a new directory entry durable, where the platform allows.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// Identity returns the map's UUID.
func (m *Map) Identity() string { return m.identity }

// Owner returns the owner recorded in the map, or the zero Owner.
func (m *Map) Owner() Owner { return m.owner }

// Path returns the map file path.
func (m *Map) Path() string { return m.path }

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

// Load reads a whole mapping file (for retrace tools). It returns the records
// by id and the map's identity. A partial last line is ignored; any other
// problem is an error.
func Load(path string) (map[uint32]Entry, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("idalloc: load map: %w", err)
	}
	p, err := parseMap(path, string(data), true)
	if err != nil {
		return nil, "", err
	}
	return p.entries, p.identity, nil
}

type parsed struct {
	identity string
	owner    Owner
	header   string
	end      int // offset after the last complete line
	lines    int // number of complete lines
	lastID   uint32
	keys     map[string]uint32 // "pkg func" -> id
	entries  map[uint32]Entry
}

// parseMap validates a whole mapping file. With collect, it also returns the
// entries.
func parseMap(path, data string, collect bool) (*parsed, error) {
	nl := strings.IndexByte(data, '\n')
	if nl < 0 {
		return nil, corrupt(path, 1, "missing header line %q", headerPrefix+headerVersion+" id=<uuid>")
	}
	identity, msg := parseHeader(data[:nl])
	if msg != "" {
		return nil, corrupt(path, 1, "%s", msg)
	}
	p := &parsed{identity: identity, header: data[:nl+1]}
	n := strings.Count(data, "\n")
	keys := make(map[string]uint32, n)
	if collect {
		p.entries = make(map[uint32]Entry, n)
	}
	lineNo := 1
	off := nl + 1
	for {
		i := strings.IndexByte(data[off:], '\n')
		if i < 0 {
			break // a partial last line (or none) is ignored
		}
		line := data[off : off+i]
		off += i + 1
		lineNo++
		if lineNo == 2 {
			o, ok, msg := parseOwner(line)
			if msg != "" {
				return nil, corrupt(path, lineNo, "%s", msg)
			}
			if ok {
				p.owner = o
				continue
			}
		}
		if line == "" || line[0] == '#' {
			continue
		}
		r, msg := parseRecord(line)
		if msg != "" {
			return nil, corrupt(path, lineNo, "%s", msg)
		}
		if r.id <= p.lastID {
			return nil, corrupt(path, lineNo, "id %d is not greater than the previous id %d", r.id, p.lastID)
		}
		if prev, dup := keys[r.key]; dup {
			return nil, corrupt(path, lineNo, "duplicate key %s %s (already has id %d)", r.pkg, r.fn, prev)
		}
		keys[r.key] = r.id
		p.lastID = r.id
		if collect {
			p.entries[r.id] = Entry{ID: r.id, Kind: Kind(r.kind), Pkg: r.pkg, Func: r.fn, Pos: r.pos}
		}
	}
	p.end = off
	p.lines = lineNo
	p.keys = keys
	return p, nil
}

// parseHeader parses "# matrix method mapping v1 id=<uuid>".
func parseHeader(line string) (identity, msg string) {
	rest, ok := strings.CutPrefix(line, headerPrefix)
	if !ok {
		return "", fmt.Sprintf("bad header %q: want %q", line, headerPrefix+headerVersion+" id=<uuid>")
	}
	version, rest, _ := strings.Cut(rest, " ")
	if version != headerVersion {
		return "", fmt.Sprintf("unsupported map version %q (want %s)", version, headerVersion)
	}
	id, ok := strings.CutPrefix(rest, "id=")
	if !ok {
		return "", fmt.Sprintf("header has no map identity: %q", line)
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", fmt.Sprintf("header has a garbled map identity %q", id)
	}
	return id, ""
}

type record struct {
	id                 uint32
	kind, pkg, fn, pos string
	key                string // "pkg fn", a substring of the line
}

// parseRecord parses "<id> <kind> <pkgpath> <func> <file:line>".
func parseRecord(line string) (record, string) {
	idStr, rest, ok1 := strings.Cut(line, " ")
	kind, rest, ok2 := strings.Cut(rest, " ")
	pkg, rest, ok3 := strings.Cut(rest, " ")
	fn, pos, ok4 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return record{}, fmt.Sprintf("want 5 fields separated by single spaces: <id> <kind> <pkgpath> <func> <file:line>, got %q", line)
	}
	if idStr == "" || kind == "" || pkg == "" || fn == "" || pos == "" {
		return record{}, fmt.Sprintf("empty field in %q", line)
	}
	id, msg := parseID(idStr)
	if msg != "" {
		return record{}, msg
	}
	if !Kind(kind).valid() {
		return record{}, fmt.Sprintf("unknown kind %q", kind)
	}
	ks := len(idStr) + 1 + len(kind) + 1
	return record{id: id, kind: kind, pkg: pkg, fn: fn, pos: pos, key: line[ks : ks+len(pkg)+1+len(fn)]}, ""
}

func parseID(s string) (uint32, string) {
	if len(s) > 7 || s[0] == '0' {
		return 0, fmt.Sprintf("bad id %q", s)
	}
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Sprintf("bad id %q", s)
		}
		v = v*10 + uint32(c-'0')
	}
	switch {
	case v == Dispatch:
		return 0, fmt.Sprintf("id %d is reserved for DISPATCH", v)
	case v > MaxID:
		return 0, fmt.Sprintf("id %d is out of range 1..%d", v, MaxID)
	}
	return v, ""
}

// checkToken checks that s is a non-empty single token.
func checkToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("idalloc: empty %s", what)
	}
	if strings.ContainsFunc(s, isSpace) {
		return fmt.Errorf("idalloc: %s %q contains white space", what, s)
	}
	return nil
}

func checkPos(s string) error {
	if strings.ContainsAny(s, "\r\n") {
		return fmt.Errorf("idalloc: position %q contains a line break", s)
	}
	return nil
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x85, 0xA0:
		return true
	}
	return false
}
