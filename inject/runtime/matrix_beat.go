//go:build matrixexec_inject

// This file is added to package runtime when it is compiled under
// matrixexec (the build tag keeps it out of every other build; matrixexec
// drops the tag and adds a "Code generated" header when it renders it). The
// matrix* constants it uses are rendered from the abi package into a file
// of their own (abi.RuntimeConstants).
//
// It holds the hot path of the Matrix recorder: the hooks that
// instrumented functions call, and the few entry points the beat package
// reaches through linknames. Each goroutine inside a dispatch has a ring
// buffer in g.matrixBeat (a field added to runtime.g); every other
// goroutine pays a nil check. The hooks never allocate, lock, block or
// panic, and never read the system clock: matrixClk.now is refreshed by the
// recorder's clock thread.

package runtime

import (
	"internal/goarch"
	"internal/runtime/atomic"
	"internal/runtime/exithook"
	"internal/runtime/sys"
	"unsafe"
)

// matrixOn.v is non-zero while any goroutine may be recording. The
// instrumented code tests it before calling a hook, so it sits alone on its
// cache line (the padding covers the adjacent-line prefetch too): a write to
// a neighbouring variable placed there by the linker, such as the network
// poller's waiter count, would otherwise evict the line every hook reads.
// The files matrixexec adds to instrumented packages declare the same
// layout (pkg/matrix_hooks.go, std/matrix_std.go).
//
//go:linkname matrixOn
var matrixOn struct {
	_ [matrixFlagPadBefore]byte
	v uint32
	_ [matrixFlagPadAfter]byte
}

// matrixClk holds the recorder's clock in milliseconds, alone on its cache
// line: the clock thread writes it every millisecond, and a write must not
// invalidate the line of matrixOn, which every instrumented call reads.
var matrixClk struct {
	_   [64]byte
	now uint64
	_   [56]byte
}

// matrixNow reads the system clock into the recorder's and returns it. The
// boundaries that matter (a wait's start and end, a system call's, a
// goroutine's start and end, a recovery, and beat's dispatch bounds) are
// stamped with it, so that they are exact even when the clock thread is
// starved of CPU: a 100 ms sleep reads 100 ms on an overloaded machine.
// Calls are stamped with matrixClk.now as it is, which such a boundary
// or the clock thread last set: a call's time can fall short by as long as
// the clock thread was kept from running while the goroutine ran without
// blocking, never by a wait, and never below its callees' (the clock
// only moves forward).
//
//go:nosplit
func matrixNow() uint64 {
	if matrixClockIdle.v.Load() != 0 {
		matrixClockWake()
	}
	return matrixClockRaise(uint64(nanotime()-matrixEpoch) / 1e6)
}

// matrixClockRaise moves the recorder's clock forward to ms, never back
// (several threads set it), and returns the clock.
//
//go:nosplit
func matrixClockRaise(ms uint64) uint64 {
	for {
		old := atomic.Load64(&matrixClk.now)
		if ms <= old {
			return old
		}
		if atomic.Cas64(&matrixClk.now, old, ms) {
			return ms
		}
	}
}

// matrixDebugBuild is set to true when matrixexec builds the debugging
// variant of the runtime (MATRIX_DEBUG_HOOKS=1 at build time). Otherwise the
// hooks carry no trace of it: a print call would cost them their leaf
// status, and so a stack frame on every instrumented call.
const matrixDebugBuild = false

// matrixDebug prints every hook to stderr (MATRIX_DEBUG_HOOKS=1 at build
// and run time).
var matrixDebug bool

// matrixNames is the head of the list of name tables that instrumented
// packages register (abi.NameTable) while their variables initialise.
var matrixNames unsafe.Pointer

// matrixRing is the runtime's view of abi.Ring, the header every recording
// buffer starts with (beat.Dispatch, the start-up ring): a power-of-two
// array of packed records and the number of records written so far.
type matrixRing struct {
	buf   unsafe.Pointer
	mask  uint64
	n     uint64
	lim   uint64
	outer unsafe.Pointer
	frame uintptr
	state uint32

	kids    uint32
	root    unsafe.Pointer
	list    unsafe.Pointer
	begin   uint64
	end     uint64
	maxKids uint32
	lost    uint32
	seq     uint32
	refs    int32

	alloc  uint64
	allocs uint64

	short uint32
}

// The view must match abi.Ring field for field: an array length that is
// negative, or a constant that overflows, fails the compile of the runtime.
var (
	_ [unsafe.Offsetof(matrixRing{}.mask) - matrixRingMaskOffset]struct{}
	_ [matrixRingMaskOffset - unsafe.Offsetof(matrixRing{}.mask)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.n) - matrixRingNOffset]struct{}
	_ [matrixRingNOffset - unsafe.Offsetof(matrixRing{}.n)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.outer) - matrixRingOuterOffset]struct{}
	_ [matrixRingOuterOffset - unsafe.Offsetof(matrixRing{}.outer)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.frame) - matrixRingFrameOffset]struct{}
	_ [matrixRingFrameOffset - unsafe.Offsetof(matrixRing{}.frame)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.state) - matrixRingStateOffset]struct{}
	_ [matrixRingStateOffset - unsafe.Offsetof(matrixRing{}.state)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.kids) - matrixRingKidsOffset]struct{}
	_ [matrixRingKidsOffset - unsafe.Offsetof(matrixRing{}.kids)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.root) - matrixRingRootOffset]struct{}
	_ [matrixRingRootOffset - unsafe.Offsetof(matrixRing{}.root)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.list) - matrixRingListOffset]struct{}
	_ [matrixRingListOffset - unsafe.Offsetof(matrixRing{}.list)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.begin) - matrixRingBeginOffset]struct{}
	_ [matrixRingBeginOffset - unsafe.Offsetof(matrixRing{}.begin)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.end) - matrixRingEndOffset]struct{}
	_ [matrixRingEndOffset - unsafe.Offsetof(matrixRing{}.end)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.maxKids) - matrixRingMaxKidsOffset]struct{}
	_ [matrixRingMaxKidsOffset - unsafe.Offsetof(matrixRing{}.maxKids)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.lost) - matrixRingLostOffset]struct{}
	_ [matrixRingLostOffset - unsafe.Offsetof(matrixRing{}.lost)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.seq) - matrixRingSeqOffset]struct{}
	_ [matrixRingSeqOffset - unsafe.Offsetof(matrixRing{}.seq)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.refs) - matrixRingRefsOffset]struct{}
	_ [matrixRingRefsOffset - unsafe.Offsetof(matrixRing{}.refs)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.alloc) - matrixRingAllocOffset]struct{}
	_ [matrixRingAllocOffset - unsafe.Offsetof(matrixRing{}.alloc)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.allocs) - matrixRingAllocsOffset]struct{}
	_ [matrixRingAllocsOffset - unsafe.Offsetof(matrixRing{}.allocs)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.lim) - matrixRingLimOffset]struct{}
	_ [matrixRingLimOffset - unsafe.Offsetof(matrixRing{}.lim)]struct{}
	_ [unsafe.Offsetof(matrixRing{}.short) - matrixRingShortOffset]struct{}
	_ [matrixRingShortOffset - unsafe.Offsetof(matrixRing{}.short)]struct{}
	_ [unsafe.Sizeof(matrixRing{}) - matrixRingSize]struct{}
	_ [matrixRingSize - unsafe.Sizeof(matrixRing{})]struct{}
)

// matrixNameTable is the runtime's view of abi.NameTable: only the link is
// read here.
type matrixNameTable struct {
	next unsafe.Pointer
	data string
}

// The view must match abi.NameTable, as matrixRing matches abi.Ring.
var (
	_ [unsafe.Offsetof(matrixNameTable{}.next) - matrixNameTableNextOffset]struct{}
	_ [matrixNameTableNextOffset - unsafe.Offsetof(matrixNameTable{}.next)]struct{}
	_ [unsafe.Offsetof(matrixNameTable{}.data) - matrixNameTableDataOffset]struct{}
	_ [matrixNameTableDataOffset - unsafe.Offsetof(matrixNameTable{}.data)]struct{}
	_ [unsafe.Sizeof(matrixNameTable{}) - matrixNameTableSize]struct{}
	_ [matrixNameTableSize - unsafe.Sizeof(matrixNameTable{})]struct{}
)

// Start-up recording: when MATRIX_REPORT is set (and MATRIX_STARTUP is not
// "off"), the main goroutine records from the runtime's own init until
// main.main is entered, so that slow package initialisation shows by name.
var (
	matrixEpoch     int64 // nanotime at runtime init: record time 0
	matrixMainNano  int64 // nanotime when main.main was entered
	matrixStartup   *matrixRing
	matrixStartupOn bool // the startup ring is recording
	matrixBeatOn    bool // beat asked for recording
)

func init() {
	matrixEpoch = nanotime()
	matrixKidStartFn = matrixKidStart
	if matrixDebugBuild && gogetenv("MATRIX_DEBUG_HOOKS") == "1" {
		matrixDebug = true
		matrixOn.v = 1
	}
	if gogetenv("MATRIX_REPORT") != "" && gogetenv("MATRIX_STARTUP") != "off" {
		buf := make([]uint64, matrixStartupSize)
		matrixStartup = &matrixRing{buf: unsafe.Pointer(&buf[0]), mask: matrixStartupSize - 1, lim: ^uint64(0)}
		getg().matrixBeat = unsafe.Pointer(matrixStartup)
		matrixStartupOn = true
		matrixOn.v = 1
		matrixClockSet(1, true)
		matrixEnter(matrixDispatchID)
	}
}

// The recorder's clock is a runtime thread of its own, like sysmon: it runs
// without a P, so no goroutine queue delays it however busy the program is,
// and only the operating system's scheduler can make it late. It refreshes
// matrixClk.now as each millisecond starts while start-up recording or beat
// needs it, and sleeps on a note otherwise.
//
// While every P is idle, no goroutine runs Go code, so none writes a
// record: the thread then idles too (matrixClockIdle) instead of waking
// once a millisecond, which an idle service would otherwise pay for as
// long as it runs. A goroutine runs Go code again only on an M that takes
// a P, and wirep, which every taking of a P goes through, wakes the thread
// first (a hook of matrixexec's): the thread announces its sleep before it
// looks at the Ps a last time, and wirep takes the P before it looks at
// the announcement, so one of the two sees the other. matrixNow,
// matrixBoundNow and matrixGetNow wake it too.
var (
	matrixClockLock     mutex
	matrixClockNote     note
	matrixClockUsers    uint32 // bit 1: start-up recording, bit 2: beat
	matrixClockStarted  bool
	matrixClockSleeping bool

	matrixClockIdleNote note
)

