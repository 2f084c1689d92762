package rewrite

import (
	"errors"
	"fmt"
	"go/ast"
	"strings"

	"github.com/matrixgo/matrix/inject"
)

// gField lists the fields added to runtime.g: the goroutine's ring buffer,
// nil while it is not inside a dispatch; the state of the interval it is
// not running in (see matrixStatus in the recorder's runtime file); and
// when its current system call began.
const gField = "matrixBeat unsafe.Pointer; matrixState uint32; matrixSys uint64; "

// deferFastPath is inserted at the top of runtime.deferreturn (see
// matrixDeferNone in the recorder's runtime file, package inject).
const deferFastPath = "if matrixDeferNone(sys.GetCallerSP()) { return }; "

// PatchRuntime prepares the files of package runtime: it adds the fields the
// recorder needs to runtime.g (in runtime2.go), the statements of
// runtimeHooks at the top of runtime functions, and the recorder's files
// (see package inject). It writes what it changes to dir and returns the
// new file list. With debug, the hooks print every call when
// MATRIX_DEBUG_HOOKS=1 is set at run time; without it they carry no trace
// of that code. With deferExits (-exits defer), deferreturn gets a fast
// path too (see deferReturnHook).
//
// No line of the patched files moves: the fields are inserted before the
// closing brace of the struct, on that brace's line, and each statement
// after its function's opening brace, followed by a line directive that
// gives the rest of the line its original column.
func PatchRuntime(files []string, dir string, debug, deferExits bool) ([]string, error) {
	hooks := runtimeHooks
	if deferExits {
		hooks = append([]stdHook{deferReturnHook}, runtimeHooks...)
	}
	patch := pkgPatch{
		pkg:    "runtime",
		fields: []fieldPatch{{file: "runtime2.go", typ: "g", text: gField}},
		hooks:  hooks,
		files: func(string) ([]addedFile, error) {
			src, consts, err := inject.Runtime(debug)
			return []addedFile{{name: inject.RuntimeFileName, content: src}, {name: inject.RuntimeConstFileName, content: consts}}, err
		},
	}
	return patch.apply(files, dir)
}

// deferReturnHook gives deferreturn a fast path for frames with nothing to
// run, in builds whose exit hooks are deferred calls (-exits defer). The
// compiler open-codes at most 15 returns × defers per function; every
// function with more returns then defers its exit hook on the stack, and
// calls deferreturn on every return even when the hook was never deferred
// (the recorder off). deferreturn zeroes a _panic record and walks a small
// state machine to find that there is nothing to run; the fast path finds
// it in two loads.
//
// Builds that record exits at returns (the default) defer an exit hook only
// in functions that defer calls of their own, and the frames that reach
// deferreturn have one of those to run nearly every time (yaml.v3's scanner
// and resolver, once a token): there the fast path found nothing to skip,
// and its test, nine instructions, was all it did, on every such return of
// the program, recording or not. Those builds leave deferreturn as it is.
var deferReturnHook = stdHook{file: "panic.go", name: "deferreturn", check: noParams, stmt: func([]string) string { return deferFastPath }}

