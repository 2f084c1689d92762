package beat

import (
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// Func is the name of an instrumented function, as carried in the binary:
// reports are readable without the mapping file.
type Func struct {
	ID   uint32
	Pkg  string // import path
	Name string // F, (*T).M, T.M, F.func1, init.0
	File string // file name, as in the binary's stack traces
	Line int
}

// String renders pkg.Name.
func (f Func) String() string {
	if f.ID == DispatchID {
		return "DISPATCH"
	}
	return f.Pkg + "." + f.Name
}

// names is the binary's name tables, parsed once packages have registered
// them. A binary's instrumented functions number in the tens of thousands
// (a gin service: its dependencies), and the parsed tables live as long as
// the process: they hold no pointers but the tables' own strings, so that
// the garbage collector, which scans every pointer of the live heap on
// every cycle, has nothing to scan in them. A table of strings and maps of
// strings cost a service that made one report 2,000 instructions per
// request in collector work.
var names struct {
	sync.Mutex
	head  unsafe.Pointer // the list head the table was built from
	tabs  []string       // the Data of each table
	funcs map[uint32]funcRef
	pkgs  map[string]bool
	// gos are the go statements whose call the compiler wraps, by the hash
	// of their "file:line" (see nameHash).
	gos map[uint64]goRef
	// ids are the functions by the hash of Func.String, built on first
	// use; hashes of two names that collide are marked collided.
	ids map[uint64]uint32
}

// collided marks a hash in names.ids that two functions' names share.
const collided = ^uint32(0)

// funcRef locates a function's name in the Data of table tab: the
// package's path is the table's first line, pkg bytes long; the name and
// the file are Data[name:name+nameLen] and Data[file:file+fileLen].
type funcRef struct {
	tab, pkg      uint32
	name, nameLen uint32
	file, fileLen uint32
	line          int32
}

// goRef locates a go statement's line in the Data of table tab: the
// position "file:line" at pos and the function its call calls at fn.
type goRef struct {
	tab         uint32
	pos, posLen uint32
	fn, fnLen   uint32
}

func (r funcRef) fn(id uint32) Func {
	d := names.tabs[r.tab]
	return Func{ID: id, Pkg: d[:r.pkg], Name: d[r.name : r.name+r.nameLen], File: d[r.file : r.file+r.fileLen], Line: int(r.line)}
}

// nameSeed seeds nameHash.
var nameSeed = maphash.MakeSeed()

// nameHash hashes a function's name or a go statement's position.
func nameHash(s string) uint64 { return maphash.String(nameSeed, s) }

// Lookup returns the function with the given id, if an instrumented
// package of this binary declares it.
func Lookup(id uint32) (Func, bool) {
	if id == DispatchID {
		return Func{ID: id, Name: "DISPATCH"}, true
	}
	names.Lock()
	defer names.Unlock()
	loadNames()
	r, ok := names.funcs[id]
	if !ok {
		return Func{}, false
	}
	return r.fn(id), true
}

// FuncID returns the id of the instrumented function with the given name,
// as the runtime names it (runtime.FuncForPC, stack traces: "pkg.F",
// "pkg.(*T).M", "pkg.F.func1"), if an instrumented package of this binary
// declares it.
func FuncID(name string) (uint32, bool) {
	names.Lock()
	defer names.Unlock()
	loadNames()
	if names.ids == nil {
		names.ids = make(map[uint64]uint32, len(names.funcs))
		for id, r := range names.funcs {
			h := nameHash(r.fn(id).String())
			if _, dup := names.ids[h]; dup {
				names.ids[h] = collided
				continue
			}
			names.ids[h] = id
		}
	}
	id, ok := names.ids[nameHash(name)]
	switch {
	case !ok:
		return 0, false
	case id != collided:
		if names.funcs[id].fn(id).String() == name {
			return id, true
		}
		return 0, false
	}
	for id, r := range names.funcs {
		if r.fn(id).String() == name {
			return id, true
		}
	}
	return 0, false
}

// Instrumented reports whether the package with import path pkg was
// instrumented in this binary (it registered its names).
func Instrumented(pkg string) bool {
	names.Lock()
	defer names.Unlock()
	loadNames()
	return names.pkgs[pkg]
}

// GoCallee returns the function that the go statement at file:line calls,
// qualified with its package's path, when the compiler wraps that call in
// a function of its own (F.gowrap1, which starts at the statement's
// position) and the statement is in an instrumented package: a goroutine
// started there is better named after the function it calls.
func GoCallee(file string, line int) (string, bool) {
	names.Lock()
	defer names.Unlock()
	loadNames()
	pos := file + ":" + strconv.Itoa(line)
	g, ok := names.gos[nameHash(pos)]
	if !ok {
		return "", false
	}
	d := names.tabs[g.tab]
	if d[g.pos:g.pos+g.posLen] != pos {
		return "", false // another statement's position with the same hash
	}
	return d[g.fn : g.fn+g.fnLen], true
}

// loadNames (re)reads the name tables if packages registered more; names
// is locked.
func loadNames() {
	if h := rtNamesHead(); h != names.head || names.funcs == nil {
		names.tabs, names.funcs, names.pkgs, names.gos = parseNames(h)
		names.head, names.ids = h, nil
	}
}

func parseNames(head unsafe.Pointer) ([]string, map[uint32]funcRef, map[string]bool, map[uint64]goRef) {
	var tabs []string
	funcs := map[uint32]funcRef{}
	pkgs := map[string]bool{}
	gos := map[uint64]goRef{}
	// Each table is an abi.NameTable, the layout the runtime links and
	// the files added to instrumented packages declare.
	for p := head; p != nil; p = (*abi.NameTable)(p).Next {
		data := (*abi.NameTable)(p).Data
		tab := uint32(len(tabs))
		tabs = append(tabs, data)
		pkg, rest, _ := strings.Cut(data, "\n")
		pkgs[pkg] = true
		off := len(data) - len(rest) // of the line in data
		for len(rest) > 0 {
			line, next, _ := strings.Cut(rest, "\n")
			at := uint32(off)
			off += len(line) + 1
			rest = next
			if g, ok := strings.CutPrefix(line, abi.NameTableGo); ok {
				if fn, pos, ok := strings.Cut(g, " "); ok && fn != "" {
					g0 := at + uint32(len(abi.NameTableGo))
					gos[nameHash(pos)] = goRef{tab: tab, fn: g0, fnLen: uint32(len(fn)), pos: g0 + uint32(len(fn)) + 1, posLen: uint32(len(pos))}
				}
				continue
			}
			idText, rest, ok1 := strings.Cut(line, " ")
			name, pos, ok2 := strings.Cut(rest, " ")
			if !ok1 || !ok2 {
				continue
			}
			id, err := strconv.ParseUint(idText, 10, 32)
			if err != nil {
				continue
			}
			n0 := at + uint32(len(idText)) + 1
			r := funcRef{tab: tab, pkg: uint32(len(pkg)), name: n0, nameLen: uint32(len(name)), file: n0 + uint32(len(name)) + 1, fileLen: uint32(len(pos))}
			if i := strings.LastIndexByte(pos, ':'); i > 0 {
				if n, err := strconv.Atoi(pos[i+1:]); err == nil {
					r.fileLen, r.line = uint32(i), int32(n)
				}
			}
			funcs[uint32(id)] = r
		}
	}
	return tabs, funcs, pkgs, gos
}