// matrixClockIdle.v is 1 while the clock thread idles because every P is
// idle; the hooks read it, so it sits on a cache line of its own, written
// only as the process goes idle and wakes.
var matrixClockIdle struct {
	_ [64]byte
	v atomic.Uint32
	_ [60]byte
}

// The clock thread idles once it has found every P idle at
// matrixClockIdleAfter ticks in a row: a server between requests (its Ps
// idle most of the time at a moderate rate) would otherwise idle and be
// woken at nearly every request, a wake-up each where a tick costs one a
// millisecond. Woken from an idle sleep, it idles again after
// matrixClockIdleAgain ticks that find every P idle, unless one finds a P
// at work: a periodic goroutine of an idle program (a watchdog's tick)
// then costs a few wake-ups, not sixteen. An idle sleep lasts until a P
// is taken, or matrixClockIdleMax (ns).
const (
	matrixClockIdleAfter = 16
	matrixClockIdleAgain = 2
	matrixClockIdleMax   = 1e9
)

// matrixClockWake moves the clock to the system clock's millisecond and
// ends the clock thread's idle sleep, if it still idles. The clock is moved
// here, not left to the thread: the goroutine about to run may record
// before the woken thread runs (start-up recording reads no clock at its
// waits), and the clock may be as old as the idle spell.
//
//go:nosplit
func matrixClockWake() {
	matrixClockRaise(uint64(nanotime()-matrixEpoch) / 1e6)
	if matrixClockIdle.v.CompareAndSwap(1, 0) {
		systemstack(matrixClockNotify)
	}
}

func matrixClockNotify() { notewakeup(&matrixClockIdleNote) }

// matrixAllIdle reports whether every P is idle: no goroutine runs Go code.
//
//go:nosplit
func matrixAllIdle() bool {
	return sched.npidle.Load() == gomaxprocs && sched.nmspinning.Load() == 0
}

// matrixClockSet turns the clock on or off for one user (a bit of
// matrixClockUsers), starting the thread the first time.
func matrixClockSet(user uint32, on bool) {
	lock(&matrixClockLock)
	if on {
		matrixClockUsers |= user
		matrixNow()
	} else {
		matrixClockUsers &^= user
	}
	if matrixClockUsers == 0 {
		matrixClockWake() // so that it sleeps until the clock is used again
	}
	start := on && !matrixClockStarted
	if start {
		matrixClockStarted = true
	} else if on && matrixClockSleeping {
		matrixClockSleeping = false
		notewakeup(&matrixClockNote)
	}
	unlock(&matrixClockLock)
	if start {
		systemstack(func() { newm(matrixClockThread, nil, -1) })
	}
}

// matrixClockThread is the clock thread's body. It runs on the g0 of an M
// without a P: no allocation, no write barrier, no goroutine operation.
//
//go:nowritebarrierrec
func matrixClockThread() {
	// Like sysmon, it does not count for deadlock detection.
	lock(&sched.lock)
	sched.nmsys++
	checkdead()
	unlock(&sched.lock)
	// idleTicks counts the consecutive ticks that found every P idle;
	// idleAfter is how many make the thread idle; woke says the thread
	// has just left an idle sleep, most likely for the goroutine that
	// took a P, which its first look at the Ps then finds at work.
	idleTicks, idleAfter, woke := 0, matrixClockIdleAfter, false
	for {
		lock(&matrixClockLock)
		if matrixClockUsers == 0 {
			matrixClockSleeping = true
			noteclear(&matrixClockNote)
			unlock(&matrixClockLock)
			notesleep(&matrixClockNote)
			continue
		}
		unlock(&matrixClockLock)
		// The clock counts milliseconds, so it changes once a millisecond:
		// one wake-up each, timed to land just after the millisecond
		// starts, keeps it as current as a faster tick would, with half
		// the wake-ups of a 0.5 ms one (each costs a busy server a
		// context switch).
		ns := nanotime() - matrixEpoch
		matrixClockRaise(uint64(ns) / 1e6)
		if matrixProf.on.Load() != 0 {
			matrixProfTick(ns)
		}
		if woke {
			woke = false
		} else if !matrixAllIdle() {
			idleTicks, idleAfter = 0, matrixClockIdleAfter
		} else if idleTicks++; idleTicks >= idleAfter {
			idleTicks, idleAfter = 0, matrixClockIdleAgain
			// Announce the idle sleep, then look again: an M that took a
			// P in between reads the announcement in wirep after taking
			// it, and wakes the thread at once.
			noteclear(&matrixClockIdleNote)
			matrixClockIdle.v.Store(1)
			if matrixAllIdle() {
				matrixClockIdles.Add(1)
				notetsleep(&matrixClockIdleNote, matrixClockIdleMax)
			}
			if !matrixClockIdle.v.CompareAndSwap(1, 0) {
				// Woken, or about to be: take the wake-up before the
				// note is cleared again.
				notesleep(&matrixClockIdleNote)
			}
			woke = true
			continue
		}
		matrixClockTicks.Add(1)
		usleep(uint32((1e6-ns%1e6)/1e3) + 1)
	}
}

// matrixClockTicks and matrixClockIdles count the clock thread's sleeps of
// a millisecond and its idle sleeps (matrixClockCounts).
var matrixClockTicks, matrixClockIdles atomic.Uint64

// matrixClockCounts returns matrixClockTicks and matrixClockIdles.
//
//go:linkname matrixClockCounts
func matrixClockCounts() (ticks, idles uint64) {
	return matrixClockTicks.Load(), matrixClockIdles.Load()
}

// matrixMainEntered is called by the hook of main.main.
//
//go:linkname matrixMainEntered
func matrixMainEntered() {
	if matrixMainNano != 0 {
		return
	}
	matrixMainNano = nanotime()
	matrixClockRaise(uint64(matrixMainNano-matrixEpoch) / 1e6)
	if matrixStartupOn {
		matrixClockSet(1, false)
	}
	if matrixStartupOn && getg().matrixBeat == unsafe.Pointer(matrixStartup) {
		matrixExit(matrixDispatchID)
		getg().matrixBeat = nil
	}
	matrixStartupOn = false
	if !matrixBeatOn && !matrixDebug {
		matrixOn.v = 0
	}
	if !matrixTracerPresent && gogetenv("MATRIX_REPORT") != "" {
		print("matrix: MATRIX_REPORT is set, but this program was built without the Matrix tracer: nothing is recorded. ",
			"To link it, make matrixexec a tool dependency of the main module (go get -tool github.com/matrixgo/matrix/cmd/matrixexec) and build again, ",
			"or import _ \"github.com/matrixgo/matrix/tracer/auto\" in package main\n")
	}
}

// matrixGo starts f on a goroutine of the monitor's own. It starts at
// matrixGo.gowrap1, a function of package runtime, so the runtime counts it
// among its system goroutines, like the garbage collector's workers: it is
// left out of runtime.NumGoroutine, runtime.Stack(all), goroutine profiles
// and tracebacks (unless GOTRACEBACK=system), and so out of the leak checks
// of test suites that compare goroutines before and after a test.
//
//go:linkname matrixGo
func matrixGo(f func()) { go matrixGoroutine(f) }

func matrixGoroutine(f func()) { f() }

// matrixTracerPresent is set when the tracer package is linked into the
// program (its init calls matrixTracerLinked): without it, MATRIX_REPORT
// has nothing to turn on, which matrixMainEntered says once.
var matrixTracerPresent bool

//go:linkname matrixTracerLinked
func matrixTracerLinked() { matrixTracerPresent = true }

// matrixStartupInfo returns the start-up ring (nil if none), the number of
// records in it, the runtime's epoch and when main.main was entered (0 if
// not yet), all in nanotime.
//
//go:linkname matrixStartupInfo
func matrixStartupInfo() (ring unsafe.Pointer, n uint64, epoch, mainNano int64) {
	if matrixStartup == nil {
		return nil, 0, matrixEpoch, matrixMainNano
	}
	return matrixStartup.buf, matrixStartup.n, matrixEpoch, matrixMainNano
}

//go:linkname matrixNanotime
func matrixNanotime() int64 { return nanotime() }

//go:linkname matrixStartupRing
func matrixStartupRing() unsafe.Pointer { return unsafe.Pointer(matrixStartup) }

// matrixEnter records the entry of function id on a goroutine inside a
// dispatch, and reports whether it did: the instrumented function defers
// the exit hook only then, so a goroutine outside any dispatch pays one
// call and a nil check per function, and no deferred call.
//
//go:linkname matrixEnter
func matrixEnter(id uint32) bool {
	r := (*matrixRing)(getg().matrixBeat)
	if r == nil {
		if matrixDebugBuild && matrixDebug {
			print("matrix-hook i ", id, "\n")
			return true
		}
		return false
	}
	if r.n < r.lim || matrixMore(r) {
		*(*uint64)(add(r.buf, uintptr(r.n&r.mask)*8)) = matrixEnterBit | uint64(id&matrixIDMask)<<matrixIDShift | matrixClk.now&matrixTimeMask
		matrixPublish(r)
	}
	return true
}

//go:linkname matrixExit
func matrixExit(id uint32) {
	r := (*matrixRing)(getg().matrixBeat)
	if r == nil {
		if matrixDebugBuild && matrixDebug {
			print("matrix-hook o ", id, "\n")
		}
		return
	}
	if r.n < r.lim || matrixMore(r) {
		*(*uint64)(add(r.buf, uintptr(r.n&r.mask)*8)) = uint64(id&matrixIDMask)<<matrixIDShift | matrixClk.now&matrixTimeMask
		matrixPublish(r)
	}
}

// matrixChunks is the number of chunks of recording memory (abi.ChunkRecords
// records each) that no ring holds: beat adds its bound when it starts and
// takes a chunk for each buffer it makes (matrixChunkAdd); a ring that has
// written all its chunks hold takes one more here (matrixMore), and beat
// gives them back when its dispatch ends. It may be negative for a while
// after a restart, until the rings of the stopped recorder give theirs back.
var matrixChunks int64

