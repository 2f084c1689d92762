package beat

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/matrixgo/matrix/internal/observe"
)

// The dispatches of the patched dispatch sources (a net/http server, the
// testing runner) are reused once they end, unless something may still use
// them: these tests hold such dispatches in every way the recorder hands
// them out and check that none is reused while held.

// served is what the patch of net/http's serverHandler.ServeHTTP does
// around a request: the runtime's entry points, the dispatch ended by a
// deferred call in the beginning frame.
func served(name string, body func()) {
	if d := rtDispatchBegin(int(KindHTTP), name); d != nil {
		defer rtDispatchEnd(d, "")
	}
	body()
}

// transientObserver keeps nothing; its type is marked so.
type transientObserver struct{ _ byte }

func (o *transientObserver) DispatchBegin(*Dispatch) {}
func (o *transientObserver) DispatchEnd(*Dispatch)   {}

func init() { observe.MarkTransient((*transientObserver)(nil)) }

// keepingObserver keeps every dispatch it sees end, as a program's
// observer may.
type keepingObserver struct {
	mu   sync.Mutex
	kept []held
}

type held struct {
	d        *Dispatch
	name, sc string
	id       uint64
}

func (o *keepingObserver) DispatchBegin(*Dispatch) {}
func (o *keepingObserver) DispatchEnd(d *Dispatch) {
	o.mu.Lock()
	o.kept = append(o.kept, held{d, d.Name(), d.Scene(), d.ID()})
	o.mu.Unlock()
}

// check stops t if a held dispatch changed: it was reused (and reading
// more of it could block on a lock it was reset with).
func (h held) check(t *testing.T) {
	t.Helper()
	if n, s, id := h.d.Name(), h.d.Scene(), h.d.ID(); n != h.name || s != h.sc || id != h.id {
		t.Fatalf("held dispatch %q (scene %q, id %d) is now %q (scene %q, id %d): reused", h.name, h.sc, h.id, n, s, id)
	}
}

func startReuse(t *testing.T) {
	t.Helper()
	requireLinked(t)
	// A bound of 8 buffers a P: the buffers of recycled dispatches stay
	// with them (Dispatch.park).
	if err := Start(Config{MaxBuffers: 8 * int(shardMask+1), BufferSize: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	o := &transientObserver{}
	AddObserver(o)
	t.Cleanup(func() { RemoveObserver(o); Stop() })
}

// addresses serves n dispatches one after the other and returns their
// addresses; holding them keeps their memory from being freed, so that an
// address seen twice is a dispatch reused.
func addresses(n int) []unsafe.Pointer {
	var ps []unsafe.Pointer
	for i := 0; i < n; i++ {
		served("next", func() { ps = append(ps, rtCurrent()) })
	}
	return ps
}

func contains(ps []unsafe.Pointer, p unsafe.Pointer) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func TestServedDispatchesAreReused(t *testing.T) {
	startReuse(t)
	ps := addresses(200)
	seen := map[unsafe.Pointer]bool{}
	for _, p := range ps {
		if seen[p] {
			return
		}
		seen[p] = true
	}
	t.Fatal("200 dispatches served one after the other, and none reused the memory of one before it")
}

func TestHeldDispatchesAreNotReused(t *testing.T) {
	startReuse(t)
	t.Run("Current", func(t *testing.T) {
		var h held
		served("current", func() {
			d := Current()
			d.SetScene("GET /current")
			h = held{d, d.Name(), d.Scene(), d.ID()}
		})
		if contains(addresses(100), unsafe.Pointer(h.d)) {
			t.Error("a dispatch Current returned was reused")
		}
		h.check(t)
	})
	t.Run("Observer", func(t *testing.T) {
		o := &keepingObserver{}
		AddObserver(o)
		ps := addresses(100)
		RemoveObserver(o)
		for _, h := range o.kept {
			h.check(t)
			n := 0
			for _, p := range ps {
				if p == unsafe.Pointer(h.d) {
					n++
				}
			}
			if n > 1 {
				t.Fatal("a dispatch an unmarked observer saw end was reused")
			}
		}
	})
	t.Run("Goroutine", func(t *testing.T) {
		// A goroutine started inside the dispatch records into a ring
		// that refers to it, even after the dispatch ends.
		stop, started := make(chan struct{}), make(chan struct{})
		var p unsafe.Pointer
		served("parent", func() {
			p = rtCurrent()
			go func() { close(started); <-stop }()
			<-started
		})
		ps := addresses(100)
		close(stop)
		if contains(ps, p) {
			t.Error("a dispatch that started a goroutine was reused")
		}
	})
}

// A watchdog holds the dispatches Running hands it and reads them after
// they end, while others are begun and ended on several goroutines. A
// dispatch reused while held changes its id (and, under -race, its writes
// race with the watchdog's reads).
func TestRunningDispatchesAreNotReused(t *testing.T) {
	startReuse(t)
	const workers, each, enough = 4, 500, 50
	var stop atomic.Bool // set once the watchdog has held enough
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			name := fmt.Sprint("worker ", w)
			for i := 0; i < each || !stop.Load(); i++ {
				served(name, func() {
					for j := 0; j < 100; j++ {
						Enter(100)
						Exit(100)
					}
					runtime.Gosched() // let the watchdog find it running
				})
			}
		}(w)
	}
	go func() { wg.Wait(); close(done) }()
	var hs []held
	deadline := time.Now().Add(30 * time.Second)
	for {
		Running(func(d *Dispatch) { hs = append(hs, held{d, d.Name(), d.Scene(), d.ID()}) })
		for _, h := range hs {
			h.check(t)
			_ = h.d.Records(nil)
			_, _ = h.d.Request()
		}
		if len(hs) >= enough {
			stop.Store(true)
		} else if time.Now().After(deadline) {
			stop.Store(true)
			t.Fatalf("Running handed out %d dispatches in 30 s", len(hs))
		}
		select {
		case <-done:
			for _, h := range hs {
				h.check(t)
			}
			t.Logf("%d dispatches held", len(hs))
			return
		default:
		}
	}
}

