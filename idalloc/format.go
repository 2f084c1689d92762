package idalloc

import (
	"fmt"
	"os"
	"strings"

	"github.com/matrixgo/matrix/internal/uuidv4"
)

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
	if !uuidv4.Canonical(id) {
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
