package beat

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/tracecontext"
)

// Dispatch is one unit of work in progress on one goroutine. It is handed
// to observers during DispatchBegin and DispatchEnd and by Running.
//
// The methods of a nil *Dispatch are no-ops, so code can call
// beat.Begin(...).End() whether or not the recorder runs.
//
// Begin a dispatch with End deferred in the same function:
//
//	d := beat.Begin(beat.KindCustom, "job")
//	defer d.End()
//
// A dispatch that is not ended that way is still safe (see End and
// Abandoned), but its call tree is lost.
type Dispatch struct {
	// The ring the runtime hooks write to. It must stay the first field:
	// the goroutine's runtime slot points at the Dispatch itself, and the
	// runtime reads it as an abi.Ring (TestRingLayout).
	ring abi.Ring

	scratch [1]uint64 // the ring of a dispatch that found no buffer
	data    []uint64  // pooled buffer, nil when not recorded or released
	rec     *recorder

	mark     uint64 // n when the dispatch began: the slot of its i(D)
	site     site   // where it was begun
	kind     Kind
	name     string
	scene    atomic.Pointer[string]
	traceIn  atomic.Pointer[traceIn]  // the request's W3C trace context, as received
	traceOut atomic.Pointer[traceOut] // the trace its spans are in, once asked for (trace)
	request  unsafe.Pointer           // *Request, read and written atomically once published
	req      Request                  // the first request set, which request points to
	reqSet   uint32                   // 1 once req is taken (atomic once published)
	status   int32                    // the response's status code, 0 until written (see setOwnStatus)
	goid     uint64
	id       uint64    // the dispatch's number in the process (ID)
	clock    *clockRef // what Start derives the start's time.Time from
	startNs  int64     // the monotonic clock (rtNanotime) at start: for Cost
	endNs    int64     // and at end; 0 while the dispatch runs
	beginMs  uint64
	endMs    uint64
	cpu      cpuMark       // an observer's process CPU reading at the start
	reported atomic.Uint32 // bits for the watchdog: which reports were made

	// relMu guards data against release while Records copies from it: a
	// released buffer may be reused by another dispatch at once.
	relMu sync.RWMutex

	prev, next *Dispatch
	shard      uint8 // the runShards list it is on while it runs

	// reusable says the dispatch was begun by a patched dispatch source
	// (hookBegin), which holds the pointer only to end it: its memory may
	// serve another dispatch once it has ended (see recycle), unless kept
	// says that someone else was handed the pointer.
	reusable bool
	// parked says that data is an idle buffer of rec, its records
	// cleared, kept with the ended dispatch for the dispatch that reuses
	// its memory (see park).
	parked bool
	kept   atomic.Bool
}

// spareDispatch returns an ended dispatch that nothing refers to any more,
// zeroed, or a new one: the dispatch sources patched into the standard
// library then allocate no dispatch per request. The runtime keeps one
// spare per P (putSpare), which a server's next request on that P finds.
func spareDispatch() *Dispatch {
	if d := (*Dispatch)(rtSpareSwap(nil)); d != nil {
		if raceEnabled {
			spareSync.Load() // after the writes of the goroutine that put it
		}
		return d
	}
	return new(Dispatch)
}

// putSpare makes d, zeroed and referred to by nothing, the spare of the
// calling goroutine's P; the spare it replaces is left to the collector.
func putSpare(d *Dispatch) {
	if raceEnabled {
		spareSync.Add(1) // see spareSync
	}
	if old := (*Dispatch)(rtSpareSwap(unsafe.Pointer(d))); old != nil && old.parked {
		// The spare replaced (or d itself, on a P without a slot) gives
		// its buffer back.
		if raceEnabled {
			spareSync.Load()
		}
		old.unpark()
	}
}

// spareSync tells the race detector what the runtime's swap of a P's spare
// (code it does not see) orders: the writes of the goroutine that puts a
// spare come before those of the goroutine that takes it, which runs on
// the same P afterwards. Only race-enabled builds touch it.
var spareSync atomic.Uint64

// keep marks the dispatch as handed to code that may use it after it
// ends: its memory is never reused.
func (d *Dispatch) keep() {
	if d.reusable && !d.kept.Load() {
		d.kept.Store(true)
	}
}

// recycle makes an ended dispatch a spare (putSpare) if nothing can use
// it any more: it is reusable and kept by no one (Current, Running and
// observers that may keep a dispatch mark it), it was ended by End on its
// own goroutine, which records into it no longer (its buffer is released,
// so no reader copies from it), and it started no goroutine (whose ring
// would refer to it). stop reports the second condition.
//
// A parked buffer stays with the spare, for the next dispatch the P
// begins; a dispatch that is not recycled returns it to the pool.
func (d *Dispatch) recycle() {
	if !d.reusable || d.kept.Load() || atomic.LoadUint32(&d.ring.Kids) != 0 || d.data != nil && !d.parked {
		if d.parked {
			d.unpark()
		}
		return
	}
	data, rec, parked := d.data, d.rec, d.parked
	*d = Dispatch{}
	if parked {
		d.data, d.rec, d.parked = data, rec, true
	}
	putSpare(d)
}