// Only observers of a marked type let dispatches be reused.
func TestObserverListKeeps(t *testing.T) {
	defer observers.Store(observers.Load())
	storeObservers([]Observer{&transientObserver{}})
	if observers.Load().kept {
		t.Error("a marked observer keeps dispatches")
	}
	storeObservers([]Observer{&transientObserver{}, &keepingObserver{}})
	if !observers.Load().kept {
		t.Error("an unmarked observer keeps no dispatch")
	}
}

// endOnlyObserver does nothing at a dispatch's begin; its type is marked
// so.
type endOnlyObserver struct{ _ byte }

func (o *endOnlyObserver) DispatchBegin(*Dispatch) {
	panic("DispatchBegin of an observer marked observe.NoBegin")
}
func (o *endOnlyObserver) DispatchEnd(*Dispatch) {}

func init() { observe.MarkNoBegin((*endOnlyObserver)(nil)) }

// Observers of a type marked observe.NoBegin are not called as a dispatch
// begins; every other observer is, and every one as it ends.
func TestObserverListBegins(t *testing.T) {
	defer observers.Store(observers.Load())
	quiet, loud := &endOnlyObserver{}, &transientObserver{}
	storeObservers([]Observer{quiet, loud})
	l := observers.Load()
	if len(l.list) != 2 || len(l.begins) != 1 || l.begins[0] != Observer(loud) {
		t.Errorf("observers %v, called at begin %v; want both, and only the unmarked one at begin", l.list, l.begins)
	}
}