//go:linkname matrixChunkAdd
func matrixChunkAdd(n int64) int64 { return atomic.Xaddint64(&matrixChunks, n) }

// matrixMore is called when ring r has written r.lim records, before the
// next: it gives the ring another chunk of recording memory and reports
// whether the record may be written. A ring that holds its whole buffer
// wraps from then on. A ring that finds no chunk left is short: nothing
// more is written into it (its records stop where its memory did) and
// its dispatch reports no call tree.
//
//go:nosplit
func matrixMore(r *matrixRing) bool {
	if r.lim > r.mask {
		r.lim = ^uint64(0)
		return true
	}
	if r.short != 0 {
		return false
	}
	if atomic.Xaddint64(&matrixChunks, -1) >= 0 {
		r.lim += matrixChunkRecords
		return true
	}
	atomic.Xaddint64(&matrixChunks, 1)
	atomic.Store(&r.short, 1)
	return false
}

// matrixPublish counts the record just written, with release ordering: a
// reader on another goroutine that sees the new count sees the record. The
// compiler keeps plain stores in program order and amd64 keeps them in
// order too, so there the count is a plain store; elsewhere it is a
// store-release.
func matrixPublish(r *matrixRing) {
	if goarch.IsAmd64 != 0 {
		r.n++
	} else {
		atomic.StoreRel64(&r.n, r.n+1)
	}
}

//go:linkname matrixRegister
func matrixRegister(p unsafe.Pointer) {
	(*matrixNameTable)(p).next = matrixNames
	matrixNames = p
}

//go:linkname matrixNamesHead
func matrixNamesHead() unsafe.Pointer { return matrixNames }

//go:linkname matrixSetActive
func matrixSetActive(v uint32) {
	matrixBeatOn = v != 0
	if v == 0 && (matrixStartupOn || matrixDebug) {
		return
	}
	matrixOn.v = v
}

// matrixSetClock starts (on) or stops beat's use of the clock thread.
//
//go:linkname matrixSetClock
func matrixSetClock(on bool) { matrixClockSet(2, on) }

// matrixGetNow returns the recorder's clock; while the clock thread idles
// (matrixClockIdle) it reads the system clock, which wakes the thread.
//
//go:linkname matrixGetNow
func matrixGetNow() uint64 {
	if matrixClockIdle.v.Load() != 0 {
		return matrixNow()
	}
	return matrixClk.now
}

// matrixBoundNow reads the monotonic clock for a bound of one of beat's
// dispatches, moves the recorder's clock forward to it, and returns both:
// the reading (nanotime) and the recorder's clock then. One reading gives
// the dispatch its record time and its duration.
//
//go:linkname matrixBoundNow
func matrixBoundNow() (ns int64, ms uint64) {
	if matrixClockIdle.v.Load() != 0 {
		matrixClockWake()
	}
	ns = nanotime()
	return ns, matrixClockRaise(uint64(ns-matrixEpoch) / 1e6)
}

// matrixSpares holds a spare dispatch of beat's per P (by P id, for the
// first len(matrixSpares) Ps), each on a cache line of its own: a server
// ends a request's dispatch and begins the next one's on the same P most
// of the time, and a swap here is a few instructions where a sync.Pool's
// Get and Put pin the P and look the P's cache up.
var matrixSpares [64]struct {
	p unsafe.Pointer
	_ [64 - goarch.PtrSize]byte
}

// matrixSpareSwap makes p the spare of the calling goroutine's P and
// returns the one it replaces (nil if none). When the P has no slot, p
// is not kept and is returned.
//
//go:linkname matrixSpareSwap
func matrixSpareSwap(p unsafe.Pointer) unsafe.Pointer {
	mp := acquirem() // the P stays this goroutine's until releasem
	if id := mp.p.ptr().id; uint32(id) < uint32(len(matrixSpares)) {
		s := &matrixSpares[id]
		p, s.p = s.p, p
	}
	releasem(mp)
	return p
}

// matrixProcID returns the id of the calling goroutine's P, by which beat
// spreads state that every dispatch writes over the Ps: two Ps then seldom
// write the same cache line. The goroutine may move to another P at once,
// so the id is a hint, never an owner.
//
//go:linkname matrixProcID
//go:nosplit
func matrixProcID() uint32 {
	if pp := getg().m.p.ptr(); pp != nil {
		return uint32(pp.id)
	}
	return 0
}

//go:linkname matrixSwapRing
func matrixSwapRing(p unsafe.Pointer) unsafe.Pointer {
	gp := getg()
	old := gp.matrixBeat
	gp.matrixBeat = p
	gp.matrixState, gp.matrixSys = matrixStNone, 0
	return old
}

//go:linkname matrixGoid
func matrixGoid() uint64 { return getg().goid }

// Dispatch sources in patched standard packages (net/http, testing) reach
// the recorder through these; beat installs the functions when it starts.
var (
	matrixBeginHook func(kind int, name string) unsafe.Pointer
	matrixEndHook   func(d unsafe.Pointer, scene string)
	matrixSceneHook func(d unsafe.Pointer, scene string)
)

//go:linkname matrixSetDispatchHooks
func matrixSetDispatchHooks(begin func(kind int, name string) unsafe.Pointer, end, scene func(d unsafe.Pointer, scene string)) {
	matrixBeginHook, matrixEndHook, matrixSceneHook = begin, end, scene
}

// matrixSceneRefHook names the scene of a dispatch with a string that
// never changes, by its address (see matrixDispatchRoute); beat installs
// it when it starts.
var matrixSceneRefHook func(d unsafe.Pointer, scene *string)

//go:linkname matrixSetSceneRefHook
func matrixSetSceneRefHook(f func(d unsafe.Pointer, scene *string)) { matrixSceneRefHook = f }

// matrixDispatchBegin is never inlined: beat counts the frames above it to
// find the frame that begins the dispatch (and must end it).
//
//go:linkname matrixDispatchBegin
//go:noinline
func matrixDispatchBegin(kind int, name string) unsafe.Pointer {
	if h := matrixBeginHook; h != nil && matrixOn.v != 0 {
		return h(kind, name)
	}
	return nil
}

//go:linkname matrixDispatchEnd
func matrixDispatchEnd(d unsafe.Pointer, scene string) {
	if h := matrixEndHook; h != nil && d != nil {
		h(d, scene)
	}
}

// matrixDispatchScene names the scene of the current goroutine's dispatch.
//
//go:linkname matrixDispatchScene
func matrixDispatchScene(scene string) {
	if d := getg().matrixBeat; d != nil {
		if h := matrixSceneHook; h != nil {
			h(d, scene)
		}
	}
}

// matrixDispatchRoute names the scene of the current goroutine's dispatch
// after a route a router matched: "<method> <route>". A router hands the
// same template (the same string) on every request of a route, so the
// name is made once per route and kept (matrixRouteNames), and naming the
// scene allocates nothing.
//
//go:linkname matrixDispatchRoute
func matrixDispatchRoute(method, route string) {
	d := getg().matrixBeat
	h := matrixSceneRefHook
	if d == nil || h == nil {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(route)))
	i := (p ^ p>>9 ^ uintptr(len(route)) ^ uintptr(len(method))<<3) % uintptr(len(matrixRouteNames))
	// The route is compared by its bytes' address: e.route keeps them,
	// so a string there with its length is the same. The method comes
	// from each request (its own bytes), and is compared by value.
	e := (*matrixRouteName)(atomic.Loadp(unsafe.Pointer(&matrixRouteNames[i])))
	if e == nil || unsafe.StringData(e.route) != unsafe.StringData(route) || len(e.route) != len(route) || e.method != method {
		e = &matrixRouteName{method: method, route: route, scene: concatstring3(nil, method, " ", route)}
		atomicstorep(unsafe.Pointer(&matrixRouteNames[i]), unsafe.Pointer(e))
	}
	// e never changes: the dispatch keeps a pointer to its scene.
	h(d, &e.scene)
}

// matrixRouteName is the scene of the requests of method that matched
// route.
type matrixRouteName struct{ method, route, scene string }

// matrixRouteNames holds the scenes matrixDispatchRoute made, by the
// route's string (*matrixRouteName, never changed once stored; a slot is
// overwritten by the next route that maps to it).
var matrixRouteNames [256]unsafe.Pointer

// matrixDeferNone is deferreturn's fast path in builds with deferred exit
// hooks (see deferReturnHook in package rewrite; unused otherwise): it
// reports whether the frame at sp has nothing left to run. That is so
// unless a recovery left open-coded defers to resume (gp.param) or the
// newest deferred call belongs to that frame; deferreturn's own loop would
// find exactly the same and return.
//
//go:nosplit
func matrixDeferNone(sp uintptr) bool {
	gp := getg()
	return gp.param == nil && (gp._defer == nil || gp._defer.sp != sp)
}

//go:linkname matrixCurrent
func matrixCurrent() unsafe.Pointer { return getg().matrixBeat }

// matrixAtExit runs f when the program exits through a return from main or
// os.Exit, so that reports still queued are written.
//
//go:linkname matrixAtExit
func matrixAtExit(f func()) { exithook.Add(exithook.Hook{F: f, RunOnFailure: true}) }

// Dispatch lifecycle. A dispatch is begun by a frame (abi.Ring.frame) and
// must be ended by it; these entry points let beat and the runtime notice
// when it cannot be.

// matrixAbandonedN counts the rings the runtime abandoned (see
// matrixRecovery): beat reaps them from its registry when it changes.
var matrixAbandonedN uint32

// matrixRecovery runs when a panic is recovered on a goroutine that records
// (at the top of runtime.recovery, before the stack is unwound). Every
// dispatch whose beginning frame lies deeper than the frame that recovers
// is being unwound without its End: it is marked abandoned, and the slot
// goes back to what it held before that dispatch began. The recovery is
// then noted in the ring the slot holds (matrixRecovered).
func matrixRecovery(gp *g) {
	p := gp._panic
	if p == nil {
		return
	}
	depth := gp.stack.hi - uintptr(p.sp)
	for {
		r := (*matrixRing)(gp.matrixBeat)
		if r == nil || r == matrixStartup || r.frame == 0 || r.frame <= depth {
			break
		}
		atomic.Store(&r.state, matrixRingAbandoned)
		atomic.Xadd(&matrixAbandonedN, 1)
		gp.matrixBeat = r.outer
	}
	matrixRecovered(gp)
}