// park keeps the buffer of a dispatch that is about to be recycled (see
// finish) with it, its records cleared as putBuffer clears them: the next
// dispatch begun on the P takes it with the spare, and neither takes the
// lock of a free list. It reports whether it kept it: the recorder parks
// buffers only while it runs, and only when its bound leaves room for an
// idle buffer on every P (recorder.parks), since a P cannot take the
// buffer parked with another P's spare.
func (d *Dispatch) park() bool {
	r := d.rec
	if !r.parks || cur.Load() != r || len(d.data) != r.size {
		return false
	}
	clearRecords(d.data, atomic.LoadUint64(&d.ring.N))
	d.giveBackChunks(d.data)
	d.releaseKids()
	d.parked = true
	return true
}

// giveBackChunks gives back the chunks of recording memory the dispatch
// took for its buffer data beyond the buffer's own, once its goroutine no
// longer records into it, and counts it if it ran short of them.
func (d *Dispatch) giveBackChunks(data []uint64) {
	giveChunks(grownChunks(len(data), d.ring.Lim))
	d.ring.Lim = firstLim(len(data))
	if atomic.LoadUint32(&d.ring.Short) != 0 {
		shortN.Add(1)
	}
}

// unpark returns a parked buffer to its recorder's pool.
func (d *Dispatch) unpark() {
	d.rec.putBuffer(d.data, 0)
	d.data, d.parked = nil, false
}

// Begin starts a dispatch on the calling goroutine and returns it; it
// returns nil when the recorder is not running. End it in the function
// that began it, with defer.
//
// A Begin in a function called inside a running dispatch of the same
// goroutine starts a dispatch of its own, nested in the outer one until it
// ends. A dispatch whose beginning function has returned (or was unwound by
// a recovered panic) without calling End is ended as abandoned: it is
// counted (Stats.Abandoned), its buffer is returned, and it is never
// reported. The recorder tells the two apart by the frame that calls Begin
// and the functions inlined into it (see site.inside): a Begin in a
// function called from the one that began the running dispatch, inlined
// or not, nests in it; a second Begin in the very function that began it
// abandons it, as a Begin in the next call of a loop would.
//
//go:noinline
func Begin(kind Kind, name string) *Dispatch {
	// begin, Begin, and Begin's caller, which begins the dispatch.
	return begin(kind, name, 2, false, "", "", "")
}

// begin starts a dispatch whose beginning frame is skip frames above it;
// reusable is the dispatch's (see Dispatch.reusable). A method other
// than "" is that of the request the dispatch serves, with its host and
// scheme (see setRequest).
//
//go:noinline
func begin(kind Kind, name string, skip int, reusable bool, method, host, scheme string) *Dispatch {
	r := cur.Load()
	if r == nil {
		return nil
	}
	if reapDue() {
		reap()
	}
	var d *Dispatch
	var data []uint64
	if reusable {
		d = spareDispatch()
		if d.parked {
			if d.rec == r {
				data, d.parked = d.data, false // d.data is set below
			} else {
				d.unpark() // a buffer of a recorder since stopped
			}
		}
	} else {
		d = new(Dispatch)
	}
	goid := rtGoid()
	d.kind, d.name, d.rec, d.goid, d.reusable = kind, name, r, goid, reusable
	if method != "" {
		// No other goroutine can see the dispatch yet: the request is
		// written plainly, where setRequest takes a compare-and-swap and
		// an atomic store.
		d.req = Request{Method: method, Host: host, Scheme: scheme}
		d.reqSet = 1
		d.request = unsafe.Pointer(&d.req)
	}
	// The site is found in place: it is 88 bytes.
	at := &d.site
	at.depth, at.entry, at.n = rtFrame(skip, at.pcs[:])
	settle(goid, at)
	d.ring.Frame = at.depth
	d.ring.Alloc, d.ring.Allocs = 0, 0
	shard := rtProcID() & shardMask
	if data == nil {
		data = r.getBuffer(shard)
	}
	d.data = data
	if d.data != nil {
		d.ring.Buf, d.ring.Mask = unsafe.Pointer(&d.data[0]), uint64(len(d.data)-1)
		d.ring.Lim = firstLim(len(d.data))
		d.ring.MaxKids = uint32(r.cfg.MaxChildren)
	} else {
		notRec.Add(1)
		d.ring.Buf, d.ring.Mask, d.ring.Lim = unsafe.Pointer(&d.scratch[0]), 0, math.MaxUint64
	}
	// One reading of the monotonic clock gives the dispatch's record time
	// (the recorder's clock, moved forward to it) and its duration.
	ns, ms := rtBoundNow()
	d.clock, d.startNs, d.beginMs = currentClockRef(ns), ns, ms
	atomic.StoreUint64(&d.ring.Begin, ms) // when the runtime may sample it (abi.SampleSlots)
	d.ring.Outer = rtSwapRing(unsafe.Pointer(d))
	rtEnter(DispatchID)

	d.shard = uint8(shard)
	sh := &runShards[shard]
	sh.mu.Lock()
	d.id = sh.nextID()
	sh.list.push(d)
	sh.mu.Unlock()
	if p := observers.Load(); p != nil {
		for _, o := range p.begins {
			o.DispatchBegin(d)
		}
		if p.kept {
			d.keep()
		}
	}
	return d
}

