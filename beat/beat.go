// Package beat is the Matrix recorder that instrumented code reports to:
// the Go counterpart of Tencent Matrix's AppMethodBeat and LooperMonitor.
//
// A dispatch is one unit of work on an event loop: an HTTP request, a job,
// a test, a frame. While a goroutine is inside a dispatch, the enter and
// exit hooks that matrixexec inserted into every instrumented function
// append packed 64-bit records (enter bit, 20-bit function id, time in ms)
// to a ring buffer that belongs to the dispatch; every other goroutine pays
// one nil check. Buffers come from a bounded pool: when it is exhausted, a
// dispatch is still timed and observed but its calls are not recorded, and
// NotRecorded counts it.
//
// The hooks never read the system clock: a runtime thread of its own (like
// sysmon, it needs no P, so busy goroutines cannot delay it) refreshes a
// millisecond counter every half millisecond while the recorder runs.
//
// In a plain build (without matrixexec), and under go vet and gopls, the
// package compiles to a no-op: Start returns ErrNotInstrumented.
package beat

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/observe"
)

// DispatchID is the reserved function id of the DISPATCH pseudo-function.
const DispatchID = abi.DispatchID

// Kind says where a dispatch comes from.
type Kind int

// Dispatch sources.
const (
	KindCustom    = Kind(abi.KindCustom)    // Begin/Run from user code
	KindHTTP      = Kind(abi.KindHTTP)      // a request served by net/http
	KindTest      = Kind(abi.KindTest)      // a test run by the testing package
	KindBenchmark = Kind(abi.KindBenchmark) // one run of a benchmark
	KindFrame     = Kind(abi.KindFrame)     // a frame of a frame loop
	KindRPC       = Kind(abi.KindRPC)       // a call an RPC server (gRPC) handles
	KindMessage   = Kind(abi.KindMessage)   // a message a subscription's handler processes (NATS)
)

// String names the kind: "custom", "http", "test", "benchmark", "frame",
// "rpc" or "message".
func (k Kind) String() string { return abi.Kind(k).String() }

// Config sizes the recorder.
type Config struct {
	// BufferSize is the number of records per recording dispatch, rounded
	// up to a power of two. Default 65536 (512 KiB).
	BufferSize int
	// MaxBuffers bounds the dispatches recorded at once. Default
	// DefaultMaxBuffers.
	MaxBuffers int
	// RecordMemory bounds the memory of the dispatches' buffers, in
	// bytes, counted in chunks of 16 KiB: an idle buffer holds one, and a
	// recording dispatch takes one more for every 2048 records it writes
	// beyond its first, giving them back as it ends. A dispatch that
	// begins when no chunk is left is timed and reported without a call
	// tree (Stats.NotRecorded), and so is one that needs a chunk when
	// none is left, which records no more (Stats.Short). Default
	// DefaultRecordMemory.
	RecordMemory int
	// MaxChildren bounds the goroutines started inside one recorded
	// dispatch that record into it (each into a buffer of its own); the
	// others are counted (Stats.ChildrenLost). The process holds at most
	// MaxBuffers × MaxChildren such buffers, and never more than
	// MaxChildBuffers. Default 16; negative: none.
	MaxChildren int
	// ChildBufferSize is the number of records of the buffer of such a
	// goroutine, rounded up to a power of two. Default 4096 (32 KiB).
	ChildBufferSize int
	// NoPropagation leaves the requests of net/http's client and the
	// calls of gRPC's as the program made them. By default, a request or
	// call made by a goroutine that records for a dispatch, without a
	// traceparent of its own, carries one (W3C Trace Context; a copy of
	// the request with the header, the call's metadata): the dispatch's
	// trace (the caller's, or one it makes, see Dispatch.TraceID) and the
	// id of the call's own span, which its report's boundary keeps, so
	// that the called service's spans are children of the call's. Tests
	// and benchmarks (KindTest, KindBenchmark) pass nothing on.
	NoPropagation bool
	// SampleAfter is how long a dispatch runs before the stacks of its
	// goroutines are sampled while they run on a CPU, every 10 ms, so
	// that its report can tell what its calls' own time went to in code
	// without hooks (the standard library, small leaves, loops). Zero
	// means DefaultSampleAfter; negative, no sampling. Sampling needs
	// signals: on Windows there is none.
	SampleAfter time.Duration
}