// matrixRecovered notes a recovery in the ring of the recording goroutine
// gp (abi.ExtRecover): its exact time, and the program counters of the
// frame that recovers (its function's) and of its callers, so that a
// reader can close the calls the panic unwound at the recovery.
// matrixRecovery calls it, on the system stack.
func matrixRecovered(gp *g) {
	p := gp._panic
	r := (*matrixRing)(gp.matrixBeat)
	if p == nil || r == nil || r == matrixStartup || gp.matrixState != matrixStNone {
		return
	}
	var pcs [matrixExtMaxPCs]uintptr
	k := 0
	var u unwinder
	u.initAt(p.retpc, uintptr(p.sp), 0, gp, unwindSilentErrors)
	for ; u.valid() && k < len(pcs); u.next() {
		for iu, uf := newInlineUnwinder(u.frame.fn, u.symPC()); uf.valid() && k < len(pcs); uf = iu.next(uf) {
			pcs[k] = uf.pc + 1 // a return PC, as runtime.Callers gives
			k++
		}
	}
	now := matrixNow()
	matrixExtStart(r, now, matrixExtRecover, 0, k)
	for _, pc := range pcs[:k] {
		matrixPut(r, uint64(pc))
	}
	matrixExtEnd(r, now)
}

// matrixGoexitCall runs at the top of runtime.Goexit on a goroutine that
// records: every call open on it is about to be unwound with only its
// deferred calls run, so each running ring of its slot (a dispatch nested
// in another on the goroutine has one each) notes the time
// (abi.ExtRecoverGoexit), at which a reader closes them.
func matrixGoexitCall(gp *g) {
	if gp.matrixState != matrixStNone {
		return
	}
	now := matrixNow()
	for p := gp.matrixBeat; p != nil; {
		r := (*matrixRing)(p)
		if r == matrixStartup {
			return
		}
		if atomic.Load(&r.state) == matrixRingRunning {
			matrixExtStart(r, now, matrixExtRecover, matrixExtRecoverGoexit, 0)
			matrixExtEnd(r, now)
		}
		if r.root != nil {
			return // a started goroutine's ring: its outer is no ring of the slot
		}
		p = r.outer
	}
}

// matrixFrame describes the frame skip frames above its caller: its depth
// (stack top minus stack pointer, which stack growth does not change) as
// the panic unwinder measures frames, the entry of its function, and in
// pcs, innermost first, the call PCs of its logical frames: the calls of
// the functions inlined into it that lead to the call it is making, down
// from that call itself. n is how many; -1 if pcs is too short. depth is
// 0 if there is no such frame.
//
// The logical frames tell a call inside an inlined function from a call in
// the frame's own function, which the depth alone cannot: beat uses them
// to tell a Begin nested in an inlined function literal from a second
// Begin after a forgotten End.
//
// Every HTTP request begins a dispatch, so on amd64 the frame is found
// by following the frame pointers (a load per frame) and its function and
// logical frames, which depend on the call PC alone, come from a cache
// filled by the unwinder: a PC is cached only when the unwinder found the
// same frame, at the same depth, as the frame pointers.
//
//go:linkname matrixFrame
//go:noinline
func matrixFrame(skip int, pcs []uintptr) (depth, entry uintptr, n int) {
	gp := getg()
	var fpPC, fpDepth uintptr
	if goarch.IsAmd64 != 0 && len(pcs) == len(matrixFrameSite{}.pcs) && skip >= 0 {
		// rec is the frame record (saved frame pointer, then return
		// address) of the callee of the frame skip frames above our
		// caller; that frame's stack pointer is just above it.
		rec := getfp()
		for i := 0; i < skip && rec != 0; i++ {
			if rec < gp.stack.lo || rec+2*goarch.PtrSize > gp.stack.hi {
				rec = 0
				break
			}
			rec = *(*uintptr)(unsafe.Pointer(rec))
		}
		if rec >= gp.stack.lo && rec+2*goarch.PtrSize <= gp.stack.hi {
			fpPC = *(*uintptr)(unsafe.Pointer(rec + goarch.PtrSize))
			fpDepth = gp.stack.hi - (rec + 2*goarch.PtrSize)
			i := (fpPC ^ fpPC>>10) % uintptr(len(matrixFrameCache))
			if s := (*matrixFrameSite)(atomic.Loadp(unsafe.Pointer(&matrixFrameCache[i]))); s != nil && s.pc == fpPC {
				// pcs holds exactly s.pcs (checked above): an array
				// copy, without a call of memmove.
				*(*[len(matrixFrameSite{}.pcs)]uintptr)(pcs) = s.pcs
				return fpDepth, s.entry, s.n
			}
		}
	}
	var framePC uintptr
	depth, entry, n, framePC = matrixFrameSlow(skip, pcs, gp, sys.GetCallerPC(), sys.GetCallerSP())
	if fpPC != 0 && fpPC == framePC && fpDepth == depth && depth != 0 {
		s := &matrixFrameSite{pc: fpPC, entry: entry, n: n}
		copy(s.pcs[:], pcs)
		i := (fpPC ^ fpPC>>10) % uintptr(len(matrixFrameCache))
		atomicstorep(unsafe.Pointer(&matrixFrameCache[i]), unsafe.Pointer(s))
	}
	return depth, entry, n
}

// matrixFrameSite is what matrixFrame found for one call PC.
type matrixFrameSite struct {
	pc, entry uintptr
	n         int
	pcs       [8]uintptr // beat's site.pcs
}

// matrixFrameCache holds the sites matrixFrame found, by call PC
// (*matrixFrameSite, never changed once stored; a slot is overwritten by
// the next PC that maps to it).
var matrixFrameCache [128]unsafe.Pointer

// matrixFrameSlow is matrixFrame with the unwinder, from the frame at pc
// and sp; it also returns the frame's PC.
func matrixFrameSlow(skip int, pcs []uintptr, gp *g, pc, sp uintptr) (depth, entry uintptr, n int, framePC uintptr) {
	// A goroutine's own stack is walked from the system stack (as
	// runtime.Callers does), where it cannot move under the walk.
	systemstack(func() {
		var u unwinder
		u.initAt(pc, sp, 0, gp, unwindSilentErrors)
		for i := 0; i < skip && u.valid(); i++ {
			u.next()
		}
		if !u.valid() {
			return
		}
		depth = gp.stack.hi - u.frame.sp
		framePC = u.frame.pc
		f := u.frame.fn
		entry = f.entry()
		for iu, uf := newInlineUnwinder(f, u.symPC()); uf.valid(); uf = iu.next(uf) {
			if n == len(pcs) {
				n = -1
				return
			}
			pcs[n] = uf.pc
			n++
		}
	})
	return depth, entry, n, framePC
}

//go:linkname matrixAbandoned
func matrixAbandoned() uint32 { return atomic.Load(&matrixAbandonedN) }

// matrixInUse reports whether the slot of any goroutine refers to p,
// directly or as the outer ring of the ring it holds.
//
//go:linkname matrixInUse
func matrixInUse(p unsafe.Pointer) bool {
	found := false
	forEachG(func(gp *g) {
		for r := gp.matrixBeat; r != nil && !found; r = (*matrixRing)(r).outer {
			found = r == p
		}
	})
	return found
}

// matrixServeHook runs when a net/http server enters its accept loop: the
// net/http patch calls matrixServing at the top of (*Server).Serve, and the
// start-up tracer sets the hook, so that a service is ready when it can
// serve rather than when its first request ends.
var matrixServeHook func()

//go:linkname matrixSetServeHook
func matrixSetServeHook(f func()) { matrixServeHook = f }

//go:linkname matrixServing
func matrixServing() {
	if h := matrixServeHook; h != nil {
		h()
	}
}

// The trace context (W3C traceparent, tracestate and baggage headers) of
// the request a patched server began a dispatch for reaches the dispatch
// through matrixTraceParentHook, and what a client call sends with the
// traceparent matrixBoundOut returned comes from matrixTraceStateHook;
// beat installs both when it starts.
var (
	matrixTraceParentHook func(d unsafe.Pointer, tp, state, baggage string)
	matrixTraceStateHook  func() (state, baggage string)
)

//go:linkname matrixSetTraceParentHook
func matrixSetTraceParentHook(in func(d unsafe.Pointer, tp, state, baggage string), out func() (state, baggage string)) {
	matrixTraceParentHook, matrixTraceStateHook = in, out
}

//go:linkname matrixDispatchTraceParent
func matrixDispatchTraceParent(d unsafe.Pointer, tp string) {
	if h := matrixTraceParentHook; h != nil && d != nil && tp != "" {
		h(d, tp, "", "")
	}
}

// matrixDispatchTraceContext is matrixDispatchTraceParent with the
// request's tracestate and baggage.
//
//go:linkname matrixDispatchTraceContext
func matrixDispatchTraceContext(d unsafe.Pointer, tp, state, baggage string) {
	if h := matrixTraceParentHook; h != nil && d != nil && (tp != "" || state != "" || baggage != "") {
		h(d, tp, state, baggage)
	}
}

// matrixTraceState returns the tracestate and baggage a client call of the
// current goroutine sends with the traceparent matrixBoundOut returned.
//
//go:linkname matrixTraceState
func matrixTraceState() (state, baggage string) {
	if h := matrixTraceStateHook; h != nil {
		return h()
	}
	return "", ""
}

// A patched net/http server begins a request's dispatch with the request's
// method, host and scheme (matrixDispatchBeginRequest), and gives its
// response's status code to it, through these hooks; beat installs them
// when it starts.
var (
	matrixBeginRequestHook func(kind int, name, method, host string, tls bool) unsafe.Pointer
	matrixStatusHook       func(d unsafe.Pointer, code int)
)

//go:linkname matrixSetRequestHooks
func matrixSetRequestHooks(begin func(kind int, name, method, host string, tls bool) unsafe.Pointer, status func(d unsafe.Pointer, code int)) {
	matrixBeginRequestHook, matrixStatusHook = begin, status
}