// site is where a dispatch was begun: the frame that called Begin, and the
// calls of the functions inlined into that frame which lead to the Begin.
type site struct {
	depth uintptr // the frame's depth (abi.Ring.Frame); 0 if unknown
	entry uintptr // the entry of the frame's function
	// pcs[:n] are the call PCs of the frame's logical frames, innermost
	// (the call of Begin) first; n is -1 when there were more than pcs
	// holds.
	n   int
	pcs [8]uintptr
}

// inside reports whether a Begin at s is made inside the frame that began
// a dispatch at o, when both are made from frames at the same depth: s is
// then in the same physical frame as o, in a function inlined into the
// logical frame that began o (a function literal called in place, say).
// Inlining does not change this: s's logical frames are o's, down to o's
// beginning function, plus at least one more. A Begin in the same logical
// frame as o (the next turn of a loop, or the next call of the function
// from the same place) is not inside it.
func (s *site) inside(o *site) bool {
	if s.entry != o.entry || o.n <= 0 || s.n <= o.n {
		return false
	}
	// Counted from the outermost: the calls of the functions inlined on
	// the way to o's beginning function are the same.
	for i := 1; i < o.n; i++ {
		if s.pcs[s.n-i] != o.pcs[o.n-i] {
			return false
		}
	}
	return true
}

// settle looks at the dispatches the calling goroutine's slot holds before
// a new one begins at site at: one ended from another goroutine is left,
// and one whose beginning frame is gone is abandoned. What remains is a
// running dispatch the new one nests in, or nothing.
func settle(goid uint64, at *site) {
	frame := at.depth
	for {
		p := rtCurrent()
		if p == nil || p == rtStartupRing() || isKid(p) {
			return
		}
		d := (*Dispatch)(p)
		switch {
		case d.goid != goid:
			// The slot of a goroutine that exited inside a dispatch, on
			// a g the runtime reused.
			rtSwapRing(nil)
			d.abandon(true)
			return
		case atomic.LoadUint32(&d.ring.State) != abi.RingRunning:
			// Ended by another goroutine: this one stops recording
			// into it, and its buffer can go back to the pool.
			rtSwapRing(d.ring.Outer)
			d.release()
		case frame != 0 && d.ring.Frame != 0 && (frame < d.ring.Frame || frame == d.ring.Frame && !at.inside(&d.site)):
			// Begun in a frame deeper than this one, or in this frame's
			// own logical frame or a sibling's, which has returned
			// without End: the new Begin cannot be inside it.
			rtSwapRing(d.ring.Outer)
			d.abandon(true)
		default:
			return
		}
	}
}

// End ends the dispatch. Call it on the goroutine that began it, in the
// function that began it.
//
// End from another goroutine ends the dispatch too: it is reported as it
// was recorded up to then, it leaves the running list, and the goroutine
// that began it stops recording into it at its next Begin or when it
// exits; its buffer is returned then. End of a dispatch that has ended
// already, or was abandoned, does nothing and is counted
// (Stats.LateEnds).
func (d *Dispatch) End() {
	if d != nil {
		d.stop()
	}
}

// stop is End; it reports whether it ended the dispatch on the dispatch's
// own goroutine, which then records into it no longer.
func (d *Dispatch) stop() (own bool) {
	if !atomic.CompareAndSwapUint32(&d.ring.State, abi.RingRunning, abi.RingEnded) {
		lateEnds.Add(1)
		return false
	}
	// Mostly the slot holds d itself: the chain is walked only otherwise.
	cur := rtCurrent()
	own = rtGoid() == d.goid && (cur == unsafe.Pointer(d) || d.onSlot())
	if own {
		// Dispatches begun inside d and never ended are abandoned.
		for p := cur; p != unsafe.Pointer(d); p = rtCurrent() {
			in := (*Dispatch)(p)
			rtSwapRing(in.ring.Outer)
			if atomic.CompareAndSwapUint32(&in.ring.State, abi.RingRunning, abi.RingAbandoned) {
				in.finish(true, false)
			} else {
				in.release()
			}
		}
	}
	// The clock goroutine may lag on a loaded machine: the dispatch's own
	// bounds are read from the monotonic clock, which moves the
	// recorder's forward.
	ns, ms := rtBoundNow()
	if own {
		rtExit(DispatchID)
		rtSwapRing(d.ring.Outer)
		ms = max(ms, rtGetNow()) // no earlier than the exit record
	} else {
		remoteEnds.Add(1)
	}
	d.endNs = ns
	d.endMs = max(ms, d.beginMs+uint64(time.Duration(ns-d.startNs)/time.Millisecond))
	d.finish(own, own)
	return own
}

// onSlot reports whether d is on the calling goroutine's chain of
// dispatches.
func (d *Dispatch) onSlot() bool {
	for p := rtCurrent(); p != nil && p != rtStartupRing(); p = (*Dispatch)(p).ring.Outer {
		if p == unsafe.Pointer(d) {
			return true
		}
	}
	return false
}