// Defaults and bounds. On Linux a dispatch's buffer is memory mapped
// outside the Go heap: it is address space (BufferSize × 8 bytes), of
// which the system backs what the dispatch writes, and a buffer keeps
// 16 KiB of it once its dispatch ends; it never counts towards the
// collector's goal. The memory the buffers hold is bounded by
// RecordMemory (64 MiB by default: 4096 dispatches of up to 2048 records
// at once, or fewer that write more). Elsewhere buffers are on the heap,
// each holding BufferSize × 8 bytes of RecordMemory, 64 of them at most
// by default. The buffers of goroutines started inside dispatches are on
// the heap, at most MaxChildBuffers of ChildBufferSize records (32 MiB
// with the defaults).
const (
	DefaultBufferSize      = 1 << 16
	DefaultMaxBuffers      = defaultMaxBuffers // 4096 on Linux, 64 elsewhere
	DefaultRecordMemory    = 64 << 20
	DefaultMaxChildren     = 16
	DefaultChildBufferSize = 1 << 12
	MaxChildBuffers        = 1024
)

// ErrNotInstrumented is returned by Start in a binary that was not built
// with matrixexec.
var ErrNotInstrumented = errors.New("beat: binary not built with -toolexec=matrixexec; the recorder is a no-op")

// Observer is told about every dispatch, like Matrix's LooperObserver.
// Both calls must be quick. They run on the dispatching goroutine, except
// DispatchEnd for a dispatch ended from another goroutine (it runs there)
// or abandoned (it runs on a goroutine that began or watched a dispatch
// later; Dispatch.Abandoned reports it, and such a dispatch is not to be
// reported).
type Observer interface {
	DispatchBegin(d *Dispatch)
	DispatchEnd(d *Dispatch)
}

// recorder is the state between Start and Stop.
type recorder struct {
	cfg  Config
	size int
	// chunks is the recording memory it added to the runtime's count
	// (Config.RecordMemory in chunks).
	chunks int64

	mu      sync.Mutex
	buffers int // buffers allocated and not released
	// stopped says that Stop has taken the recorder's memory out of the
	// runtime's count: its buffers give their chunks back no more.
	stopped bool

	// parks says that an ended dispatch's buffer may stay with the
	// spare dispatch its memory becomes (Dispatch.park): the bound is at
	// least 8 buffers a P. Another P cannot take a parked buffer, and the
	// buffers parked, at most one a P, are then at most an eighth of it.
	parks bool

	// free holds the idle buffers, by the P that returned them (see
	// getBuffer): P i keeps them in free[i&shardMask].
	free [runShardN]bufShard
}

// bufShard is the idle buffers one P returned: 128 bytes, so that no two
// shards share a cache line.
type bufShard struct {
	mu sync.Mutex
	bs [][]uint64
	_  [128 - unsafe.Sizeof(sync.Mutex{}) - unsafe.Sizeof([][]uint64{})]byte
}

var (
	// cur is the running recorder, nil when stopped.
	cur atomic.Pointer[recorder]
	// lifecycle serialises Start and Stop.
	lifecycle sync.Mutex

	observers atomic.Pointer[observerList]
	obsMu     sync.Mutex

	notRec atomic.Uint64
	shortN atomic.Uint64
)

