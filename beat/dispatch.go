package beat

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Dispatch is one unit of work in progress on one goroutine. It is handed
// to observers; outside DispatchBegin/DispatchEnd and Running it may be
// reused at any moment.
//
// The methods of a nil *Dispatch are no-ops, so code can call
// beat.Begin(...).End() whether or not the recorder runs.
type Dispatch struct {
	// The ring the runtime hooks write to. These three fields must stay
	// first and in this order: they mirror runtime.matrixRing, and the
	// goroutine's runtime slot points at the Dispatch itself.
	buf  unsafe.Pointer
	mask uint64
	n    uint64 // records written so far

	scratch [1]uint64 // the ring of a dispatch that found no buffer
	data    []uint64  // pooled buffer, nil when not recorded
	rec     *recorder

	mark     uint64         // n when the dispatch began: the slot of its i(D)
	outer    unsafe.Pointer // the slot's previous value (the start-up ring)
	depth    int            // nested Begin calls on the same goroutine
	kind     Kind
	name     string
	scene    atomic.Pointer[string]
	traceCtx atomic.Pointer[string] // the request's W3C traceparent, as received
	goid     uint64
	start    time.Time
	end      time.Time
	beginMs  uint64
	endMs    uint64
	reported atomic.Uint32 // bits for the watchdog: which reports were made

	prev, next *Dispatch
}

var dispatchPool = sync.Pool{New: func() any { return new(Dispatch) }}

// Begin starts a dispatch on the calling goroutine. It returns nil when the
// recorder is not running. A Begin on a goroutine that is already inside a
// dispatch joins it: the outer dispatch goes on unchanged (name the scene
// with SetScene), and the matching End only leaves the inner level.
func Begin(kind Kind, name string) *Dispatch {
	r := cur.Load()
	if r == nil {
		return nil
	}
	goid := rtGoid()
	if d := Current(); d != nil {
		if d.goid == goid {
			d.depth++
			return d
		}
		// A goroutine that exited inside a dispatch without ending it
		// left its slot set, and the runtime reused its g.
		rtSwapRing(nil)
	}
	d := dispatchPool.Get().(*Dispatch)
	d.kind, d.name, d.rec = kind, name, r
	d.goid = goid
	d.data = r.getBuffer()
	if d.data != nil {
		d.buf, d.mask = unsafe.Pointer(&d.data[0]), uint64(len(d.data)-1)
	} else {
		notRec.Add(1)
		d.buf, d.mask = unsafe.Pointer(&d.scratch[0]), 0
	}
	d.n, d.mark = 0, 0
	dispatchN.Add(1)
	d.start = time.Now()
	rtSetNow(max(nowMs(), rtGetNow()))
	d.beginMs = rtGetNow()
	d.outer = rtSwapRing(unsafe.Pointer(d))
	rtEnter(DispatchID)

	running.Lock()
	runList.push(d)
	running.Unlock()
	forObservers(func(o Observer) { o.DispatchBegin(d) })
	return d
}

// End ends the dispatch. It must be called on the goroutine that began it.
func (d *Dispatch) End() {
	if d == nil {
		return
	}
	if d.depth > 0 {
		d.depth--
		return
	}
	// The clock goroutine may lag on a loaded machine: the dispatch's own
	// bounds are read from the monotonic clock.
	rtSetNow(max(nowMs(), rtGetNow()))
	rtExit(DispatchID)
	rtSwapRing(d.outer)
	d.end = time.Now()
	d.endMs = max(rtGetNow(), d.beginMs+uint64(d.end.Sub(d.start)/time.Millisecond))
	running.Lock()
	runList.remove(d)
	running.Unlock()
	forObservers(func(o Observer) { o.DispatchEnd(d) })

	if d.data != nil {
		d.rec.putBuffer(d.data)
	}
	*d = Dispatch{} // drop references; atomics are zero again
	dispatchPool.Put(d)
}

// SetScene names the scene of the dispatch (an HTTP route pattern, a
// screen, a job type).
func (d *Dispatch) SetScene(scene string) {
	if d != nil {
		d.scene.Store(&scene)
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
// caller's distributed trace. Only this header is kept; it is stored as
// received and validated when a report is built. An empty tp does nothing.
func (d *Dispatch) SetTraceParent(tp string) {
	if d != nil && tp != "" {
		d.traceCtx.Store(&tp)
	}
}

// TraceParent returns the trace context set by SetTraceParent, or "". It
// may be called from any goroutine while the dispatch runs.
func (d *Dispatch) TraceParent() string {
	if d == nil {
		return ""
	}
	if p := d.traceCtx.Load(); p != nil {
		return *p
	}
	return ""
}

// Name returns the name the dispatch was begun with.
func (d *Dispatch) Name() string { return d.name }

// Kind returns where the dispatch comes from.
func (d *Dispatch) Kind() Kind { return d.kind }

// Goid returns the id of the dispatching goroutine.
func (d *Dispatch) Goid() uint64 { return d.goid }

// Start returns when the dispatch began.
func (d *Dispatch) Start() time.Time { return d.start }

// Cost returns the wall time of an ended dispatch (in DispatchEnd), or the
// time since it began while it runs.
func (d *Dispatch) Cost() time.Duration {
	if d.end.IsZero() {
		return time.Since(d.start)
	}
	return d.end.Sub(d.start)
}

// BeginMs and EndMs are the dispatch's bounds in record time.
func (d *Dispatch) BeginMs() uint64 { return d.beginMs }

// EndMs is the end of an ended dispatch in record time, 0 while it runs.
func (d *Dispatch) EndMs() uint64 { return d.endMs }

// Recorded reports whether the dispatch has a buffer.
func (d *Dispatch) Recorded() bool { return d.data != nil }

// Records appends the records of the dispatch, from its DISPATCH enter to
// the newest, to dst. It returns dst unchanged when the dispatch is not
// recorded or its oldest records were overwritten (the buffer wrapped):
// an overwritten mark yields nothing, never garbage.
//
// On the dispatching goroutine the copy is exact. From another goroutine
// (a watchdog looking at a running dispatch) it is a consistent prefix:
// records written during the copy may be left out.
func (d *Dispatch) Records(dst []uint64) []uint64 {
	if d.data == nil {
		return dst
	}
	size := uint64(len(d.data))
	n := atomic.LoadUint64(&d.n)
	if n-d.mark > size {
		return dst
	}
	start := len(dst)
	for i := d.mark; i < n; i++ {
		dst = append(dst, atomic.LoadUint64(&d.data[i&d.mask]))
	}
	// Records older than n2-size may have been overwritten while copying.
	if n2 := atomic.LoadUint64(&d.n); n2-d.mark > size {
		return dst[:start]
	}
	return dst
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

// dispatchList is the doubly linked list of running dispatches.
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