// matrixDispatchBeginRequest is matrixDispatchBegin for a server's request:
// the dispatch has the request's method, host and scheme from its start,
// written before any other goroutine can see it. It is never inlined, as
// matrixDispatchBegin.
//
//go:linkname matrixDispatchBeginRequest
//go:noinline
func matrixDispatchBeginRequest(kind int, name, method, host string, tls bool) unsafe.Pointer {
	if h := matrixBeginRequestHook; h != nil && matrixOn.v != 0 {
		return h(kind, name, method, host, tls)
	}
	return nil
}

// matrixHost returns h, the host of a request whose dispatch begins, as a
// string the dispatch may keep: the string of the call before when h has
// the same bytes. A server that keeps the request's host in a buffer it
// reuses (fasthttp) then allocates for it only when the host changes,
// which a service's requests seldom do.
//
//go:linkname matrixHost
func matrixHost(h []byte) string {
	if p := (*string)(atomic.Loadp(unsafe.Pointer(&matrixLastHost))); p != nil && *p == string(h) {
		return *p
	}
	s := new(string)
	*s = string(h)
	atomicstorep(unsafe.Pointer(&matrixLastHost), unsafe.Pointer(s))
	return *s
}

// matrixLastHost is the string matrixHost returned last.
var matrixLastHost *string

// matrixDispatchStatus gives the status code of a response written on the
// current goroutine to its dispatch.
//
//go:linkname matrixDispatchStatus
func matrixDispatchStatus(code int) {
	if d := getg().matrixBeat; d != nil {
		if h := matrixStatusHook; h != nil {
			h(d, code)
		}
	}
}

// Boundaries: a patched package (database/sql, net/http's client, a gRPC
// client) brackets a call out of the program with matrixBound and
// matrixUnbound, which write an ExtBound interval around the records of
// the call. The text of the boundary is made by matrixBoundHook, which
// beat installs when it starts: it normalises a statement and keeps only
// what the boundary names (never arguments, paths or query strings). For
// a client call that passes the trace context on, it also returns the
// traceparent to send (see matrixBoundOut).
var matrixBoundHook func(kind int, a, b, c string, v any, buf *[matrixExtBoundWords * 8]byte) (int, string)

//go:linkname matrixSetBoundHook
func matrixSetBoundHook(f func(kind int, a, b, c string, v any, buf *[matrixExtBoundWords * 8]byte) (int, string)) {
	matrixBoundHook = f
}

// matrixFlag returns the address of the recording flag, for a package
// that reads it but cannot declare it under a name of its own (the route
// hooks of a package whose hooks file declares it already).
//
//go:linkname matrixFlag
func matrixFlag() *uint32 { return &matrixOn.v }

// matrixBound opens a boundary of kind on a recording goroutine and
// reports whether it did: the caller then defers matrixUnbound. The
// patched packages call it only while the recorder is on.
//
//go:linkname matrixBound
func matrixBound(kind int, a, b, c string, v any) bool {
	ok, _ := matrixBoundOut(kind, a, b, c, v)
	return ok
}

// matrixBoundOut is matrixBound for a client call that may pass the
// dispatch's trace context on (net/http's and gRPC's clients, v true when
// the request or call has no traceparent of its own): out is then the
// traceparent to send, naming the boundary's span, which the boundary's
// text records.
// out is "" when the call passes nothing on, whether or not it opened a
// boundary.
//
//go:linkname matrixBoundOut
func matrixBoundOut(kind int, a, b, c string, v any) (ok bool, out string) {
	gp := getg()
	r := (*matrixRing)(gp.matrixBeat)
	h := matrixBoundHook
	if r == nil || r == matrixStartup || h == nil {
		return false, ""
	}
	var buf [matrixExtBoundWords * 8]byte
	// The hook writes into buf and keeps no reference to it.
	n, out := h(kind, a, b, c, v, (*[matrixExtBoundWords * 8]byte)(noescape(unsafe.Pointer(&buf))))
	if n <= 0 || (*matrixRing)(gp.matrixBeat) != r || gp.matrixState != matrixStNone {
		return false, ""
	}
	n = min(n, len(buf))
	words := (n + 7) / 8
	matrixExtStart(r, matrixNow(), matrixExtBound, uint8(kind), words)
	for i := 0; i < words; i++ {
		var w uint64
		for k := 0; k < 8 && 8*i+k < n; k++ {
			w |= uint64(buf[8*i+k]) << (8 * k)
		}
		matrixPut(r, w)
	}
	return true, out
}

// matrixUnbound closes the boundary matrixBound opened.
//
//go:linkname matrixUnbound
func matrixUnbound() {
	gp := getg()
	r := (*matrixRing)(gp.matrixBeat)
	if r == nil || r == matrixStartup || gp.matrixState != matrixStNone {
		return
	}
	matrixExtEnd(r, matrixNow())
}

// Waits. While a goroutine records (its slot points at a ring other than
// the start-up ring), the intervals in which it does not run are written to
// its ring as extended records (abi package doc): a start record, a
// payload, and an end record. g.matrixState says which interval is open.
// The hooks are inserted by rewrite.PatchRuntime; a goroutine that is not
// recording pays the nil check of its slot there.
const (
	matrixStNone     = 0 // running
	matrixStWait     = 1 // a wait is open
	matrixStRunnable = 2 // runnable, waiting for a CPU
)

// matrixPut appends one word to r. Only the goroutine that owns r writes
// to it, or the thread that changes its status while it does not run (the
// status change orders the writes).
//
//go:nosplit
func matrixPut(r *matrixRing, w uint64) {
	if r.n >= r.lim && !matrixMore(r) {
		return
	}
	*(*uint64)(add(r.buf, uintptr(r.n&r.mask)*8)) = w
	r.n++
}

//go:nosplit
func matrixExtStart(r *matrixRing, t uint64, kind, reason uint8, npc int) {
	matrixPut(r, matrixEnterBit|matrixExtID<<matrixIDShift|t&matrixTimeMask)
	matrixPut(r, uint64(kind)<<matrixExtKindShift|uint64(reason)<<matrixExtReasonShift|uint64(npc))
}

//go:nosplit
func matrixExtEnd(r *matrixRing, t uint64) {
	matrixPut(r, matrixExtID<<matrixIDShift|t&matrixTimeMask)
}

// matrixPark is called by gopark on a recording goroutine: it opens a wait
// with the reason and the program counters of the callers, the runtime's
// own frames left out, so that the wait can be named by the user code that
// blocked (its function, inlined or not, and line).
//
//go:noinline
func matrixPark(reason waitReason) {
	gp := getg()
	r := (*matrixRing)(gp.matrixBeat)
	if r == matrixStartup || gp.matrixState != matrixStNone {
		return
	}
	if r.root != nil && (atomic.Load(&(*matrixRing)(r.root).state) != matrixRingRunning || (*matrixKid)(unsafe.Pointer(r)).handoff == matrixHandoffDelivered) {
		// A goroutine started inside a dispatch that has ended stops
		// recording when it first blocks, and so does a worker that was
		// handed work and has woken a goroutine of the dispatch since
		// (it delivered): its ring goes back.
		gp.matrixBeat = nil
		matrixKidDone(r)
		return
	}
	var pcs [matrixExtMaxPCs + 8]uintptr
	n := callers(2, pcs[:]) // gopark's caller and up
	i := matrixRuntimeFrames(pcs[:n])
	k := min(n-i, matrixExtMaxPCs)
	matrixExtStart(r, matrixNow(), matrixExtWait, uint8(reason), k)
	for _, pc := range pcs[i : i+k] {
		matrixPut(r, uint64(pc))
	}
	gp.matrixState = matrixStWait
}

// matrixStatus is called by casgstatus for a recording goroutine gp. A
// move to _Gwaiting that gopark did not announce (the runtime parking gp
// for the garbage collector, …) opens a wait with gp's reason and no
// program counters; a move to _Grunnable ends the wait and opens a
// runnable interval; a move to _Grunning ends what is open.
//
//go:nosplit
func matrixStatus(gp *g, oldval, newval uint32) {
	r := (*matrixRing)(gp.matrixBeat)
	if r == matrixStartup {
		return
	}
	now := matrixNow()
	switch newval {
	case _Gwaiting:
		if oldval == _Grunning && gp.matrixState == matrixStNone {
			matrixExtStart(r, now, matrixExtWait, uint8(gp.waitreason), 0)
			gp.matrixState = matrixStWait
		}
	case _Grunnable:
		if gp.matrixState == matrixStRunnable {
			return
		}
		if gp.matrixState == matrixStWait {
			matrixExtEnd(r, now)
		} else if matrixRunnableAgain(r, now) {
			gp.matrixState = matrixStRunnable
			return
		}
		matrixExtStart(r, now, matrixExtRunnable, 0, 0)
		gp.matrixState = matrixStRunnable
	case _Grunning:
		if gp.matrixState != matrixStNone {
			matrixExtEnd(r, now)
			gp.matrixState = matrixStNone
		}
	}
}

// matrixRunnableAgain reopens the runnable interval that r ends with, and
// reports whether it did, when that interval began and ended at now: the
// goroutine, runnable again within the same tick, takes no new one. A
// goroutine that yields in a loop (runtime.GC does, until the sweep is
// done; so does code that spins on a flag) would otherwise write an
// interval per yield, thousands a millisecond on a busy machine, and wrap
// the dispatch's buffer, which then yields no record at all. Readers drop
// a runnable interval of no time, so the reopened one reads as the two
// would have. Its end record is rewritten in the same slot when the
// goroutine runs again: a reader copying meanwhile sees an end record
// there, the old or the new, as it would any other.
//
//go:nosplit
func matrixRunnableAgain(r *matrixRing, now uint64) bool {
	if r.n < 3 {
		return false
	}
	t := now & matrixTimeMask
	if *(*uint64)(add(r.buf, uintptr((r.n-1)&r.mask)*8)) != matrixExtID<<matrixIDShift|t ||
		*(*uint64)(add(r.buf, uintptr((r.n-2)&r.mask)*8)) != uint64(matrixExtRunnable)<<matrixExtKindShift ||
		*(*uint64)(add(r.buf, uintptr((r.n-3)&r.mask)*8)) != matrixEnterBit|matrixExtID<<matrixIDShift|t {
		return false
	}
	r.n--
	return true
}