// Start starts recording with cfg. Starting a started recorder is a no-op
// (its configuration stays).
func Start(cfg Config) error {
	if !linked {
		return ErrNotInstrumented
	}
	lifecycle.Lock()
	defer lifecycle.Unlock()
	if cur.Load() != nil {
		return nil
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.MaxBuffers <= 0 {
		cfg.MaxBuffers = DefaultMaxBuffers
	}
	if cfg.RecordMemory <= 0 {
		cfg.RecordMemory = DefaultRecordMemory
	}
	switch {
	case cfg.MaxChildren == 0:
		cfg.MaxChildren = DefaultMaxChildren
	case cfg.MaxChildren < 0:
		cfg.MaxChildren = 0
	}
	if cfg.ChildBufferSize <= 0 {
		cfg.ChildBufferSize = DefaultChildBufferSize
	}
	r := &recorder{cfg: cfg, size: pow2(cfg.BufferSize), parks: cfg.MaxBuffers >= 8*int(shardMask+1)}
	r.chunks = max(int64(cfg.RecordMemory/chunkBytes), 1)
	rtChunkAdd(r.chunks)
	rtSetKids(uint64(pow2(cfg.ChildBufferSize)), uint32(min(cfg.MaxBuffers*cfg.MaxChildren, MaxChildBuffers)))
	rtSetClock(true)
	cur.Store(r)
	rtSetDispatchHooks(hookBegin, hookEnd, hookScene)
	rtSetSceneRefHook(hookSceneRef)
	rtSetTraceParentHook(hookTraceParent, hookTraceState)
	rtSetRequestHooks(hookBeginRequest, hookStatus)
	rtSetBoundHook(hookBound)
	if cfg.SampleAfter == 0 {
		cfg.SampleAfter = DefaultSampleAfter
	}
	startSampling(cfg.SampleAfter)
	rtSetActive(1)
	return nil
}

// Stop stops recording: hooks go back to a single check, the clock stops,
// and idle buffers are released (buffers of running dispatches are released
// when they end).
func Stop() {
	lifecycle.Lock()
	defer lifecycle.Unlock()
	r := cur.Load()
	if r == nil {
		return
	}
	rtSetActive(0)
	startSampling(0)
	rtSetDispatchHooks(nil, nil, nil)
	rtSetSceneRefHook(nil)
	rtSetTraceParentHook(nil, nil)
	rtSetRequestHooks(nil, nil)
	rtSetBoundHook(nil)
	cur.Store(nil)
	rtSetClock(false)
	r.mu.Lock()
	held := baseChunks(r.size) * int64(r.buffers) // by every buffer of its
	for i := range r.free {
		sh := &r.free[i]
		sh.mu.Lock()
		r.buffers -= len(sh.bs)
		for _, b := range sh.bs {
			retireBuffer(b, 0) // cleared when returned
		}
		sh.bs = nil
		sh.mu.Unlock()
	}
	// Its recording memory leaves the runtime's count, less the chunks
	// its running dispatches took beyond their buffers', which they give
	// back as they end: the buffers still out (running, or parked with a
	// spare until a P begins its next dispatch) no longer count against
	// the next recorder's bound.
	rtChunkAdd(held - r.chunks)
	r.stopped = true
	r.mu.Unlock()
}

// pow2 returns the least power of two >= n (1 for n <= 1).
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// Started reports whether the recorder is running.
func Started() bool { return cur.Load() != nil }

// Linked reports whether the binary was built with matrixexec, so that the
// recorder is bound to the instrumented runtime.
func Linked() bool { return linked }

// Now returns the recorder clock in milliseconds, the time base of the
// records: time 0 is the runtime's initialisation.
func Now() uint64 { return rtGetNow() }

// Proc returns a small number for the P (one of the runtime's GOMAXPROCS
// processors) the calling goroutine runs on, or 0 in a plain build. Two
// goroutines running at one instant on different threads have different
// numbers, but a goroutine may move to another P at any time: it is a hint
// for spreading counters that every request writes over cache lines of
// their own, never for correctness.
func Proc() int { return int(rtProcID()) }

// Nanotime reads the monotonic clock of the dispatches' bounds
// (Dispatch.StartNano), in nanoseconds from an arbitrary origin. It returns
// 0 in a plain build.
func Nanotime() int64 { return rtNanotime() }

// nowMs reads the monotonic clock in record time.
func nowMs() uint64 { return msOf(rtNanotime()) }

// msOf converts a reading of the monotonic clock (rtNanotime) to record
// time.
func msOf(ns int64) uint64 {
	_, _, epoch, _ := rtStartupInfo()
	return uint64(ns-epoch) / uint64(time.Millisecond)
}

// Epoch returns the wall-clock time of record time 0 (the zero Time in a
// plain build).
func Epoch() time.Time {
	if !linked {
		return time.Time{}
	}
	_, _, epoch, _ := rtStartupInfo()
	return time.Now().Add(-time.Duration(rtNanotime() - epoch))
}

// getBuffer takes an idle buffer, or makes one if there are fewer than
// MaxBuffers. Every recorded dispatch takes one, and returns it as it ends
// (putBuffer): the idle buffers are kept by the P that returned them, so
// that a server's Ps, each taking and returning a buffer per request, do
// not take turns on one lock. A P with none takes one another P keeps
// before it makes one. The locks are released by hand, without a deferred
// call.
//
// shard is the calling goroutine's: its P's id masked with shardMask.
func (r *recorder) getBuffer(shard uint32) []uint64 {
	if b := r.free[shard].pop(); b != nil {
		return b
	}
	return r.getBufferSlow()
}

// getBufferSlow is getBuffer when the calling P keeps no idle buffer.
//
//go:noinline
func (r *recorder) getBufferSlow() []uint64 {
	for i := range shardMask + 1 {
		if b := r.free[i].pop(); b != nil {
			return b
		}
	}
	r.mu.Lock()
	if r.stopped || r.buffers >= r.cfg.MaxBuffers || !takeChunks(baseChunks(r.size)) {
		r.mu.Unlock()
		return nil
	}
	r.buffers++
	r.mu.Unlock()
	return newBuffer(r.size)
}

// pop takes an idle buffer of the shard, or returns nil.
func (sh *bufShard) pop() []uint64 {
	sh.mu.Lock()
	n := len(sh.bs)
	if n == 0 {
		sh.mu.Unlock()
		return nil
	}
	b := sh.bs[n-1]
	sh.bs = sh.bs[:n-1]
	sh.mu.Unlock()
	return b
}

// putBuffer returns a buffer in which n records were written, its records
// cleared (clearRecords).
func (r *recorder) putBuffer(b []uint64, n uint64) {
	if cur.Load() != r || len(b) != r.size {
		retireBuffer(b, n)
		r.mu.Lock()
		r.buffers-- // stopped or resized
		if !r.stopped {
			giveChunks(baseChunks(len(b)))
		}
		r.mu.Unlock()
		return
	}
	clearRecords(b, n)
	sh := &r.free[rtProcID()&shardMask]
	sh.mu.Lock()
	sh.bs = append(sh.bs, b)
	sh.mu.Unlock()
}

// Stats are the recorder's counters.
type Stats struct {
	Dispatches uint64 // dispatches begun since the process started
	// NotRecorded counts dispatches that found no free buffer, and no
	// recording memory to make one.
	NotRecorded uint64
	// Short counts recorded dispatches that needed more recording memory
	// than was left, and stopped recording.
	Short uint64
	// Abandoned counts dispatches whose beginning frame returned or was
	// unwound by a panic before End, or whose goroutine exited before End:
	// they are never reported.
	Abandoned uint64
	// RemoteEnds counts dispatches ended from another goroutine than the
	// one that began them.
	RemoteEnds uint64
	// LateEnds counts calls of End on a dispatch that had already ended
	// or been abandoned: they do nothing.
	LateEnds uint64
	// Children counts the goroutines started inside recorded dispatches
	// that recorded into them; ChildrenLost those that did not (beyond
	// Config.MaxChildren, or every child buffer in use); ChildrenLate
	// those still running when their dispatch ended (their work after
	// the end is not in its report).
	Children, ChildrenLost, ChildrenLate uint64
	// ChildBuffers is the number of buffers of such goroutines held now:
	// at most MaxBuffers × MaxChildren, and MaxChildBuffers.
	ChildBuffers int
	Buffers      int // buffers allocated now
	BufferBytes  int // bytes of one buffer
	MaxBuffers   int
	Running      int // dispatches in progress
	// RecordBytes is the recording memory the buffers hold now, of
	// RecordMemory (Config.RecordMemory).
	RecordBytes, RecordMemory int
}

// ReadStats returns the current counters.
func ReadStats() Stats {
	s := Stats{NotRecorded: notRec.Load(), Short: shortN.Load(),
		Abandoned: abandoned.Load(), RemoteEnds: remoteEnds.Load(), LateEnds: lateEnds.Load(),
		Children: kidsN.Load(), ChildrenLost: kidsLost.Load(), ChildrenLate: kidsLate.Load(), ChildBuffers: int(rtKidsLive())}
	if r := cur.Load(); r != nil {
		r.mu.Lock()
		s.Buffers, s.BufferBytes, s.MaxBuffers = r.buffers, r.size*8, r.cfg.MaxBuffers
		s.RecordMemory = int(r.chunks * chunkBytes)
		s.RecordBytes = int(max(r.chunks-rtChunkAdd(0), 0) * chunkBytes)
		r.mu.Unlock()
	}
	for i := range shardMask + 1 {
		sh := &runShards[i]
		sh.mu.Lock()
		s.Running += sh.list.n
		s.Dispatches += sh.begun
		sh.mu.Unlock()
	}
	return s
}

// observerList is the registered observers, never changed once stored.
type observerList struct {
	list []Observer
	// begins are those whose DispatchBegin does something (their type is
	// not marked observe.NoBegin): begin calls only them.
	begins []Observer
	// kept says that one of them may keep a dispatch past the call that
	// hands it over (its type is not marked by package observe): then no
	// dispatch it sees is reused.
	kept bool
}

func storeObservers(list []Observer) {
	l := &observerList{list: list}
	for _, o := range list {
		l.kept = l.kept || !observe.Transient(o)
		if !observe.NoBegin(o) {
			l.begins = append(l.begins, o)
		}
	}
	observers.Store(l)
}

// AddObserver registers o for every later dispatch.
func AddObserver(o Observer) {
	obsMu.Lock()
	defer obsMu.Unlock()
	var list []Observer
	if p := observers.Load(); p != nil {
		list = append(list, p.list...)
	}
	list = append(list, o)
	storeObservers(list)
}

// RemoveObserver unregisters o.
func RemoveObserver(o Observer) {
	obsMu.Lock()
	defer obsMu.Unlock()
	p := observers.Load()
	if p == nil {
		return
	}
	var list []Observer
	for _, x := range p.list {
		if x != o {
			list = append(list, x)
		}
	}
	storeObservers(list)
}

// hookBegin, hookEnd and hookScene serve the dispatch sources patched into
// the standard library (the net/http server, the testing runner).
//
// The dispatch is begun by the patched function, which ends it with a
// deferred call: begin, hookBegin, the runtime's matrixDispatchBegin, and
// the patched function.
//
// Such a dispatch is reusable (see Dispatch.reusable): the patched function
// holds the pointer only to end it, and hands it to no one.
//
//go:noinline
func hookBegin(kind int, name string) unsafe.Pointer {
	return unsafe.Pointer(begin(Kind(kind), name, 3, true, "", "", ""))
}

func hookEnd(d unsafe.Pointer, scene string) {
	dd := (*Dispatch)(d)
	if scene != "" {
		dd.SetScene(scene)
	}
	if dd.stop() {
		dd.recycle()
	}
}

// hookScene names the scene from a route pattern the net/http ServeMux
// matched. Muxes match outer first, so the innermost, most specific pattern
// is the last one set; a scene the handler sets itself comes later still.
func hookScene(d unsafe.Pointer, scene string) {
	if !isKid(d) {
		(*Dispatch)(d).scene.Store(sceneRef(scene))
	}
}

// hookSceneRef names the scene from a route a router matched: the runtime
// keeps the scene of each route (matrixDispatchRoute) and hands a pointer
// to it, which never changes, so that the dispatch stores it as it is.
func hookSceneRef(d unsafe.Pointer, scene *string) {
	if !isKid(d) {
		(*Dispatch)(d).scene.Store(scene)
	}
}

// sceneRefs keeps a pointer to each scene string the hooks set lately, by
// the address of its bytes: routers and the patched standard library hand
// the same string for every request of a route, and a dispatch then
// stores a pointer already made.
var sceneRefs [64]atomic.Pointer[string]

// sceneRef returns a pointer to scene, one made before for a string with
// the same bytes at the same address if there is one.
func sceneRef(scene string) *string {
	a := uintptr(unsafe.Pointer(unsafe.StringData(scene)))
	slot := &sceneRefs[(a^a>>9^uintptr(len(scene)))%uintptr(len(sceneRefs))]
	if p := slot.Load(); p != nil && unsafe.StringData(*p) == unsafe.StringData(scene) && len(*p) == len(scene) {
		return p
	}
	p := new(string) // not &scene: that moves scene to the heap on every call
	*p = scene
	slot.Store(p)
	return p
}

// hookTraceParent records the trace context headers of the request or call
// a patched server began the dispatch d for.
func hookTraceParent(d unsafe.Pointer, tp, state, baggage string) {
	(*Dispatch)(d).SetTraceContext(tp, state, baggage)
}

// hookBeginRequest begins the dispatch of a request a patched net/http
// server serves, with the request's method, host and scheme.
func hookBeginRequest(kind int, name, method, host string, tls bool) unsafe.Pointer {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return unsafe.Pointer(begin(Kind(kind), name, 3, true, method, host, scheme))
}

// hookStatus records the status code of a response written on the
// goroutine whose runtime slot is d, when that is a dispatch's own
// goroutine (not one started inside it, nor the start-up ring).
func hookStatus(d unsafe.Pointer, code int) {
	if d != rtStartupRing() && !isKid(d) {
		(*Dispatch)(d).setOwnStatus(code)
	}
}

// Current returns the dispatch the calling goroutine is in, or nil. A
// goroutine started inside a dispatch records into it but is not in it:
// Current returns nil there (unless it began a dispatch of its own).
func Current() *Dispatch {
	goid := uint64(0)
	for p := rtCurrent(); p != nil && p != rtStartupRing() && !isKid(p); {
		d := (*Dispatch)(p)
		if goid == 0 {
			goid = rtGoid()
		}
		if d.goid != goid {
			return nil // left by a goroutine that exited inside it
		}
		if atomic.LoadUint32(&d.ring.State) == abi.RingRunning {
			d.keep()
			return d
		}
		p = d.ring.Outer
	}
	return nil
}

// Running calls f for every dispatch in progress when it looked, oldest
// first. f runs with no lock of the recorder held: it may take its time,
// and dispatches begin and end meanwhile (one may have ended by the time f
// sees it; its records are then gone, and Records returns none).
//
// Dispatches that were abandoned are finished first, and never passed to f.
func Running(f func(d *Dispatch)) {
	reap()
	for _, d := range snapshotRunning() {
		if atomic.LoadUint32(&d.ring.State) == abi.RingRunning {
			f(d)
		}
	}
}

// Run runs fn as a dispatch named name on the calling goroutine.
func Run(name string, fn func()) {
	d := Begin(KindCustom, name)
	defer d.End()
	fn()
}

// WaitReason names the runtime's wait reason r as goroutine dumps spell
// it ("sleep", "chan receive", "sync.Mutex.Lock", …): the reason in an
// extended record of a wait (abi package). It returns "" in a plain build.
func WaitReason(r uint8) string { return rtWaitReason(r) }

// Enter and Exit write an enter or exit record for function id on the
// calling goroutine, exactly as the hooks matrixexec inserts do. They are
// for tests and for code that instruments itself by hand (ids must come
// from the mapping file or be outside the range matrixexec uses).
func Enter(id uint32) { rtEnter(id) }

// Exit writes an exit record; see Enter.
func Exit(id uint32) { rtExit(id) }

// AtExit runs f when the program exits by returning from main or calling
// os.Exit (not on an unrecovered panic or a fatal signal), before the
// process ends: tracers use it to write the reports still queued. f must not
// call os.Exit. In a plain build it does nothing.
func AtExit(f func()) { rtAtExit(f) }

// Go runs f on a goroutine of the monitor's own. Under matrixexec the
// runtime counts it among its system goroutines, like the garbage
// collector's: runtime.NumGoroutine, runtime.Stack(all), goroutine profiles
// and the leak checks of test suites (go.uber.org/goleak, grpc's leakcheck)
// do not see it, so a test binary whose every test is recorded has the
// goroutines it would have without Matrix. In a plain build it is an
// ordinary goroutine. The tracers run their workers with it; Workers
// counts them.
func Go(f func()) {
	workers.Add(1)
	rtGo(func() {
		defer workers.Add(-1)
		f()
	})
}

var workers atomic.Int32

// Workers returns the number of goroutines started with Go that have not
// returned.
func Workers() int { return int(workers.Load()) }