// A served dispatch's buffer stays with its memory, the P's spare, for the
// next dispatch begun on the P: cleared, still counted in the recorder's
// buffers, and given back when the spare is not reused for the recorder.
func TestParkedBuffers(t *testing.T) {
	startReuse(t)
	// parked takes the spare of the P the goroutine runs on after a
	// served dispatch, until one holds a parked buffer.
	parked := func() *Dispatch {
		for i := 0; i < 100; i++ {
			served("park", func() {
				for j := 0; j < 300; j++ {
					Enter(100)
					Exit(100)
				}
			})
			if d := (*Dispatch)(rtSpareSwap(nil)); d != nil {
				if d.parked {
					return d
				}
				putSpare(d)
			}
		}
		return nil
	}
	d := parked()
	if d == nil {
		t.Fatal("no served dispatch left its buffer with its spare")
	}
	r := cur.Load()
	if d.rec != r || len(d.data) != r.size {
		t.Fatalf("parked buffer of %p, %d words; the recorder is %p, buffers of %d", d.rec, len(d.data), r, r.size)
	}
	for i, w := range d.data {
		if w != 0 {
			t.Fatalf("parked buffer not cleared: word %d is %#x", i, w)
		}
	}
	putSpare(d)

	// Dispatches one after another take the parked buffers: the pool
	// makes no more than one a P.
	lost := ReadStats().NotRecorded
	addresses(200)
	if st := ReadStats(); st.Buffers > int(shardMask+1) || st.NotRecorded != lost {
		t.Errorf("after 200 dispatches one after another: %d buffers (Ps: %d), %d not recorded", st.Buffers, shardMask+1, st.NotRecorded-lost)
	}

	// A new recorder (of larger buffers) does not record into the
	// buffers of a stopped one.
	if d = parked(); d == nil {
		t.Fatal("no parked buffer")
	}
	oldBuf := unsafe.Pointer(&d.data[0])
	putSpare(d)
	Stop()
	if err := Start(Config{MaxBuffers: 8 * int(shardMask+1), BufferSize: 1 << 11}); err != nil {
		t.Fatal(err)
	}
	var bufs []unsafe.Pointer
	for i := 0; i < 50; i++ {
		served("next", func() { bufs = append(bufs, (*Dispatch)(rtCurrent()).ring.Buf) })
	}
	if contains(bufs, oldBuf) {
		t.Error("a dispatch of the new recorder recorded into a buffer of the stopped one")
	}
	if st := ReadStats(); st.Buffers > int(shardMask+1) || st.NotRecorded != lost {
		t.Errorf("new recorder: %d buffers, %d not recorded", st.Buffers, st.NotRecorded-lost)
	}
}

// BenchmarkServedDispatch measures a dispatch begun and ended as a patched
// server does it (reused, with its buffer), with one recorded call, on one
// P and on every P at once (-cpu 1,2,…).
func BenchmarkServedDispatch(b *testing.B) {
	requireLinked(b)
	if err := Start(Config{}); err != nil {
		b.Fatal(err)
	}
	o := &transientObserver{}
	AddObserver(o)
	defer func() { RemoveObserver(o); Stop() }()
	body := func() {
		Enter(100)
		Exit(100)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			served("fast", body)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				served("fast", body)
			}
		})
	})
}

// requestObserver notes the request each dispatch has when it begins.
type requestObserver struct {
	mu    sync.Mutex
	begun []Request
}

func (o *requestObserver) DispatchBegin(d *Dispatch) {
	r, _ := d.Request()
	o.mu.Lock()
	o.begun = append(o.begun, r)
	o.mu.Unlock()
}
func (o *requestObserver) DispatchEnd(*Dispatch) {}

// A patched net/http server begins a request's dispatch with the request:
// observers see it from the start, and so would a report of a request
// stuck before its handler ran. The dispatch is the caller's, ended at
// its return.
func TestServedDispatchHasItsRequestFromTheStart(t *testing.T) {
	startReuse(t)
	o := &requestObserver{}
	AddObserver(o)
	defer RemoveObserver(o)
	var got []Request
	for _, tls := range []bool{false, true} {
		func() {
			if d := rtDispatchBeginRequest(int(KindHTTP), "http", "POST", "shop:8443", tls); d != nil {
				defer rtDispatchEnd(d, "")
			}
			r, ok := Current().Request()
			if !ok {
				t.Fatal("the served dispatch has no request")
			}
			got = append(got, r)
		}()
		if Current() != nil {
			t.Fatal("the dispatch outlived the frame that began it")
		}
	}
	want := []Request{{Method: "POST", Host: "shop:8443", Scheme: "http"}, {Method: "POST", Host: "shop:8443", Scheme: "https"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(o.begun) != fmt.Sprint(want) {
		t.Errorf("requests %v, at the dispatches' begin %v; want %v", got, o.begun, want)
	}
}
