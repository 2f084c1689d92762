package beat

import (
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

var names struct {
	sync.Mutex
	head  unsafe.Pointer // the list head the table was built from
	funcs map[uint32]Func
	pkgs  map[string]bool
	gos   map[string]string // a go statement's "file:line" -> the function its call calls
	ids   map[string]uint32 // by Func.String, built on first use
}

// Lookup returns the function with the given id, if an instrumented
// package of this binary declares it.
func Lookup(id uint32) (Func, bool) {
	if id == DispatchID {
		return Func{ID: id, Name: "DISPATCH"}, true
	}
	names.Lock()
	defer names.Unlock()
	loadNames()
	f, ok := names.funcs[id]
	return f, ok
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
		names.ids = make(map[string]uint32, len(names.funcs))
		for id, f := range names.funcs {
			names.ids[f.String()] = id
		}
	}
	id, ok := names.ids[name]
	return id, ok
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
	fn, ok := names.gos[file+":"+strconv.Itoa(line)]
	return fn, ok
}

// loadNames (re)reads the name tables if packages registered more; names
// is locked.
func loadNames() {
	if h := rtNamesHead(); h != names.head || names.funcs == nil {
		names.funcs, names.pkgs, names.gos = parseNames(h)
		names.head, names.ids = h, nil
	}
}

func parseNames(head unsafe.Pointer) (map[uint32]Func, map[string]bool, map[string]string) {
	funcs := map[uint32]Func{}
	pkgs := map[string]bool{}
	gos := map[string]string{}
	// Each table is an abi.NameTable, the layout the runtime links and
	// the files added to instrumented packages declare.
	for p := head; p != nil; p = (*abi.NameTable)(p).Next {
		pkg, rest, _ := strings.Cut((*abi.NameTable)(p).Data, "\n")
		pkgs[pkg] = true
		for _, line := range strings.Split(rest, "\n") {
			if g, ok := strings.CutPrefix(line, abi.NameTableGo); ok {
				if fn, pos, ok := strings.Cut(g, " "); ok && fn != "" {
					gos[pos] = fn
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
			f := Func{ID: uint32(id), Pkg: pkg, Name: name, File: pos}
			if i := strings.LastIndexByte(pos, ':'); i > 0 {
				if n, err := strconv.Atoi(pos[i+1:]); err == nil {
					f.File, f.Line = pos[:i], n
				}
			}
			funcs[f.ID] = f
		}
	}
	return funcs, pkgs, gos
}