// finish takes an ended or abandoned dispatch out of the running list and
// tells the observers. With free, no goroutine records into it any more
// and its buffer goes back to the pool; otherwise it waits for that among
// the detached dispatches (see reap). sole says that the calling goroutine
// ended the dispatch with End on its own goroutine: no other goroutine
// releases it (see release).
func (d *Dispatch) finish(free, sole bool) {
	sh := &runShards[d.shard]
	sh.mu.Lock()
	sh.list.remove(d)
	sh.mu.Unlock()
	d.countKids()
	if p := observers.Load(); p != nil {
		for _, o := range p.list {
			o.DispatchEnd(d)
		}
		if p.kept {
			d.keep()
		}
	}
	// Its observers have read its samples, if it had any.
	rtProfRelease(unsafe.Pointer(d))
	if free {
		if sole && d.reusable && !d.kept.Load() {
			// Nothing but the recorder has the dispatch: its observers
			// copied its records above, and no one else can be copying
			// them now, nor releasing it. Its buffer stays with it
			// for its next use if it can (park).
			if d.data == nil || !d.park() {
				d.releaseData(d.data)
				d.data = nil
			}
			return
		}
		d.release()
		return
	}
	detachedMu.Lock()
	detached = append(detached, d)
	detachedMu.Unlock()
}

// abandon ends a running dispatch whose beginning frame is gone; free says
// whether its goroutine has stopped recording into it.
func (d *Dispatch) abandon(free bool) {
	if !atomic.CompareAndSwapUint32(&d.ring.State, abi.RingRunning, abi.RingAbandoned) {
		if free {
			d.release()
		}
		return
	}
	abandoned.Add(1)
	if d.endNs == 0 {
		d.endAt(rtNanotime())
	}
	d.finish(free, false)
}

// endAt sets the end of an abandoned dispatch: the monotonic clock's
// reading ns, and no earlier than its beginning in record time.
func (d *Dispatch) endAt(ns int64) {
	d.endNs = ns
	d.endMs = max(msOf(ns), d.beginMs)
}

// release returns the dispatch's buffer to the pool, once: two goroutines
// may release a dispatch ended by another than its own (its own goroutine
// and reap), and readers may be copying its records.
func (d *Dispatch) release() {
	d.relMu.Lock()
	data := d.data
	d.data = nil
	d.relMu.Unlock()
	d.releaseData(data)
}

// releaseData returns data, the dispatch's buffer taken from it, to the
// pool, and lets the dispatch's child rings go.
func (d *Dispatch) releaseData(data []uint64) {
	if data != nil {
		d.giveBackChunks(data)
		d.rec.putBuffer(data, atomic.LoadUint64(&d.ring.N))
		d.releaseKids()
	}
}

var (
	lateEnds   atomic.Uint64
	remoteEnds atomic.Uint64
	abandoned  atomic.Uint64

	// detached are dispatches ended from another goroutine than their
	// own, whose goroutine may still record into them.
	detachedMu    sync.Mutex
	detached      []*Dispatch
	detachedCheck atomic.Int64 // when reap last looked for them, in record time (ms)

	// reapedAbandoned is the runtime's count of abandoned rings that reap
	// has handled.
	reapedAbandoned atomic.Uint32
)

// reapDue reports whether reap has work: the runtime abandoned a
// dispatch since reap last looked, or reap last looked at the detached
// dispatches reapEvery ago or more (in record time: a load, no clock
// read). Every dispatch asks as it begins; the question is inlined there,
// and reap stays out of the cache lines a server runs per request.
func reapDue() bool {
	if rtAbandoned() != reapedAbandoned.Load() {
		return true
	}
	last := detachedCheck.Load()
	return last == 0 || int64(rtGetNow())-last >= reapEvery
}

// reapEvery is how often reap looks at the detached dispatches, in ms.
const reapEvery = 100

// reap finishes the dispatches that the runtime abandoned (a recovered
// panic unwound their beginning frames) and returns the buffers of
// detached dispatches that no goroutine records into any more.
//
//go:noinline
func reap() {
	if n := rtAbandoned(); n != reapedAbandoned.Load() {
		reapedAbandoned.Store(n)
		var gone []*Dispatch
		for _, d := range snapshotRunning() {
			if atomic.LoadUint32(&d.ring.State) == abi.RingAbandoned {
				gone = append(gone, d)
			}
		}
		for _, d := range gone {
			abandoned.Add(1)
			d.endAt(rtNanotime())
			d.finish(true, false)
		}
	}
	now := int64(rtGetNow()) // the recorder's clock, in ms: no clock read
	if last := detachedCheck.Load(); last != 0 && now-last < reapEvery || !detachedCheck.CompareAndSwap(last, now) {
		return
	}
	detachedMu.Lock()
	var still, free []*Dispatch
	for _, d := range detached {
		if rtInUse(unsafe.Pointer(d)) {
			still = append(still, d)
		} else {
			free = append(free, d)
		}
	}
	detached = still
	detachedMu.Unlock()
	for _, d := range free {
		d.release()
	}
}

// Abandoned reports whether the dispatch ended without End: its beginning
// frame returned or was unwound by a panic first. Observers see abandoned
// dispatches in DispatchEnd and must not report them.
func (d *Dispatch) Abandoned() bool {
	return d != nil && atomic.LoadUint32(&d.ring.State) == abi.RingAbandoned
}