// runtimeHooks are the statements added at the top of runtime functions.
// Each is one load and one branch for a goroutine that does not record.
var runtimeHooks = []stdHook{
	// A recovered panic abandons the dispatches whose beginning frames it
	// unwinds (matrixRecovery).
	{file: "panic.go", name: "recovery", check: params("gp"), stmt: func(p []string) string {
		return "if " + p[0] + ".matrixBeat != nil { matrixRecovery(" + p[0] + ") }; "
	}},
	// runtime.Goexit unwinds every call of the goroutine, running only
	// its deferred calls: the rings note when (matrixGoexitCall).
	{file: "panic.go", name: "Goexit", check: noParams, stmt: func([]string) string {
		return "if gp := getg(); gp.matrixBeat != nil { matrixGoexitCall(gp) }; "
	}},
	// A recording goroutine that is about to block opens a wait, with the
	// reason and the program counters where it blocked (matrixPark).
	{file: "proc.go", name: "gopark", check: params("unlockf", "lock", "reason", "traceReason", "traceskip"), stmt: func(p []string) string {
		return "if getg().matrixBeat != nil { matrixPark(" + p[2] + ") }; "
	}},
	// Every status change of a recording goroutine ends or starts the
	// interval it is not running in: wait, runnable (matrixStatus).
	{file: "proc.go", name: "casgstatus", check: params("gp", "oldval", "newval"), stmt: func(p []string) string {
		return "if " + p[0] + ".matrixBeat != nil { matrixStatus(" + p[0] + ", " + p[1] + ", " + p[2] + ") }; "
	}},
	// A system call of a recording goroutine that took at least a clock
	// tick is recorded (matrixSyscallEnter, matrixSyscallExit). These run
	// without a P and without write barriers: what they call is nosplit
	// and writes only integers.
	{file: "proc.go", name: "reentersyscall", check: params("pc", "sp", "bp"), stmt: func([]string) string {
		return "if getg().matrixBeat != nil { matrixSyscallEnter() }; "
	}},
	{file: "proc.go", name: "entersyscallblock", check: noParams, stmt: func([]string) string {
		return "if getg().matrixBeat != nil { matrixSyscallEnter() }; "
	}},
	{file: "proc.go", name: "exitsyscall", check: noParams, stmt: func([]string) string {
		return "if getg().matrixBeat != nil { matrixSyscallExit() }; "
	}},
	// An M taking a P: Go code is about to run, which the recorder's clock
	// thread must not sleep through (matrixClockIdle). Every taking of a P
	// goes through wirep, which must not split the stack or write
	// pointers: matrixClockWake does neither.
	{file: "proc.go", name: "wirep", check: params("pp"), stmt: func([]string) string {
		return "if matrixClockIdle.v.Load() != 0 { matrixClockWake() }; "
	}},
	// A goroutine made runnable: a recording one learns who woke it
	// (matrixReady); one that a recording goroutine wakes from a receive
	// may be a worker handed work (matrixHandoff).
	{file: "proc.go", name: "ready", check: params("gp", "traceskip", "next"), stmt: func(p []string) string {
		return "if " + p[0] + ".matrixBeat != nil { matrixReady(" + p[0] + ") } else if w := getg().m.curg; w != nil && w.matrixBeat != nil { matrixHandoff(w, " + p[0] + ") }; "
	}},
	// A goroutine started by a recording goroutine records into a ring of
	// its own (matrixSpawn). gostartcallfn runs in newproc1 on the system
	// stack, with the new goroutine's gobuf: its g is the new goroutine,
	// and the M's current goroutine the one that starts it.
	{file: "stack.go", name: "gostartcallfn", check: params("gobuf", "fv"), stmt: func(p []string) string {
		return "if gp := getg().m.curg; gp != nil && gp.matrixBeat != nil { matrixSpawn(gp, " + p[0] + ".g.ptr(), " + p[1] + ".fn) }; "
	}},
	// The scheduler's preemption signal, which the recorder's clock thread
	// also sends to a thread running a goroutine of a slow dispatch, takes
	// a sample of its stack (matrixSigSample). Systems without signals
	// (Windows) have no such hook, and take no samples.
	{file: "signal_unix.go", name: "sighandler", ifCompiled: true, check: params("sig", "info", "ctxt", "gp"), stmt: func(p []string) string {
		return "if " + p[0] + " == sigPreempt && matrixProf.on.Load() != 0 { c := &sigctxt{" + p[1] + ", " + p[2] + "}; matrixSigSample(c.sigpc(), c.sigsp(), c.siglr(), " + p[3] + ") }; "
	}},
	// What a recording goroutine allocates is counted in its ring
	// (matrixAlloc): at the top of mallocgc and of the allocation
	// functions specialised by size class, which the compiler calls
	// directly where it knows an object's size (Go 1.27 on; not their
	// slow paths, which they call). In a release whose mallocgc hands
	// such sizes to those functions itself, mallocgc counts the others
	// only.
	{file: "malloc.go", name: "mallocgc", check: params("size", "typ", "needzero"), stmtFor: func(fd *ast.FuncDecl, p []string) string {
		cond := "gp := getg(); gp.matrixBeat != nil"
		if mentions(fd.Body, "mallocNoScanTable") {
			cond += " && !(sizeSpecializedMallocEnabled && heapBitsInSpan(" + p[0] + "))"
		}
		return "if " + cond + " { matrixAlloc(gp, " + p[0] + ") }; "
	}},
	{file: "malloc_generated.go", name: "mallocgc…SC<n>", ifCompiled: true, match: isSizeClassMalloc, check: params("size", "typ", "needzero"), stmt: func(p []string) string {
		return "if gp := getg(); gp.matrixBeat != nil { matrixAlloc(gp, " + p[0] + ") }; "
	}},
	// The stops of the world, so that a report can tell how long its
	// dispatch stood still (matrixSTW). Both run with the world stopping
	// or stopped, without write barriers.
	{file: "proc.go", name: "stopTheWorldWithSema", check: params("reason"), stmt: func([]string) string {
		return "if matrixOn.v != 0 { matrixSTWStart() }; "
	}},
	{file: "proc.go", name: "startTheWorldWithSema", check: params("now", "w"), stmt: func([]string) string {
		return "matrixSTWEnd(); "
	}},
	// A goroutine that exits clears its slot, and the dispatches it leaves
	// open are marked abandoned (matrixGoexit).
	{file: "proc.go", name: "gdestroy", check: params("gp"), stmt: func(p []string) string {
		return "if " + p[0] + ".matrixBeat != nil { matrixGoexit(" + p[0] + ") }; "
	}},
}

// isSizeClassMalloc reports whether name is that of an allocation
// function specialised by size class ("mallocgcSmallNoScanSC3",
// "mallocgcTinySC2", "mallocgcTinySize8"), not one of their slow paths.
func isSizeClassMalloc(name string) bool {
	rest, ok := strings.CutPrefix(name, "mallocgc")
	if !ok {
		return false
	}
	rest = strings.TrimRight(rest, "0123456789")
	if len(rest) == len(name)-len("mallocgc") {
		return false // no size class
	}
	if !strings.HasSuffix(rest, "SC") && !strings.HasSuffix(rest, "Size") {
		return false
	}
	return true
}

// mentions reports whether the identifier name appears in n.
func mentions(n ast.Node, name string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}

func noParams(fd *ast.FuncDecl) error {
	if fd.Type.Params.NumFields() != 0 || fd.Type.Results != nil {
		return errors.New("has a new signature in this Go release; matrixexec does not support it")
	}
	return nil
}

// params checks that a function has exactly the named parameters.
func params(names ...string) func(fd *ast.FuncDecl) error {
	return func(fd *ast.FuncDecl) error {
		if got := paramNames(fd); strings.Join(got, ",") != strings.Join(names, ",") {
			return fmt.Errorf("has the parameters %v in this Go release, not %v; matrixexec does not support it", got, names)
		}
		return nil
	}
}
