// Package hot holds the functions whose per-call cost group 1 of the
// benchmarks measures. In the hooks build only this package is
// instrumented (see bench/hooks.blacklist), with the inlinable filter off
// (-inline-budget -1) and bounded functions hooked (-bounded hook: Hooked,
// which only calls Empty, is bounded) so that a function this small gets
// hooks at all.
package hot

import (
	"runtime"
	"sync/atomic"
)

// Empty is the unit of every ratio: one empty, non-inlined call. It has no
// calls, so matrixexec never instruments it.
//
//go:noinline
func Empty() {}

// Hooked is instrumented: with exits at the returns, matrixexec inserts
//
//	if __matrix_on.v != 0 { __matrix_i(id) }
//
// after its opening brace and `if __matrix_on.v != 0 { __matrix_o(id) }`
// before its closing brace (and by default it keeps a hook-free copy of
// its body too). It calls Empty, like every function matrixexec
// instruments calls something, so it has a stack frame with or without
// hooks: Hooked − Twin is what the hooks add to a typical function.
//
//go:noinline
func Hooked() { Empty() }

// Twin is Hooked's identical twin that the blacklist keeps
// uninstrumented.
//
//go:noinline
func Twin() { Empty() }

// HookedLeaf and TwinLeaf are the worst case: a function whose only call
// compiles to nothing (runtime.KeepAlive), so that without hooks it is a
// bare RET, and the hooks bring a stack frame and a stack check with
// them. matrixexec's inlining filter skips such
// functions unless -inline-budget -1 is given (or they are too large to
// inline).
//
//go:noinline
func HookedLeaf() { runtime.KeepAlive(0) }

//go:noinline
func TwinLeaf() { runtime.KeepAlive(0) }

// The counters of a -cover build. CoverSet and CoverAtomic are TwinLeaf as
// `go test -cover -covermode=set|atomic` (Go 1.26's cmd/cover) rewrites it:
// each entry stores the function's 3-word header (counter count, package
// id, function id) and then its one counter, so these are verbatim copies
// of the generated statements with the generated names shortened.
var (
	coverSet    [4]uint32
	coverAtomic [4]uint32
	coverPkgID  uint32 = 7
)

//go:noinline
func CoverSet() {
	coverSet[0] = 1
	coverSet[1] = coverPkgID
	coverSet[2] = 0
	coverSet[3] = 1
	runtime.KeepAlive(0)
}

//go:noinline
func CoverAtomic() {
	atomic.StoreUint32(&coverAtomic[0], 1)
	atomic.StoreUint32(&coverAtomic[1], coverPkgID)
	atomic.StoreUint32(&coverAtomic[2], 0)
	atomic.AddUint32(&coverAtomic[3], 1)
	runtime.KeepAlive(0)
}