// SetScene names the scene of the dispatch (an HTTP route pattern, a
// screen, a job type).
func (d *Dispatch) SetScene(scene string) {
	if d != nil {
		// Not &scene: that would move scene to the heap on every call,
		// even with d nil, or from hookEnd with no scene to set.
		p := new(string)
		*p = scene
		d.scene.Store(p)
	}
}

// Scene returns the scene, or "".
func (d *Dispatch) Scene() string {
	if d == nil {
		return ""
	}
	if p := d.scene.Load(); p != nil {
		return *p
	}
	return ""
}

// SetTraceParent records the W3C trace context (the traceparent header)
// of the request the dispatch serves, so that exported reports join the
// caller's distributed trace. It is stored as received and validated when
// a report is built. An empty tp does nothing. SetTraceContext records the
// tracestate and baggage headers with it.
func (d *Dispatch) SetTraceParent(tp string) {
	d.SetTraceContext(tp, "", "")
}

// SetTraceContext records the W3C trace context of the request the
// dispatch serves: its traceparent, tracestate and baggage headers (each
// with its lines joined by commas), as received. The dispatch's client
// calls that pass its trace context on send the tracestate with it when
// the trace is the caller's (a valid traceparent), and the baggage in any
// case. When all three are empty it does nothing.
func (d *Dispatch) SetTraceContext(parent, state, baggage string) {
	if d != nil && (parent != "" || state != "" || baggage != "") {
		d.traceIn.Store(&traceIn{parent: parent, state: state, baggage: baggage})
	}
}

// traceIn is the W3C trace context a dispatch's request brought.
type traceIn struct {
	parent, state, baggage string
}

// Request is what a dispatch keeps of the HTTP request it serves: never
// its path or query (the route pattern is the scene).
type Request struct {
	// Method is the request's method ("GET").
	Method string
	// Host is the host the request was sent to, as its Host header (or
	// URL) says, with the port when it has one.
	Host string
	// Scheme is "http" or "https".
	Scheme string
}

// Bounds of what SetRequest keeps of the client-controlled method and host.
const (
	maxMethodLen = 32
	maxHostLen   = 261 // a DNS name, a colon and a port
)

// SetRequest records the request the dispatch serves. The method and the
// host come from the client: a method longer than 32 bytes is read back
// (Request) as "_OTHER", and a host longer than a DNS name with a port,
// or with bytes a host does not have, as "".
func (d *Dispatch) SetRequest(r Request) {
	if d == nil {
		return
	}
	d.setRequest(r.Method, r.Host, r.Scheme)
}

// setRequest is SetRequest with the request's fields: the request is
// built once, where it is kept. A dispatch of a patched net/http server
// has its request from the start (begin).
func (d *Dispatch) setRequest(method, host, scheme string) {
	// The bounds are applied where the request is read (Request), for the
	// few dispatches that are reported, rather than here for every
	// request: a host's check is a load per byte.
	if atomic.CompareAndSwapUint32(&d.reqSet, 0, 1) {
		// The first request is kept in the dispatch itself (a server
		// sets one per dispatch): written before it is published.
		d.req = Request{Method: method, Host: host, Scheme: scheme}
		atomic.StorePointer(&d.request, unsafe.Pointer(&d.req))
		return
	}
	atomic.StorePointer(&d.request, unsafe.Pointer(&Request{Method: method, Host: host, Scheme: scheme}))
}

// validHost reports whether host has only bytes a host (a DNS name or an
// IP address, with a port) may have: none of the controls, spaces,
// non-ASCII bytes and "<>\^`{|} that a client could send.
func validHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if !hostByte[host[i]] {
			return false
		}
	}
	return true
}

// hostByte are the bytes validHost accepts: printable ASCII but for
// "<>\^`{|}. One load per byte: every request's host is checked.
var hostByte = func() (ok [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		ok[c] = !strings.ContainsRune("\"<>\\^`{|}", c)
	}
	return ok
}()

// Request returns the request set by SetRequest, and whether there is
// one. It may be called from any goroutine while the dispatch runs.
func (d *Dispatch) Request() (Request, bool) {
	if d == nil {
		return Request{}, false
	}
	if p := (*Request)(atomic.LoadPointer(&d.request)); p != nil {
		r := *p
		if len(r.Method) > maxMethodLen {
			r.Method = "_OTHER"
		}
		if len(r.Host) > maxHostLen || !validHost(r.Host) {
			r.Host = ""
		}
		return r, true
	}
	return Request{}, false
}

// SetStatus records the status code of the dispatch's response; the first
// code of at least 200 is kept (a server sends one final status).
func (d *Dispatch) SetStatus(code int) {
	if d != nil && code >= 200 && code <= 999 {
		atomic.CompareAndSwapInt32(&d.status, 0, int32(code))
	}
}

