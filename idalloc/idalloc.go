package idalloc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/uuidv4"
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
	id := uuidv4.Random()
	content := headerPrefix + headerVersion + " id=" + id + "\n" + owner.line() + columnsLine
	tmp := fmt.Sprintf("%s.tmp%d-%s", m.path, os.Getpid(), id[:8])
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

// SkippedPath returns the path of the map's file of skipped functions.
func (m *Map) SkippedPath() string { return m.skipPath }

// Path returns the map file path.
func (m *Map) Path() string { return m.path }