// Wake-ups. ready, which makes a parked goroutine runnable, calls
// matrixReady when that goroutine records and matrixHandoff when the
// goroutine that wakes it does (see rewrite.PatchRuntime). ready runs on
// the system stack of the thread of the waker (m.curg), which has switched
// to it from its own stack (systemstack), or on that of a thread with no
// goroutine (timers, the network poller); only the first has a waker.

// matrixWaker returns the goroutine whose call of ready this is, or nil
// when ready was not called by a goroutine (or by gp itself).
//
//go:nosplit
func matrixWaker(gp *g) *g {
	w := getg().m.curg
	if w == nil || w == gp || readgstatus(w) != _Grunning {
		return nil
	}
	return w
}

// matrixReady runs in ready for the recording goroutine gp while it is
// parked: when a goroutine wakes it from a wait, the wait gets an ExtWake
// record naming that goroutine and where it was (its return program
// counters, the runtime's frames left out). A worker that was handed work
// by gp's dispatch and wakes one of its goroutines has delivered
// (matrixKid.handoff): it stops recording when it next blocks.
func matrixReady(gp *g) {
	r := (*matrixRing)(gp.matrixBeat)
	if r == matrixStartup || gp.matrixState != matrixStWait {
		return
	}
	w := matrixWaker(gp)
	if w == nil {
		return
	}
	if wr := (*matrixRing)(w.matrixBeat); wr != nil && wr != matrixStartup && wr.root != nil {
		if k := (*matrixKid)(unsafe.Pointer(wr)); k.handoff == matrixHandoffWorking && (wr.root == r.root || wr.root == unsafe.Pointer(r)) {
			k.handoff = matrixHandoffDelivered
		}
	}
	var pcs [matrixExtWakePCs]uintptr
	n := matrixUserPCs(w, pcs[:])
	now := matrixNow()
	matrixExtStart(r, now, matrixExtWake, 0, 1+n)
	matrixPut(r, w.goid)
	for _, pc := range pcs[:n] {
		matrixPut(r, uint64(pc))
	}
	matrixExtEnd(r, now)
}

// matrixHandoff runs in ready when the recording goroutine w wakes gp,
// which does not record: if gp was parked receiving from a channel, or in
// a select, and w sent it a value (a close wakes every receiver: it hands
// nothing), or gp waited on a condition that w signalled, it is taken to
// be a worker handed work by w (a job sent to a pool, a message to a
// connection's writer). It then
// records for w's dispatch, as a goroutine w started would, from the
// function it was parked in, until it blocks again after waking a
// goroutine of the dispatch, or the dispatch ends. The runtime's own
// goroutines are never workers, nor is the goroutine that started w.
func matrixHandoff(w, gp *g) {
	r := (*matrixRing)(w.matrixBeat)
	if r == matrixStartup || matrixWaker(gp) != w {
		return
	}
	switch gp.waitreason {
	case waitReasonChanReceive, waitReasonSelect:
		// A value sent, not a close: the sender hands gp the sudog it
		// was parked with (gp.param), marked a success.
		if sg := (*sudog)(gp.param); sg == nil || !sg.success {
			return
		}
	case waitReasonSyncCondWait:
	default:
		return
	}
	if w.parentGoid == gp.goid || isSystemGoroutine(gp, false) {
		// A goroutine that wakes the one that started it signals its
		// parent (it is done, as the testing package's runner tells the
		// test that ran it): it hands it nothing.
		return
	}
	// gp's stack is walked holding its status with the scan bit, as the
	// garbage collector does to scan it, so that it cannot move meanwhile.
	if !castogscanstatus(gp, _Gwaiting, _Gscanwaiting) {
		return
	}
	var pcs [1]uintptr
	n := matrixUserPCs(gp, pcs[:])
	casfrom_Gscanstatus(gp, _Gscanwaiting, _Gwaiting)
	if n == 0 {
		return
	}
	if f := matrixKidStartFn; f != nil {
		f(r, gp, pcs[0], matrixExtGoHandoff)
	}
}

// matrixKidStartFn is matrixKidStart called through a function value, out
// of sight of the compiler's check that nothing ready calls has a write
// barrier (ready is reachable from go:nowritebarrierrec functions, which
// wake the garbage collector's own waiters). matrixHandoff calls it only
// for a goroutine parked on a channel or a condition, which the code that
// wakes it (chansend, selectgo, notifyList) does with a P, where write
// barriers are allowed. It is set by init (a static value would be an
// initialisation cycle through the write barrier's code).
var matrixKidStartFn func(r *matrixRing, newg *g, fn uintptr, reason uint8) bool

// matrixUserPCs writes to pcs the return program counters of gp, which is
// not running (it is parked, or it is this thread's goroutine and switched
// to the system stack), innermost first, from the first frame that is not
// the runtime's; it returns how many. On amd64 it follows the frame
// pointers from gp's saved state (a load per frame); elsewhere it unwinds.
func matrixUserPCs(gp *g, pcs []uintptr) int {
	const maxFrames = 32
	var buf [maxFrames]uintptr
	n := 0
	if goarch.IsAmd64 != 0 {
		for rec := gp.sched.bp; n < len(buf); n++ {
			if rec < gp.stack.lo || rec+2*goarch.PtrSize > gp.stack.hi {
				break
			}
			buf[n] = *(*uintptr)(unsafe.Pointer(rec + goarch.PtrSize))
			rec = *(*uintptr)(unsafe.Pointer(rec))
		}
	} else {
		n = gcallers(gp, 0, buf[:])
	}
	i := 0
	for i < n {
		f := findfunc(buf[i] - 1)
		if !f.valid() {
			return 0
		}
		name := funcname(f)
		if len(name) < 8 || name[:8] != "runtime." {
			break
		}
		i++
	}
	return copy(pcs, buf[i:n])
}

// matrixSyscallEnter notes when a recording goroutine entered a system
// call (the clock plus one, so that zero means none). It runs in
// reentersyscall or entersyscallblock, which must not split the stack.
//
//go:nosplit
func matrixSyscallEnter() {
	gp := getg()
	gp.matrixSys = matrixNow() + 1
}

// matrixSyscallExit records the system call that ends if it took at least
// one tick of the recorder's clock. It runs at the top of exitsyscall, with
// or without a P: no split, no write barrier.
//
//go:nosplit
func matrixSyscallExit() {
	gp := getg()
	t := gp.matrixSys
	gp.matrixSys = 0
	r := (*matrixRing)(gp.matrixBeat)
	if t == 0 || r == matrixStartup || gp.matrixState != matrixStNone {
		return
	}
	t--
	if now := matrixNow(); now > t {
		matrixExtStart(r, t, matrixExtSyscall, 0, 0)
		matrixExtEnd(r, now)
	}
}

// matrixGoexit runs in gdestroy for an exiting goroutine whose slot is
// set: it clears the slot, so that a goroutine that reuses the g does not
// record into a dead dispatch, and marks every ring it was recording into
// (the innermost and the dispatches it is nested in) abandoned for beat.
func matrixGoexit(gp *g) {
	r := (*matrixRing)(gp.matrixBeat)
	gp.matrixBeat = nil
	gp.matrixState, gp.matrixSys = matrixStNone, 0
	for r != nil && r != matrixStartup {
		if r.root != nil {
			// A goroutine started inside a dispatch: its ring, the
			// outermost of its chain, is done.
			matrixKidDone(r)
			return
		}
		if atomic.Cas(&r.state, matrixRingRunning, matrixRingAbandoned) {
			atomic.Xadd(&matrixAbandonedN, 1)
		}
		r = (*matrixRing)(r.outer)
	}
}

// matrixWaitReason names a wait reason as goroutine dumps do.
//
//go:linkname matrixWaitReason
func matrixWaitReason(r uint8) string { return waitReason(r).String() }

// Goroutines started inside a dispatch. A goroutine that a recording
// goroutine starts gets a ring of its own (a child ring, abi.Ring.Root set)
// and records into it until it exits, or, once its dispatch has ended,
// until it first blocks. The dispatch lists its child rings (abi.Ring.List),
// and the starting goroutine's ring gets an abi.ExtGo record that names the
// child, so that a reader can put the child's tree under the function that
// started it. The number of child rings is bounded per dispatch
// (abi.Ring.MaxKids) and for the process (matrixKidLimit); a goroutine
// beyond either is counted (abi.Ring.Lost) and does not record.
var (
	matrixKidLock  mutex
	matrixKidFree  *matrixRing // child rings to reuse, linked by outer
	matrixKidSize  uint64      // records per child ring, a power of two
	matrixKidLimit uint32      // child rings the process may hold
	matrixKidLive  uint32      // child rings held (not on the free list)
)

// matrixSetKids sizes child rings (records, a power of two) and bounds how
// many the process holds at once; beat sets it when it starts.
//
//go:linkname matrixSetKids
func matrixSetKids(size uint64, limit uint32) {
	lock(&matrixKidLock)
	matrixKidSize = size
	atomic.Store(&matrixKidLimit, limit)
	unlock(&matrixKidLock)
}

// matrixSpawn runs in newproc1, on the system stack, when the recording
// goroutine gp starts newg with the function at entry pc fn: newg gets a
// child ring, and gp's ring a record of the start.
func matrixSpawn(gp, newg *g, fn uintptr) {
	r := (*matrixRing)(gp.matrixBeat)
	if r == matrixStartup || newg == nil {
		return
	}
	// The runtime's own goroutines (the garbage collector's mark workers,
	// the finalizer and cleanup goroutines), which it starts from whichever
	// goroutine first needs them, are not the dispatch's work. newproc1
	// sets startpc to fn right after this; isSystemGoroutine reads it.
	newg.startpc = fn
	if isSystemGoroutine(newg, false) {
		return
	}
	matrixKidStart(r, newg, fn, 0)
}