// setOwnStatus is SetStatus on the dispatch's own goroutine, where a
// patched net/http server writes every response's header (hookStatus).
// That goroutine writes the first code with a plain store, outside
// race-enabled builds: a compare-and-swap is a locked instruction, which
// waits there for all of the handler's stores to drain (half a percent of
// a loaded server's CPU). The status is one aligned word, which readers
// load atomically: they see 0 or the code. SetStatus from another
// goroutine at the same instant may then be overwritten, where otherwise
// the first of the two would be kept.
func (d *Dispatch) setOwnStatus(code int) {
	if code < 200 || code > 999 || atomic.LoadInt32(&d.status) != 0 {
		return
	}
	if raceEnabled {
		atomic.CompareAndSwapInt32(&d.status, 0, int32(code))
		return
	}
	d.status = int32(code)
}

// Status returns the status code set by SetStatus, or 0.
func (d *Dispatch) Status() int {
	if d == nil {
		return 0
	}
	return int(atomic.LoadInt32(&d.status))
}

// TraceParent returns the traceparent set by SetTraceParent or
// SetTraceContext, or "". It may be called from any goroutine while the
// dispatch runs.
func (d *Dispatch) TraceParent() string { return d.received().parent }

// TraceState returns the tracestate set by SetTraceContext, or "".
func (d *Dispatch) TraceState() string { return d.received().state }

// Baggage returns the baggage set by SetTraceContext, or "".
func (d *Dispatch) Baggage() string { return d.received().baggage }

// received returns the trace context the dispatch's request brought.
func (d *Dispatch) received() traceIn {
	if d == nil {
		return traceIn{}
	}
	if p := d.traceIn.Load(); p != nil {
		return *p
	}
	return traceIn{}
}

// traceOut is the trace a dispatch's spans are in and its flags.
type traceOut struct {
	id    [16]byte
	flags byte
	own   bool // made by the dispatch, not the caller's
}