// matrixKidStart gives goroutine newg, which is not running, a child ring
// of the dispatch that ring r (the starter's) records for, and writes the
// ExtGo record with pc and reason to r. It reports whether newg got one.
func matrixKidStart(r *matrixRing, newg *g, fn uintptr, reason uint8) bool {
	root := r
	if r.root != nil {
		root = (*matrixRing)(r.root)
	}
	if atomic.Load(&root.state) != matrixRingRunning || root.maxKids == 0 {
		return false
	}
	seq := atomic.Xadd(&root.kids, 1)
	if seq > root.maxKids {
		atomic.Xadd(&root.lost, 1)
		return false
	}
	c := matrixKidGet()
	if c == nil {
		atomic.Xadd(&root.lost, 1)
		return false
	}
	now := matrixNow()
	c.n, c.outer, c.frame, c.state = 0, nil, 0, matrixRingRunning
	c.root, c.seq, c.begin, c.refs = unsafe.Pointer(root), seq, now, 2
	c.alloc, c.allocs = 0, 0
	atomic.Store64(&c.end, 0)
	// Goroutines of one dispatch start on several threads at once, and
	// the dispatch may end meanwhile (matrixKidsDetach).
	lock(&matrixKidLock)
	ok := atomic.Load(&root.state) == matrixRingRunning
	if ok {
		c.list = root.list
		atomicstorep(unsafe.Pointer(&root.list), unsafe.Pointer(c))
	}
	unlock(&matrixKidLock)
	if !ok {
		c.refs = 1
		matrixKidRelease(unsafe.Pointer(c))
		return false
	}
	matrixExtStart(r, now, matrixExtGo, reason, matrixExtGoWords)
	matrixPut(r, uint64(fn))
	matrixPut(r, uint64(seq))
	matrixExtEnd(r, now)
	k := (*matrixKid)(unsafe.Pointer(c))
	k.g.set(newg)
	k.handoff = matrixHandoffNone
	if reason == matrixExtGoHandoff {
		k.handoff = matrixHandoffWorking
	}
	newg.matrixBeat = unsafe.Pointer(c)
	newg.matrixState, newg.matrixSys = matrixStNone, 0
	return true
}

// matrixKidGet returns a child ring to record into, or nil when the process
// holds as many as it may.
func matrixKidGet() *matrixRing {
	if atomic.Xadd(&matrixKidLive, 1) > atomic.Load(&matrixKidLimit) {
		atomic.Xadd(&matrixKidLive, -1)
		return nil
	}
	lock(&matrixKidLock)
	size := matrixKidSize
	c := matrixKidFree
	for c != nil && c.mask+1 != size {
		c = (*matrixRing)(c.outer) // sized before a restart: let it go
	}
	if c != nil {
		matrixKidFree = (*matrixRing)(c.outer)
	} else {
		matrixKidFree = nil
	}
	unlock(&matrixKidLock)
	if c == nil {
		if size == 0 {
			atomic.Xadd(&matrixKidLive, -1)
			return nil
		}
		buf := make([]uint64, size)
		k := &matrixKid{ring: matrixRing{buf: unsafe.Pointer(&buf[0]), mask: size - 1, lim: ^uint64(0)}}
		c = &k.ring
	}
	return c
}

// matrixKid is a child ring and the goroutine that records into it, so
// that the ring can be taken back from a goroutine parked when its
// dispatch ends (matrixKidTake). Every child ring is one (matrixKidGet).
type matrixKid struct {
	ring    matrixRing // first: a *matrixRing of a child ring is a *matrixKid
	g       guintptr   // gs are never freed
	taken   bool       // by matrixKidTake: never reused
	handoff uint8      // matrixHandoff*: whether the goroutine was handed work
}

// The states of a child ring's goroutine as a worker (matrixKid.handoff).
const (
	matrixHandoffNone      = 0 // started inside the dispatch
	matrixHandoffWorking   = 1 // handed work (matrixHandoff)
	matrixHandoffDelivered = 2 // … and it has woken a goroutine of the dispatch
)

// matrixKidTake takes child ring c back from its goroutine if that
// goroutine is parked: it stops recording (what it would record after its
// dispatch's end goes nowhere), and its hold on the ring is dropped, so
// that a goroutine parked for good does not keep a ring for the life of
// the process. A goroutine that runs keeps its ring until it first blocks
// or exits (matrixPark, matrixGoexit). The goroutine's status is held with
// the scan bit meanwhile, as the garbage collector holds it to scan a
// stack, so that it can neither wake nor exit; if that bit is taken, the
// ring is left to the goroutine.
//
// A ring taken back is not reused: a thread readying the goroutine may
// have read its slot before it was cleared, and be about to write the
// start of the goroutine's runnable interval (matrixStatus runs before
// casgstatus's exchange). It is left to the garbage collector, which
// frees it once no such thread holds it.
func matrixKidTake(c *matrixRing) {
	gp := (*matrixKid)(unsafe.Pointer(c)).g.ptr()
	if gp == nil || gp == getg().m.curg {
		return
	}
	taken := false
	systemstack(func() {
		if readgstatus(gp) != _Gwaiting || !castogscanstatus(gp, _Gwaiting, _Gscanwaiting) {
			return
		}
		if gp.matrixBeat == unsafe.Pointer(c) && atomic.Load(&c.state) == matrixRingRunning {
			gp.matrixBeat = nil
			gp.matrixState, gp.matrixSys = matrixStNone, 0
			(*matrixKid)(unsafe.Pointer(c)).taken = true
			taken = true
		}
		casfrom_Gscanstatus(gp, _Gscanwaiting, _Gwaiting)
	})
	if taken {
		matrixKidDone(c)
	}
}

// matrixKidDone is called when the goroutine of child ring c stops
// recording into it: it notes when, and lets the ring go.
func matrixKidDone(c *matrixRing) {
	atomic.Store64(&c.end, max(matrixNow(), c.begin))
	atomic.Store(&c.state, matrixRingEnded)
	matrixKidRelease(unsafe.Pointer(c))
}

// matrixKidsLive returns how many child rings the process holds.
//
//go:linkname matrixKidsLive
func matrixKidsLive() uint32 { return atomic.Load(&matrixKidLive) }

// matrixKidsDetach takes the list of child rings off the ring of a
// dispatch that has ended, for beat to release them: a goroutine that
// starts inside the dispatch afterwards gets none, and the rings of its
// goroutines that are parked are taken back from them (matrixKidTake).
//
//go:linkname matrixKidsDetach
func matrixKidsDetach(p unsafe.Pointer) unsafe.Pointer {
	r := (*matrixRing)(p)
	lock(&matrixKidLock)
	l := r.list
	atomicstorep(unsafe.Pointer(&r.list), nil)
	unlock(&matrixKidLock)
	for c := (*matrixRing)(l); c != nil; c = (*matrixRing)(c.list) {
		if atomic.Load(&c.state) == matrixRingRunning {
			matrixKidTake(c)
		}
	}
	return l
}

// matrixKidRelease drops one holder of child ring c; the last one puts it
// on the free list. beat drops the dispatch's hold when the dispatch's
// records are no longer read.
//
//go:linkname matrixKidRelease
func matrixKidRelease(p unsafe.Pointer) {
	c := (*matrixRing)(p)
	if atomic.Xaddint32(&c.refs, -1) != 0 {
		return
	}
	if (*matrixKid)(p).taken {
		atomic.Xadd(&matrixKidLive, -1) // left to the garbage collector
		return
	}
	lock(&matrixKidLock)
	c.outer = unsafe.Pointer(matrixKidFree)
	matrixKidFree = c
	unlock(&matrixKidLock)
	atomic.Xadd(&matrixKidLive, -1)
}

// CPU samples of slow dispatches (abi: SampleSlots). A dispatch that has
// run for longer than matrixProf.floor gets a slot of the arena beat
// allocated (matrixProfSetup) from the clock thread, which then signals,
// every matrixSamplePeriodMs, each thread that runs one of its goroutines;
// the signal handler (matrixSigSample, called from the top of sighandler)
// writes the goroutine's stack into the slot. The signal is the one the
// scheduler preempts goroutines with: the runtime already takes it at any
// instruction and ignores it where nothing asked for a preemption, and the
// profiling signal and its timers, which a program's own CPU profile and
// runtime/trace use, are left alone.
var matrixProf struct {
	on    atomic.Uint32 // 1 while beat samples
	arena uintptr       // matrixSampleSlots·matrixSampleSlotSamples·matrixSampleWords words, beat's
	floor uint64        // ms a dispatch runs before it is sampled
	next  int64         // nanotime of the next round of samples (clock thread)
	keep  unsafe.Pointer
	used  atomic.Int32 // slots taken
	slots [matrixSampleSlots]matrixProfSlot
}

// matrixProfSlot is a slot of samples: the dispatch ring it is for (0 when
// free), its generation (bumped when it is taken: samples stamped with an
// older one are not read), how many samples were taken, and when it was
// let go, so that a handler that found it just before is done with it
// before it is taken again.
type matrixProfSlot struct {
	root  atomic.Uintptr
	gen   atomic.Uint32
	n     atomic.Uint32
	freed int64
}

// matrixProfSetup starts (arena non-nil) or stops sampling: arena holds
// the slots' samples, floor is the time in ms a dispatch runs before it is
// sampled.
//
//go:linkname matrixProfSetup
func matrixProfSetup(arena unsafe.Pointer, floor uint64) {
	if arena == nil || GOOS == "windows" { // no signals there: no samples
		matrixProf.on.Store(0)
		return
	}
	matrixProf.keep = arena
	matrixProf.arena = uintptr(arena)
	matrixProf.floor = floor
	matrixProf.on.Store(1)
}

// matrixProfTick is the clock thread's round of samples: every thread that
// runs a goroutine of a dispatch older than the floor gets the signal,
// the dispatch a slot first. It runs without a P; ns is the clock's time
// in ns since matrixEpoch.
//
//go:nowritebarrierrec
func matrixProfTick(ns int64) {
	if ns < matrixProf.next {
		return
	}
	matrixProf.next = ns + matrixSamplePeriodMs*1e6
	now := uint64(ns) / 1e6
	lock(&allpLock)
	for _, pp := range allp {
		if pp == nil || pp.status != _Prunning {
			continue
		}
		mp := pp.m.ptr()
		if mp == nil {
			continue
		}
		gp := mp.curg
		if gp == nil || readgstatus(gp) != _Grunning {
			continue
		}
		r := (*matrixRing)(gp.matrixBeat)
		if r == nil || r == matrixStartup {
			continue
		}
		root := matrixRootOf(r)
		if atomic.Load(&root.state) != matrixRingRunning || now < atomic.Load64(&root.begin)+matrixProf.floor {
			continue
		}
		if matrixProfFind(uintptr(unsafe.Pointer(root))) < 0 && !matrixProfClaim(root, ns) {
			continue
		}
		// The scheduler's own sender, which sends none while one is
		// pending; without a preemption asked for, the signal handler
		// preempts nothing.
		preemptM(mp)
	}
	unlock(&allpLock)
}