// trace returns the trace the dispatch's spans are in: the caller's, when
// the request brought a valid traceparent (SetTraceParent, which a
// patched server calls before the handler runs), else one of its own, a
// random id, sampled. It is fixed by the first call, from any goroutine.
func (d *Dispatch) trace() *traceOut {
	if t := d.traceOut.Load(); t != nil {
		return t
	}
	t := &traceOut{flags: tracecontext.FlagSampled}
	if c, ok := tracecontext.Parse(d.TraceParent()); ok {
		t.id, t.flags = c.TraceID, c.Flags
	} else {
		binary.LittleEndian.PutUint64(t.id[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(t.id[8:], rand.Uint64()|1<<63)
		t.own = true
	}
	if !d.traceOut.CompareAndSwap(nil, t) {
		return d.traceOut.Load()
	}
	return t
}

// TraceID returns the id of the trace the dispatch's spans are in, in 32
// lower-case hex digits, when the dispatch made it itself (its request
// brought no valid traceparent); "" when the trace is the caller's, which
// TraceParent names. The id is made by the first call of TraceID, or when
// a client call of the dispatch first passes its trace context on (see
// Config.NoPropagation), whichever comes first: the tracers call it for
// every report, so that a LAG report, the final report and the services
// the dispatch called all name the same trace. It may be called from any
// goroutine while the dispatch runs, and by an observer when it ends.
func (d *Dispatch) TraceID() string {
	if d == nil {
		return ""
	}
	if t := d.trace(); t.own {
		return hex.EncodeToString(t.id[:])
	}
	return ""
}

// Name returns the name the dispatch was begun with.
func (d *Dispatch) Name() string { return d.name }

// Kind returns where the dispatch comes from.
func (d *Dispatch) Kind() Kind { return d.kind }

// Goid returns the id of the dispatching goroutine.
func (d *Dispatch) Goid() uint64 { return d.goid }

// ID returns the dispatch's number in the process, unique across Stop and
// Start of the recorder and whether recorded or not: no two dispatches of
// a process share one. Each P numbers the dispatches begun on it from
// blocks of 64 it takes in turn, so IDs grow with time on one P but not
// across Ps. The reports of one dispatch (its LAG, ANR and final report)
// carry it as "dispatchId". A nil dispatch has 0.
func (d *Dispatch) ID() uint64 {
	if d == nil {
		return 0
	}
	return d.id
}

// Start returns when the dispatch began, with a monotonic clock reading
// (see clockRef).
func (d *Dispatch) Start() time.Time {
	return d.clock.t.Add(time.Duration(d.startNs - d.clock.ns))
}

// clockRef pairs a time.Time, taken with time.Now, with the reading of
// the monotonic clock (rtNanotime) at the same instant, so that a dispatch
// reads the clock once as it begins, and its time.Time is derived from
// that reading when asked for (Start): time.Now reads the clock twice more
// (the wall clock and the monotonic one), which cost a server 80
// instructions per request. The monotonic part of the derived time is the
// dispatch's own reading, to within the time between two clock reads
// (tens of nanoseconds), never earlier; the wall part follows the wall
// clock as of the reference, which is taken anew every clockRefAge: a
// step of the wall clock shows in Start that much later, and its slewing
// (at most 0.05 %) shifts Start by 50 µs at most.
type clockRef struct {
	t  time.Time
	ns int64
}

// clockRefAge is how long a clockRef serves.
const clockRefAge = int64(100 * time.Millisecond)

// clockRefs is the current clockRef.
var clockRefs atomic.Pointer[clockRef]

// currentClockRef returns a clockRef for a dispatch that began at ns, the
// monotonic clock's reading.
func currentClockRef(ns int64) *clockRef {
	if c := clockRefs.Load(); c != nil && ns-c.ns < clockRefAge {
		return c
	}
	c := newClockRef()
	clockRefs.Store(c)
	return c
}

// newClockRef takes a clockRef: the monotonic clock is read before
// time.Now, so that times derived from it are never earlier than the
// instants they stand for (a preempted attempt is taken again).
func newClockRef() *clockRef {
	var c clockRef
	for range 3 {
		c.ns = rtNanotime()
		c.t = time.Now()
		if rtNanotime()-c.ns < int64(time.Microsecond) {
			break
		}
	}
	return &c
}

// StartNano returns when the dispatch began on the monotonic clock that
// Nanotime reads, so that an observer timing dispatches needs no
// time.Time: Start is the same instant.
func (d *Dispatch) StartNano() int64 { return d.startNs }

// Cost returns the wall time of an ended dispatch (in DispatchEnd), or the
// time since it began while it runs.
func (d *Dispatch) Cost() time.Duration {
	if d.endNs == 0 {
		return time.Duration(rtNanotime() - d.startNs)
	}
	return time.Duration(d.endNs - d.startNs)
}

// BeginMs and EndMs are the dispatch's bounds in record time.
func (d *Dispatch) BeginMs() uint64 { return d.beginMs }

// EndMs is the end of an ended dispatch in record time, 0 while it runs.
func (d *Dispatch) EndMs() uint64 { return d.endMs }

// cpuMark is a process CPU reading kept with a dispatch (SetCPUMark).
type cpuMark struct {
	ns, at int64
	set    bool
}

// SetCPUMark keeps with the dispatch a reading of the process's CPU time,
// ns, taken at the instant at on the monotonic clock of StartNano: an
// observer's reading at DispatchBegin, which its DispatchEnd then finds in
// the dispatch itself, with no table of its own keyed by goroutine and
// nothing to free. Call it in DispatchBegin only.
func (d *Dispatch) SetCPUMark(ns int64, at time.Duration) {
	d.cpu = cpuMark{ns: ns, at: int64(at), set: true}
}

// CPUMark returns the reading kept by SetCPUMark, if any.
func (d *Dispatch) CPUMark() (ns int64, at time.Duration, ok bool) {
	return d.cpu.ns, time.Duration(d.cpu.at), d.cpu.set
}

// Allocated returns the bytes and the objects the dispatch's goroutine and
// the goroutines started inside it that record into it have allocated on
// the heap since it began (the sizes asked for, before rounding to a size
// class), exactly: the runtime counts every allocation. For a goroutine
// still running, what it has allocated so far; those past the bound of
// goroutines recorded (Config.MaxChildren) are not counted.
func (d *Dispatch) Allocated() (bytes, objects uint64) {
	bytes, objects = atomic.LoadUint64(&d.ring.Alloc), atomic.LoadUint64(&d.ring.Allocs)
	if atomic.LoadUint32(&d.ring.Kids) == 0 {
		return bytes, objects
	}
	for _, c := range d.kids() {
		if c != nil {
			bytes += atomic.LoadUint64(&c.Alloc)
			objects += atomic.LoadUint64(&c.Allocs)
		}
	}
	return bytes, objects
}

// Stopped returns how long the world was stopped (by the garbage
// collector, or a program's runtime.GC, ReadMemStats, …) while the
// dispatch ran, to its end or until now: every goroutine of the program
// that was running or ready to run stood still then. ok is false when the
// runtime no longer keeps every stop since the dispatch began (it keeps
// the latest 64).
func (d *Dispatch) Stopped() (stopped time.Duration, ok bool) {
	end := d.endNs
	if end == 0 {
		end = rtNanotime()
	}
	ns, ok := rtStopped(d.startNs, end)
	return time.Duration(ns), ok
}

// Recorded reports whether the dispatch has a buffer.
func (d *Dispatch) Recorded() bool { return d.data != nil }

// Short reports whether the dispatch needed more recording memory than
// was left (Config.RecordMemory) and stopped recording: its records are
// then not a call tree, and Records returns none.
func (d *Dispatch) Short() bool { return atomic.LoadUint32(&d.ring.Short) != 0 }

// Records appends the records of the dispatch, from its DISPATCH enter to
// the newest, to dst. It returns dst unchanged when the dispatch is not
// recorded or its oldest records were overwritten (the buffer wrapped):
// an overwritten mark yields nothing, never garbage.
//
// The records of goroutines started inside the dispatch come in the place
// the dispatch started them (see abi.ExtGo): between the start record and
// the end record, which then holds the time the goroutine exited, or the
// time of the copy for one still running. A goroutine whose buffer wrapped
// contributes no records.
//
// On the dispatching goroutine the copy is exact. From another goroutine
// (a watchdog looking at a running dispatch) it is a consistent prefix:
// records written during the copy may be left out, and when the writer
// could be overwriting a record of the copy, the copy is empty.
func (d *Dispatch) Records(dst []uint64) []uint64 {
	d.relMu.RLock()
	defer d.relMu.RUnlock()
	data := d.data
	if data == nil || atomic.LoadUint32(&d.ring.Short) != 0 {
		return dst
	}
	size := uint64(len(data))
	n := atomic.LoadUint64(&d.ring.N)
	if n-d.mark > size {
		return dst
	}
	start := len(dst)
	for i := d.mark; i < n; i++ {
		dst = append(dst, atomic.LoadUint64(&data[i&d.ring.Mask]))
	}
	// While copying from another goroutine than the writer, the writer
	// may have overwritten records: by the time it counted record n2-1 it
	// had written the slots of records up to n2-1, and it may be writing
	// the slot of record n2 (which held record n2-size) now. Unless every
	// record copied is newer than that, the copy may be torn. The writer
	// itself sees no such write.
	limit := size - 1
	if rtGoid() == d.goid {
		limit = size
	}
	if n2 := atomic.LoadUint64(&d.ring.N); n2-d.mark > limit {
		return dst[:start]
	}
	ss, _ := d.samples()
	if atomic.LoadUint32(&d.ring.Kids) == 0 {
		if len(ss) == 0 {
			return dst
		}
		own := withSamples(append([]uint64(nil), dst[start:]...), samplesOf(ss, unsafe.Pointer(d)))
		return append(dst[:start], own...)
	}
	return d.splice(dst, start, ss)
}

// Reported atomically marks flag as reported and says whether it was the
// first time (for watchdogs that report each stuck dispatch once).
func (d *Dispatch) Reported(flag uint32) bool {
	for {
		old := d.reported.Load()
		if old&flag != 0 {
			return false
		}
		if d.reported.CompareAndSwap(old, old|flag) {
			return true
		}
	}
}

// runShards hold the running dispatches, spread over the Ps by the P a
// dispatch began on (rtProcID): a server begins and ends a dispatch for
// every request on every P, and with one list under one lock the Ps took
// turns writing the lock's cache line, twice a request. A shard takes 128
// bytes, so that no two shards share a cache line.
var runShards [runShardN]runShard

type runShard struct {
	mu   sync.Mutex
	list dispatchList
	// ids[0] is the next ID the shard gives, ids[1] the end of the block
	// of IDs it took (nextID); begun counts the dispatches begun on it.
	ids   [2]uint64
	begun uint64
	_     [128 - unsafe.Sizeof(sync.Mutex{}) - unsafe.Sizeof(dispatchList{}) - 3*8]byte
}

// idBlock is how many IDs a shard takes from dispatchIDs at a time.
const idBlock = 64

// dispatchIDs is the end of the IDs given to the shards so far.
var dispatchIDs atomic.Uint64

// nextID returns a new dispatch ID and counts the dispatch as begun. A
// shard takes IDs from dispatchIDs in blocks, so that the Ps of a server
// that begins a dispatch per request do not take turns writing one
// counter's cache line: IDs are unique in the process, and those of one
// shard increase. Call it with sh.mu held.
func (sh *runShard) nextID() uint64 {
	sh.begun++
	if sh.ids[0] == sh.ids[1] {
		end := dispatchIDs.Add(idBlock)
		sh.ids = [2]uint64{end - idBlock + 1, end + 1}
	}
	id := sh.ids[0]
	sh.ids[0]++
	return id
}

// runShardN bounds the number of shards.
const runShardN = 64

// shardMask selects the shard of the state a P writes (runShards, the
// recorder's idle buffers): P i has shard i&shardMask. The shards number
// the Ps the program started with, to a power of two, at most runShardN;
// a P added later shares a shard with another.
var shardMask = uint32(min(pow2(runtime.GOMAXPROCS(0)), runShardN) - 1)

// snapshotRunning returns the running dispatches, oldest first, each kept
// (see keep) so that none is recycled while the caller looks at it. It
// holds one shard's lock at a time, and allocates with none held: a
// server's Ps begin and end dispatches on the other shards meanwhile, and
// a holder preempted or assisting the collector does not stall them all.
func snapshotRunning() []*Dispatch {
	var all []*Dispatch
	for i := range shardMask + 1 {
		sh := &runShards[i]
		for {
			sh.mu.Lock()
			n := sh.list.n
			if len(all)+n > cap(all) {
				sh.mu.Unlock()
				all = slices.Grow(all, n+n/2+8)
				continue
			}
			for d := sh.list.head; d != nil; d = d.next {
				// Under the lock finish takes: a dispatch listed here
				// is kept before its End can recycle it.
				d.keep()
				all = append(all, d)
			}
			sh.mu.Unlock()
			break
		}
	}
	slices.SortFunc(all, func(a, b *Dispatch) int {
		return cmp.Or(cmp.Compare(a.startNs, b.startNs), cmp.Compare(a.id, b.id))
	})
	return all
}

// dispatchList is the doubly linked list of running dispatches of a shard.
type dispatchList struct {
	head, tail *Dispatch
	n          int
}

func (l *dispatchList) push(d *Dispatch) {
	d.prev, d.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = d
	} else {
		l.head = d
	}
	l.tail = d
	l.n++
}

func (l *dispatchList) remove(d *Dispatch) {
	if d.prev != nil {
		d.prev.next = d.next
	} else {
		l.head = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	} else {
		l.tail = d.prev
	}
	d.prev, d.next = nil, nil
	l.n--
}