// matrixRootOf returns the ring of the dispatch that ring r records for:
// r itself, or the root of a child ring.
//
//go:nosplit
func matrixRootOf(r *matrixRing) *matrixRing {
	if r.root != nil {
		return (*matrixRing)(r.root)
	}
	return r
}

// matrixProfFind returns the slot of the dispatch ring root, -1 if it has
// none.
//
//go:nosplit
func matrixProfFind(root uintptr) int {
	for i := range matrixProf.slots {
		if matrixProf.slots[i].root.Load() == root {
			return i
		}
	}
	return -1
}

// matrixProfClaim gives root a free slot (one let go at least a period
// ago), if there is one. Only the clock thread claims slots. A dispatch
// that ended meanwhile gives it back at once: beat lets a slot go after
// the dispatch's end, and one of the two sees the other.
//
//go:nosplit
func matrixProfClaim(root *matrixRing, ns int64) bool {
	for i := range matrixProf.slots {
		s := &matrixProf.slots[i]
		if s.root.Load() != 0 || ns-s.freed < matrixSamplePeriodMs*1e6 {
			continue
		}
		s.gen.Add(1)
		s.n.Store(0)
		matrixProf.used.Add(1)
		s.root.Store(uintptr(unsafe.Pointer(root)))
		if atomic.Load(&root.state) != matrixRingRunning {
			if s.root.CompareAndSwap(uintptr(unsafe.Pointer(root)), 0) {
				s.freed = ns
				matrixProf.used.Add(-1)
			}
			return false
		}
		return true
	}
	return false
}

// matrixProfRelease lets the slot of dispatch ring root go, once its
// samples have been read or will not be.
//
//go:linkname matrixProfRelease
func matrixProfRelease(root unsafe.Pointer) {
	if matrixProf.used.Load() == 0 {
		return // one load for a dispatch that was never sampled, mostly
	}
	i := matrixProfFind(uintptr(root))
	if i < 0 {
		return
	}
	s := &matrixProf.slots[i]
	if s.root.CompareAndSwap(uintptr(root), 0) {
		s.freed = nanotime() - matrixEpoch
		matrixProf.used.Add(-1)
	}
}

// matrixProfSlotOf returns the slot of dispatch ring root (-1 if none),
// its generation and how many samples were taken into it.
//
//go:linkname matrixProfSlotOf
func matrixProfSlotOf(root unsafe.Pointer) (slot int, gen, taken uint32) {
	if matrixProf.used.Load() == 0 {
		return -1, 0, 0
	}
	i := matrixProfFind(uintptr(root))
	if i < 0 {
		return -1, 0, 0
	}
	s := &matrixProf.slots[i]
	return i, s.gen.Load(), s.n.Load()
}

// matrixSigSample is called at the top of sighandler for the preemption
// signal while sampling is on: if the goroutine the thread runs records
// into a dispatch that has a slot, its stack is written into the slot.
// It runs on the signal stack with signals blocked: it neither allocates
// nor locks, and writes only integers.
//
//go:nowritebarrierrec
func matrixSigSample(pc, sp, lr uintptr, gp *g) {
	if gp == nil || gp.m == nil {
		return
	}
	mp := gp.m
	cg := mp.curg
	if cg == nil || cg.syscallsp != 0 {
		return // in a system call or a cgo call: its interval names it
	}
	r := (*matrixRing)(cg.matrixBeat)
	if r == nil || r == matrixStartup {
		return
	}
	i := matrixProfFind(uintptr(unsafe.Pointer(matrixRootOf(r))))
	if i < 0 {
		return
	}
	getg().m.mallocing++
	var u unwinder
	var stk [matrixSampleMaxPCs]uintptr
	if mp.vdsoSP != 0 {
		u.initAt(mp.vdsoPC, mp.vdsoSP, 0, gp, unwindSilentErrors|unwindJumpStack)
	} else {
		u.initAt(pc, sp, lr, gp, unwindSilentErrors|unwindTrap|unwindJumpStack)
	}
	n := tracebackPCs(&u, 0, stk[:])
	getg().m.mallocing--
	matrixSampleInto(i, r, matrixSampleCPU, 0, stk[:n])
}

// matrixSampleInto writes a sample of gp's stack into slot i: at the next
// free place while there is one, then, reservoir sampling, in place of a
// sample picked at random (the k-th sample replaces one with probability
// size/k), so that a full slot holds a uniform sample of every stack
// taken.
//
//go:nowritebarrierrec
func matrixSampleInto(i int, r *matrixRing, kind uint8, weight uint64, stk []uintptr) {
	s := &matrixProf.slots[i]
	gen := s.gen.Load()
	k := s.n.Add(1) - 1
	if k >= matrixSampleSlotSamples {
		k = cheaprandn(k + 1)
		if k >= matrixSampleSlotSamples {
			return
		}
	}
	rec := (*[matrixSampleWords]uint64)(unsafe.Pointer(matrixProf.arena + uintptr(i*matrixSampleSlotSamples+int(k))*matrixSampleWords*8))
	old := atomic.Load64(&rec[0])
	ver := (old + 2) & (1<<32 - 2)
	if old&1 != 0 || !atomic.Cas64(&rec[0], old, uint64(gen)<<32|ver|1) {
		return // another thread writes it
	}
	n := min(len(stk), matrixSampleMaxPCs)
	rec[1] = uint64(uintptr(unsafe.Pointer(r)))
	rec[2] = atomic.Load64(&matrixClk.now)
	rec[3] = uint64(matrixExtSample)<<matrixExtKindShift | uint64(kind)<<matrixExtReasonShift | uint64(n)
	rec[4] = weight
	for j := 0; j < n; j++ {
		rec[matrixSampleHeaderWords+j] = uint64(stk[j])
	}
	atomic.Store64(&rec[0], uint64(gen)<<32|ver)
}

// matrixAlloc counts an allocation of size bytes by gp, a recording
// goroutine, in its ring (abi.Ring.Alloc). It is called at the top of
// mallocgc, and of the allocation functions the compiler calls directly
// for objects of a known size class, which mallocgc calls too: there,
// mallocgc counts only what it allocates itself.
//
//go:nosplit
func matrixAlloc(gp *g, size uintptr) {
	r := (*matrixRing)(gp.matrixBeat)
	if r == matrixStartup || size == 0 {
		return
	}
	old := r.alloc
	r.alloc += uint64(size)
	r.allocs++
	if k := r.alloc>>matrixSampleAllocShift - old>>matrixSampleAllocShift; k != 0 && matrixProf.used.Load() != 0 {
		matrixAllocSample(r, k<<matrixSampleAllocShift)
	}
}

// matrixAllocSample takes a sample of the calling goroutine's stack where
// it allocates, standing for weight bytes, into its dispatch's sample
// slot if the dispatch has one; the runtime's frames are left out.
//
//go:noinline
func matrixAllocSample(r *matrixRing, weight uint64) {
	i := matrixProfFind(uintptr(unsafe.Pointer(matrixRootOf(r))))
	if i < 0 {
		return
	}
	var pcs [matrixSampleMaxPCs + 8]uintptr
	n := callers(1, pcs[:])
	matrixSampleInto(i, r, matrixSampleAlloc, weight, pcs[matrixRuntimeFrames(pcs[:n]):n])
}

// matrixRuntimeFrames returns how many of the return program counters pcs
// (innermost first) are the runtime's own frames, before the first that
// is not (or that no function holds).
func matrixRuntimeFrames(pcs []uintptr) int {
	i := 0
	for i < len(pcs) {
		f := findfunc(pcs[i] - 1)
		if !f.valid() {
			break
		}
		name := funcname(f)
		if len(name) < 8 || name[:8] != "runtime." {
			break
		}
		i++
	}
	return i
}

// matrixSTW keeps the latest stops of the world while beat records: when
// each began (its stopping) and ended (the world started again), on the
// monotonic clock, so that a slow call's report can tell how long the
// world stood still during its dispatch. Only the thread that stops the
// world writes it; a reader checks seq around its copy.
var matrixSTW struct {
	seq   atomic.Uint64 // odd while a stop is being written
	n     uint64        // stops begun
	start int64         // of the stop in progress
	spans [64][2]int64
}

// matrixSTWStart notes that the world is being stopped.
//
//go:nosplit
func matrixSTWStart() { matrixSTW.start = nanotime() }

// matrixSTWEnd notes that the world starts again after the stop
// matrixSTWStart noted.
//
//go:nosplit
func matrixSTWEnd() {
	if matrixSTW.start == 0 {
		return
	}
	matrixSTW.seq.Add(1)
	matrixSTW.spans[matrixSTW.n%uint64(len(matrixSTW.spans))] = [2]int64{matrixSTW.start, nanotime()}
	matrixSTW.n++
	matrixSTW.start = 0
	matrixSTW.seq.Add(1)
}

// matrixStopped returns how long the world was stopped between from and
// to (monotonic clock), as far as the stops kept go back, and whether
// they reach back to from.
//
//go:linkname matrixStopped
func matrixStopped(from, to int64) (ns int64, whole bool) {
	for range 4 {
		s := matrixSTW.seq.Load()
		if s&1 != 0 {
			continue
		}
		n := matrixSTW.n
		ns, whole = 0, n < uint64(len(matrixSTW.spans))
		for i := uint64(0); i < min(n, uint64(len(matrixSTW.spans))); i++ {
			sp := matrixSTW.spans[(n-1-i)%uint64(len(matrixSTW.spans))]
			if sp[1] <= from {
				whole = true
				break
			}
			ns += max(min(sp[1], to)-max(sp[0], from), 0)
		}
		if matrixSTW.seq.Load() == s {
			return ns, whole
		}
	}
	return 0, false
}
