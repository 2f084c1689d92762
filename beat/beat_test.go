package beat

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// The recorder only works in a binary built with matrixexec. A plain go
// test checks the no-op contract (TestPlainBuildIsNoOp) and TestMain runs
// the rest in a binary built with -toolexec=matrixexec; integration's
// linked.txtar runs them under -race too.

func requireLinked(t testing.TB) {
	t.Helper()
	if !Linked() {
		t.Skip("needs a binary built with -toolexec=matrixexec, which TestMain runs the tests in unless MATRIX_TEST_LINKED=off")
	}
}

func TestPlainBuildIsNoOp(t *testing.T) {
	if Linked() {
		t.Skip("this binary is linked to the recorder; the no-op contract is checked by the plain go test run")
	}
	if err := Start(Config{}); !errors.Is(err, ErrNotInstrumented) {
		t.Fatalf("Start in a plain build = %v, want ErrNotInstrumented", err)
	}
	d := Begin(KindCustom, "x")
	if d != nil {
		t.Fatalf("Begin in a plain build = %v, want nil", d)
	}
	d.SetScene("s")
	d.End()
	ran := false
	Run("x", func() { ran = true })
	if !ran {
		t.Fatal("Run did not run fn")
	}
}

type captured struct {
	mu        sync.Mutex
	recs      map[string][]analysis.Record // the call records (enters and exits)
	waits     map[string][]wait            // the waits and other intervals
	cost      map[string]time.Duration
	abandoned map[string]bool
}

// wait is an interval of extended records.
type wait struct {
	kind, reason uint8
	pcs          int
	start, end   uint64
}

func (c *captured) DispatchBegin(*Dispatch) {}
func (c *captured) DispatchEnd(d *Dispatch) {
	if d.Abandoned() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.abandoned[d.Name()] = true
		return
	}
	var rs []analysis.Record
	var ws []wait
	all := d.Records(nil)
	for i := 0; i < len(all); i++ {
		r := analysis.Record(all[i])
		if r.ID() != abi.ExtID {
			rs = append(rs, r)
			continue
		}
		if !r.Enter() {
			if len(ws) > 0 {
				ws[len(ws)-1].end = r.Time()
			}
			continue
		}
		if i+1 < len(all) {
			kind, reason, n := abi.UnpackExt(all[i+1])
			ws = append(ws, wait{kind: kind, reason: reason, pcs: n, start: r.Time()})
			i += 1 + n
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs[d.Name()] = rs
	c.waits[d.Name()] = ws
	c.cost[d.Name()] = d.Cost()
}

func capture(t *testing.T, cfg Config) *captured {
	t.Helper()
	if err := Start(cfg); err != nil {
		t.Fatal(err)
	}
	c := &captured{recs: map[string][]analysis.Record{}, waits: map[string][]wait{}, cost: map[string]time.Duration{}, abandoned: map[string]bool{}}
	AddObserver(c)
	t.Cleanup(func() { RemoveObserver(c); Stop() })
	return c
}

func TestRecordsOfADispatch(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	var before, after [2]uint64 // the clock around the two enters
	var slept, waited uint64
	Run("work", func() {
		before[0] = Now()
		rtEnter(7)
		after[0] = Now()
		start := nowMs()
		time.Sleep(30 * time.Millisecond)
		// The clock thread refreshes the clock every millisecond: wait for it
		// to catch up with the monotonic clock rather than assume how
		// late the operating system lets it run. (Not with Gosched: the
		// yields would add runnable intervals to the records, one per
		// tick on a busy machine.)
		woke := nowMs()
		slept = woke - start
		deadline := time.Now().Add(time.Second)
		for Now() < woke && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		waited = nowMs() - woke
		before[1] = Now()
		rtEnter(8)
		after[1] = Now()
		rtExit(8)
		rtExit(7)
	})
	rs := c.recs["work"]
	if len(rs) != 6 {
		t.Fatalf("got %d records %v, want 6 (abandoned %v; %+v)", len(rs), rs, c.abandoned["work"], ReadStats())
	}
	// The sleep is a wait with the runtime's reason, the program counters
	// where it blocked, and its duration.
	var sleep *wait
	for i, w := range c.waits["work"] {
		if w.kind == abi.ExtWait && WaitReason(w.reason) == "sleep" && (sleep == nil || w.end-w.start > sleep.end-sleep.start) {
			sleep = &c.waits["work"][i]
		}
	}
	if sleep == nil || sleep.pcs == 0 || sleep.end < sleep.start+25 {
		t.Errorf("no sleep of 30 ms among the waits %+v", c.waits["work"])
	}
	want := []struct {
		enter bool
		id    uint32
	}{{true, DispatchID}, {true, 7}, {true, 8}, {false, 8}, {false, 7}, {false, DispatchID}}
	for i, w := range want {
		if rs[i].Enter() != w.enter || rs[i].ID() != w.id {
			t.Errorf("record %d = %v, want enter=%v id=%d", i, rs[i], w.enter, w.id)
		}
	}
	// A record carries the clock of the moment it was written.
	for i, r := range rs[1:3] {
		if r.Time() < before[i] || r.Time() > after[i] {
			t.Errorf("record %v written between clock %d and %d", r, before[i], after[i])
		}
	}
	// The clock follows the monotonic clock: the sleep shows in full.
	if before[1] < after[0]+slept-1 {
		t.Errorf("clock %d after a sleep of %d ms from %d (waited %d ms for the clock thread)", before[1], slept, after[0], waited)
	}
	if d := rs[2].Time() - rs[1].Time(); d+1 < slept {
		t.Errorf("sleep of %d ms recorded as %d ms", slept, d)
	}
	res := analysis.Analyze(rs, analysis.Strict, rs[5].Time(), 0)
	if res.Key != "7|" {
		t.Errorf("stack key %q, want 7|\n%s", res.Key, res.Stack)
	}
}

func TestOverwrittenMarkYieldsNothing(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{BufferSize: 16})
	Run("wraps", func() {
		for i := 0; i < 20; i++ {
			rtEnter(1)
			rtExit(1)
		}
	})
	if rs := c.recs["wraps"]; len(rs) != 0 {
		t.Fatalf("wrapped buffer gave %d records, want none", len(rs))
	}
	Run("fits", func() { rtEnter(1); rtExit(1) })
	if rs := c.recs["fits"]; len(rs) != 4 {
		t.Fatalf("got %d records, want 4", len(rs))
	}
}

// TestYieldingLoopKeepsItsRecords: a goroutine that yields again and again
// (runtime.GC waits so for the sweep to finish; code that spins on a flag
// does too) is runnable for a moment at every yield. Those moments take
// one runnable interval per tick of the clock, not one per yield, so
// thousands of yields leave the dispatch's buffer to its calls; and time
// really spent runnable is still recorded.
func TestYieldingLoopKeepsItsRecords(t *testing.T) {
	requireLinked(t)
	// 8,000 intervals of three words would wrap the buffer of 16,384
	// records: the dispatch would yield nothing.
	const yields = 8000
	c := capture(t, Config{BufferSize: 1 << 14})
	// On one P, the goroutine that spins runs while the dispatch's waits
	// for a CPU after its last yield.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	start := nowMs()
	Run("yields", func() {
		rtEnter(7)
		for range yields {
			runtime.Gosched()
		}
		rtEnter(8)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for t0 := time.Now(); time.Since(t0) < 5*time.Millisecond; {
			}
		}()
		runtime.Gosched()
		<-done
		rtExit(8)
		rtExit(7)
	})
	ticks := nowMs() - start
	rs := c.recs["yields"]
	if len(rs) != 6 {
		t.Fatalf("got %d records %v, want the dispatch's and the calls of 7 and 8 (%d intervals)", len(rs), rs, len(c.waits["yields"]))
	}
	// A new interval begins only once the clock has moved since the last
	// one began, or after a wait (which a collection could add).
	var runnable, waits int
	var longest uint64
	for _, w := range c.waits["yields"] {
		switch w.kind {
		case abi.ExtRunnable:
			runnable++
			longest = max(longest, w.end-w.start)
		case abi.ExtWait:
			waits++
		}
	}
	if runnable > 1+int(ticks)+waits {
		t.Errorf("%d runnable intervals in %d ms with %d waits: more than one per tick", runnable, ticks, waits)
	}
	if longest < 4 {
		t.Errorf("longest runnable interval %d ms, want the 5 ms the other goroutine spun: %+v", longest, c.waits["yields"])
	}
}

// secondWhileFirstRuns runs the dispatch "second" (enter and exit of id 4)
// while the dispatch "first" runs on another goroutine, which enters and
// exits id 3 once "second" has ended.
func secondWhileFirstRuns() {
	hold := make(chan struct{})
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run("first", func() { close(started); <-hold; rtEnter(3); rtExit(3) })
	}()
	<-started
	Run("second", func() { rtEnter(4); rtExit(4) })
	close(hold)
	<-done
}

func TestPoolExhaustionDegradesToNotRecorded(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{BufferSize: 64, MaxBuffers: 1})
	before := ReadStats().NotRecorded
	secondWhileFirstRuns()
	if got := ReadStats().NotRecorded - before; got != 1 {
		t.Errorf("NotRecorded grew by %d, want 1", got)
	}
	if rs := c.recs["second"]; len(rs) != 0 {
		t.Errorf("dispatch without a buffer has %d records", len(rs))
	}
	if c.cost["second"] <= 0 {
		t.Errorf("dispatch without a buffer was not timed")
	}
	if rs := c.recs["first"]; len(rs) != 4 {
		t.Errorf("first dispatch has %d records, want 4", len(rs))
	}
	if s := ReadStats(); s.Buffers != 1 {
		t.Errorf("%d buffers allocated, want 1", s.Buffers)
	}
}

func TestNestedBeginIsItsOwnDispatch(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	outer := Begin(KindHTTP, "outer")
	rtEnter(8)
	// A function called inside the outer dispatch begins one of its own.
	func() {
		inner := Begin(KindCustom, "inner")
		defer inner.End()
		if inner == outer || inner == nil {
			t.Fatal("nested Begin did not start a dispatch of its own")
		}
		if Current() != inner {
			t.Fatal("the nested dispatch is not the current one")
		}
		rtEnter(9)
		rtExit(9)
	}()
	if Current() != outer {
		t.Fatal("ending the nested dispatch did not go back to the outer one")
	}
	rtExit(8)
	outer.End()
	if Current() != nil {
		t.Fatal("goroutine still in a dispatch")
	}
	// i(D) i(9) o(9) o(D); the outer dispatch has its own call, not the
	// inner one's.
	if rs := c.recs["inner"]; len(rs) != 4 || rs[1].ID() != 9 {
		t.Errorf("inner records %v", rs)
	}
	if rs := c.recs["outer"]; len(rs) != 4 || rs[1].ID() != 8 {
		t.Errorf("outer records %v", rs)
	}
}

// TestNestedBeginInInlinedLiteral: a nested Begin and End in a function
// literal without defer, which the compiler inlines into the function that
// began the outer dispatch, so that both Begins are called from the same
// frame. The nested one is still a dispatch of its own, and the outer one
// goes on and is reported, not abandoned.
func TestNestedBeginInInlinedLiteral(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	before := ReadStats().Abandoned
	outer := Begin(KindHTTP, "outer")
	rtEnter(8)
	func() {
		in := Begin(KindCustom, "inner")
		rtEnter(9)
		rtExit(9)
		in.End()
	}()
	if Current() != outer {
		t.Fatalf("after the nested dispatch the current one is %v, want the outer one", Current())
	}
	rtExit(8)
	outer.End()
	if got := ReadStats().Abandoned - before; got != 0 {
		t.Errorf("%d dispatches abandoned, want 0", got)
	}
	if c.abandoned["outer"] {
		t.Error("the outer dispatch was abandoned")
	}
	if rs := c.recs["inner"]; len(rs) != 4 || rs[1].ID() != 9 {
		t.Errorf("inner records %v", rs)
	}
	if rs := c.recs["outer"]; len(rs) != 4 || rs[1].ID() != 8 {
		t.Errorf("outer records %v", rs)
	}
}

// TestFrameSameWhenCached: a frame is found by the unwinder the first time
// its call site begins a dispatch and from the frame pointers and the
// cache after that (on amd64); both give the same depth, function and
// logical frames, in a frame of its own and in an inlined function.
func TestFrameSameWhenCached(t *testing.T) {
	requireLinked(t)
	var got [2][2]site
	for i := range 2 {
		s := &got[i][0]
		s.depth, s.entry, s.n = rtFrame(0, s.pcs[:])
		inlinedFrame(&got[i][1])
	}
	for k, what := range []string{"own frame", "inlined function"} {
		a, b := got[0][k], got[1][k]
		if a.depth == 0 || a.n < 1+k {
			t.Errorf("%s: found depth %d and %d logical frames", what, a.depth, a.n)
		}
		if a != b {
			t.Errorf("%s: first %+v, then %+v", what, a, b)
		}
	}
}

// inlinedFrame is inlined into its caller: the frame it finds is its
// caller's, with two logical frames.
func inlinedFrame(s *site) { s.depth, s.entry, s.n = rtFrame(0, s.pcs[:]) }

// TestBeginAgainAtTheSameSiteAbandons: a loop whose body begins a
// dispatch and forgets to end it begins the next one at the same call
// site in the same frame: the forgotten one is abandoned, not an outer
// dispatch of the next.
func TestBeginAgainAtTheSameSiteAbandons(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	before := ReadStats().Abandoned
	var last *Dispatch
	for _, name := range []string{"first", "second"} {
		last = Begin(KindCustom, name)
	}
	if last.Name() != "second" || Current() != last {
		t.Fatal("the second Begin did not start the current dispatch")
	}
	last.End()
	if Current() != nil {
		t.Fatalf("goroutine still in dispatch %q", Current().Name())
	}
	if got := ReadStats().Abandoned - before; got != 1 {
		t.Errorf("%d dispatches abandoned, want 1", got)
	}
	if !c.abandoned["first"] {
		t.Error("the forgotten dispatch was not abandoned")
	}
}

// work begins a dispatch and panics before ending it when fail is set.
//
//go:noinline
func work(name string, fail bool) {
	d := Begin(KindCustom, name)
	rtEnter(7)
	if fail {
		panic("job failed")
	}
	rtExit(7)
	d.End()
}

// TestPanicAbandonsTheDispatch is the worker loop of a job queue: a job
// panics between Begin and End, and the loop recovers. The recovery unwinds
// the frame that began the dispatch: it is abandoned, never reported, and
// the next jobs are dispatches of their own.
func TestPanicAbandonsTheDispatch(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	before := ReadStats()
	for i, name := range []string{"job0", "job1", "job2"} {
		func() {
			defer func() { _ = recover() }()
			work(name, i == 0)
		}()
		if d := Current(); d != nil {
			t.Fatalf("after %s the goroutine is still in dispatch %q", name, d.Name())
		}
	}
	Running(func(d *Dispatch) { t.Errorf("dispatch %q still running", d.Name()) })
	after := ReadStats()
	if got := after.Abandoned - before.Abandoned; got != 1 {
		t.Errorf("%d dispatches abandoned, want 1", got)
	}
	if _, ok := c.recs["job0"]; ok || !c.abandoned["job0"] {
		t.Error("the abandoned dispatch was not reported to observers as abandoned")
	}
	for _, name := range []string{"job1", "job2"} {
		if rs := c.recs[name]; len(rs) != 4 {
			t.Errorf("%s: records %v, want its own four", name, rs)
		}
	}
	if after.Buffers > 1 {
		t.Errorf("%d buffers allocated after sequential dispatches, want 1", after.Buffers)
	}
}

// TestReturnWithoutEndAbandons: a function that begins a dispatch and
// returns without End leaves it behind; the next Begin at the same depth
// abandons it instead of joining it.
func TestReturnWithoutEndAbandons(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	before := ReadStats().Abandoned
	leak := func(name string) *Dispatch { return Begin(KindCustom, name) }
	leak("leaked")
	d := leak("next")
	if d == nil || d.Name() != "next" || Current() != d {
		t.Fatal("the next Begin joined the leaked dispatch")
	}
	d.End()
	if got := ReadStats().Abandoned - before; got != 1 {
		t.Errorf("%d dispatches abandoned, want 1", got)
	}
	if _, ok := c.recs["leaked"]; ok || !c.abandoned["leaked"] {
		t.Error("the leaked dispatch was not reported to observers as abandoned")
	}
	if _, ok := c.recs["next"]; !ok {
		t.Error("the next dispatch was not reported")
	}
}

// TestEndFromAnotherGoroutine: an async job's End runs elsewhere while the
// goroutine that began the dispatch goes on recording. Nothing crashes, the
// dispatch is reported once, and the goroutine's next dispatch is its own.
func TestEndFromAnotherGoroutine(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{BufferSize: 64, MaxBuffers: 2})
	before := ReadStats()
	began := make(chan *Dispatch)
	ended := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d := Begin(KindCustom, "async")
		rtEnter(3)
		began <- d
		<-ended
		// Still recording into the ended dispatch: harmless.
		for i := 0; i < 200; i++ {
			rtEnter(4)
			rtExit(4)
		}
		rtExit(3)
		if Current() != nil {
			t.Error("the ended dispatch is still current on its goroutine")
		}
		d.End() // late: a no-op
		Run("after", func() { rtEnter(5); rtExit(5) })
	}()
	d := <-began
	d.End()
	close(ended)
	<-done
	s := ReadStats()
	if s.RemoteEnds-before.RemoteEnds != 1 || s.LateEnds-before.LateEnds != 1 {
		t.Errorf("remote ends %d, late ends %d; want 1 and 1", s.RemoteEnds-before.RemoteEnds, s.LateEnds-before.LateEnds)
	}
	if rs := c.recs["async"]; len(rs) < 2 || !rs[0].Enter() || rs[0].ID() != DispatchID {
		t.Errorf("async records %v", rs)
	}
	if rs := c.recs["after"]; len(rs) != 4 || rs[1].ID() != 5 {
		t.Errorf("the next dispatch has records %v, want its own four", rs)
	}
	if s.Running != 0 {
		t.Errorf("%d dispatches running", s.Running)
	}
}

// TestRemoteCopyIsExactOrEmpty: a watchdog copying the ring of a running
// dispatch on another goroutine gets either every record since the
// dispatch began or nothing, never records of two generations.
func TestRemoteCopyIsExactOrEmpty(t *testing.T) {
	requireLinked(t)
	const size = 16
	capture(t, Config{BufferSize: size, MaxBuffers: 1})
	// The slot of the dispatch's first record is the one the writer
	// overwrites next once the ring holds size records: a copy from
	// another goroutine cannot be sure of it.
	//
	// The writer signals and waits through atomics, not channels: a
	// recording goroutine that parks writes a wait into its ring. It may
	// still be preempted while it spins, which adds a runnable interval;
	// the checks allow for records beyond the ones it wrote.
	for _, n := range []int{size - 2, size - 1} {
		var ready, release atomic.Bool
		var d *Dispatch
		done := make(chan struct{})
		go func() {
			defer close(done)
			d = Begin(KindCustom, "full")
			for i := 0; i < n/2; i++ {
				rtEnter(6)
				rtExit(6)
			}
			if n%2 == 1 {
				rtEnter(6)
			}
			ready.Store(true)
			for !release.Load() {
			}
			d.End()
		}()
		for !ready.Load() {
		}
		rs := d.Records(nil)
		total := atomic.LoadUint64(&d.ring.N) - d.mark // written by now
		release.Store(true)
		<-done
		written := uint64(1 + n) // the records of the dispatch's calls
		switch {
		case len(rs) == 0:
			if total < size {
				t.Errorf("%d records written (%d of calls): the copy is empty", total, written)
			}
		case written >= size:
			t.Errorf("a full ring copied from another goroutine gave %d records, want none", len(rs))
		case uint64(len(rs)) < written || len(rs) >= size:
			t.Errorf("%d records of calls written: the copy has %d", written, len(rs))
		default:
			for i, r := range rs[:written] {
				rec := analysis.Record(r)
				if want := uint32(6); i == 0 {
					want = DispatchID
					if rec.ID() != want || !rec.Enter() {
						t.Errorf("record %d of the copy is %x, want the dispatch's enter", i, r)
					}
				} else if rec.ID() != want || rec.Enter() != (i%2 == 1) {
					t.Errorf("record %d of the copy is %x", i, r)
				}
			}
		}
	}
	// A recycled buffer holds nothing of the dispatch before.
	Run("first", func() {
		for i := 0; i < 5; i++ {
			rtEnter(2)
			rtExit(2)
		}
	})
	d := Begin(KindCustom, "second")
	defer d.End()
	for i, r := range d.data[d.ring.N:] {
		if r != 0 {
			t.Fatalf("slot %d of the recycled buffer holds %x", int(d.ring.N)+i, r)
		}
	}
}

// TestStopStopsTheClock: after Stop nothing is armed. linked.txtar runs it
// with MATRIX_REPORT set, so the test binary records its start-up, which
// main (the one go test generates) must end.
func TestStopStopsTheClock(t *testing.T) {
	requireLinked(t)
	if err := Start(Config{}); err != nil {
		t.Fatal(err)
	}
	Stop()
	n := Now()
	time.Sleep(30 * time.Millisecond)
	if m := Now(); m != n {
		t.Fatalf("the recorder's clock went from %d to %d ms after Stop: it still runs", n, m)
	}
	if info := Startup(); info.MainEntered.IsZero() {
		t.Error("the start-up phase never ended: main was not entered")
	}
}

func TestStartStopReleases(t *testing.T) {
	requireLinked(t)
	for i := 0; i < 3; i++ {
		if err := Start(Config{BufferSize: 1024, MaxBuffers: 4}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for j := 0; j < 4; j++ {
			wg.Add(1)
			go func() { defer wg.Done(); Run("x", func() { rtEnter(1); rtExit(1) }) }()
		}
		wg.Wait()
		if s := ReadStats(); s.Buffers == 0 || s.Buffers > 4 {
			t.Fatalf("%d buffers while started, want 1..4", s.Buffers)
		}
		Stop()
		if s := ReadStats(); s.Buffers != 0 || s.Running != 0 {
			t.Fatalf("after Stop: %+v", s)
		}
		if Begin(KindCustom, "stopped") != nil {
			t.Fatal("Begin after Stop returned a dispatch")
		}
	}
}

// TestTenThousandDispatches: 10k goroutines inside dispatches at once stay
// within the configured buffer bound; the ones that find no buffer are
// counted as not recorded, and nothing blocks. Each has an ID of its own,
// though the Ps take IDs in blocks, and each is counted as begun.
func TestTenThousandDispatches(t *testing.T) {
	requireLinked(t)
	const n, maxBuffers, size = 10000, 64, 4096
	if err := Start(Config{BufferSize: size, MaxBuffers: maxBuffers}); err != nil {
		t.Fatal(err)
	}
	defer Stop()
	start := ReadStats()
	before := start.NotRecorded
	var wg sync.WaitGroup
	inside := make(chan struct{}, n)
	release := make(chan struct{})
	ids := make([]uint64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := Begin(KindCustom, "many")
			ids[i] = d.ID()
			Enter(5)
			inside <- struct{}{}
			<-release
			Exit(5)
			d.End()
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case <-inside:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d goroutines got into their dispatch: something blocks", i, n)
		}
	}
	s := ReadStats()
	if s.Running != n {
		t.Errorf("%d dispatches running, want %d", s.Running, n)
	}
	if s.Buffers > maxBuffers {
		t.Errorf("%d buffers allocated, bound is %d", s.Buffers, maxBuffers)
	}
	if got := s.NotRecorded - before; got != n-maxBuffers {
		t.Errorf("%d dispatches not recorded, want %d", got, n-maxBuffers)
	}
	if got := s.Dispatches - start.Dispatches; got != n {
		t.Errorf("%d dispatches counted as begun, want %d", got, n)
	}
	close(release)
	wg.Wait()
	if s := ReadStats(); s.Running != 0 || s.Buffers > maxBuffers {
		t.Errorf("after: %+v", s)
	}
	seen := make(map[uint64]int, n)
	for i, id := range ids {
		if j, dup := seen[id]; dup || id == 0 {
			t.Fatalf("dispatches %d and %d have ID %d", j, i, id)
		}
		seen[id] = i
	}
}

func TestDispatchTraceParent(t *testing.T) {
	var nilD *Dispatch
	nilD.SetTraceParent("x") // no-op
	if nilD.TraceParent() != "" {
		t.Error("nil dispatch has a trace context")
	}
	d := new(Dispatch)
	d.SetTraceParent("")
	if d.TraceParent() != "" {
		t.Error("empty trace context stored")
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d.SetTraceParent(tp)
	if d.TraceParent() != tp {
		t.Errorf("TraceParent = %q", d.TraceParent())
	}
}

// TestDispatchStart: Start is the instant the dispatch began, derived from
// the dispatch's one reading of the clock: never before a time taken
// before Begin, at most a millisecond after one taken after it (the wall
// clock too), and so again once the reference it is derived from has been
// taken anew (clockRefAge later).
func TestDispatchStart(t *testing.T) {
	requireLinked(t)
	if err := Start(Config{BufferSize: 1024}); err != nil {
		t.Fatal(err)
	}
	defer Stop()
	for i := range 2 {
		if i > 0 {
			time.Sleep(time.Duration(clockRefAge) + 10*time.Millisecond)
		}
		before := time.Now()
		d := Begin(KindCustom, "start")
		after := time.Now()
		start := d.Start()
		d.End()
		if start.Before(before) || start.Sub(after) > time.Millisecond {
			t.Errorf("dispatch %d: Start is %v after the time taken before Begin and %v after the one taken after it", i, start.Sub(before), start.Sub(after))
		}
		if wall := start.Round(0); wall.Before(before.Round(0).Add(-time.Millisecond)) || wall.After(after.Round(0).Add(time.Millisecond)) {
			t.Errorf("dispatch %d: Start's wall clock %v, taken between %v and %v", i, wall, before.Round(0), after.Round(0))
		}
		if got := d.Start().Add(d.Cost()).Sub(start); got != d.Cost() {
			t.Errorf("dispatch %d: Start and Cost disagree by %v", i, got-d.Cost())
		}
	}
}

// TestRunningHoldsNoLock: while Running's f looks at a dispatch (a tracer
// copying records, or descheduled on a loaded machine), dispatches begin and
// end on every P: f holds none of the recorder's locks.
func TestRunningHoldsNoLock(t *testing.T) {
	requireLinked(t)
	capture(t, Config{})
	release := make(chan struct{})
	begun := make(chan struct{})
	go func() {
		d := Begin(KindCustom, "held")
		close(begun)
		<-release
		d.End()
	}()
	<-begun
	defer close(release)
	var calls int
	Running(func(*Dispatch) {
		calls++
		if calls > 1 {
			return
		}
		// Begin and end dispatches on as many goroutines as there are
		// Ps, so that every shard is written; a Begin or End that waited
		// for f to return would never finish.
		var wg sync.WaitGroup
		for range 4 * runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				Begin(KindCustom, "meanwhile").End()
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("dispatches did not begin and end while Running's f ran")
		}
	})
	if calls == 0 {
		t.Fatal("Running did not list the running dispatch")
	}
}

// TestRunningOldestFirst: dispatches begun on many goroutines, and so on
// several Ps (the running dispatches are kept per P), are each listed once,
// oldest first, and counted.
func TestRunningOldestFirst(t *testing.T) {
	requireLinked(t)
	capture(t, Config{})
	const n = 32
	release := make(chan struct{})
	var wg sync.WaitGroup
	ids := make([]uint64, n)
	shards := map[uint8]bool{}
	for i := range n {
		begun := make(chan *Dispatch)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := Begin(KindCustom, fmt.Sprint("job", i))
			begun <- d
			<-release
			d.End()
		}()
		d := <-begun
		ids[i] = d.ID()
		shards[d.shard] = true
		runtime.Gosched()
	}
	t.Logf("%d dispatches begun on %d Ps", n, len(shards))
	mine := map[uint64]bool{}
	for _, id := range ids {
		mine[id] = true
	}
	var got []uint64
	Running(func(d *Dispatch) {
		if mine[d.ID()] {
			got = append(got, d.ID())
		}
	})
	running := ReadStats().Running
	close(release)
	wg.Wait()
	if !slices.Equal(got, ids) {
		t.Errorf("Running listed %v, want %v (oldest first), from %d shards", got, ids, len(shards))
	}
	if running < n {
		t.Errorf("%d dispatches running, want at least %d", running, n)
	}
	var left []uint64
	Running(func(d *Dispatch) {
		if mine[d.ID()] {
			left = append(left, d.ID())
		}
	})
	if len(left) != 0 {
		t.Errorf("dispatches %v still listed after they ended", left)
	}
}

// TestBufferMovesBetweenPs: the idle buffers are kept by the P that
// returned them, and a dispatch that begins on another P takes one from
// there before it counts itself not recorded. Two goroutines that spin,
// and so run on both Ps at once, take turns beginning and ending a
// dispatch: with one buffer, every dispatch is recorded.
func TestBufferMovesBetweenPs(t *testing.T) {
	requireLinked(t)
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps")
	}
	capture(t, Config{BufferSize: 64, MaxBuffers: 1})
	before := ReadStats().NotRecorded
	const n = 400
	var turn atomic.Int32 // the next dispatch's number
	var moved atomic.Int32
	var lastP atomic.Uint32 // the P the buffer was last returned on
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := turn.Load()
				if i >= n {
					return
				}
				if int(i)%2 != w {
					// The other's turn: spin, keeping this P, so that
					// the other runs on the other P (a yield would
					// hand this P to it).
					for turn.Load() == i {
					}
					continue
				}
				d := Begin(KindCustom, fmt.Sprint("job", i))
				if i > 0 && rtProcID() != lastP.Load() {
					moved.Add(1)
				}
				d.End()
				lastP.Store(rtProcID())
				turn.Add(1)
			}
		}()
	}
	wg.Wait()
	if moved.Load() == 0 {
		t.Skip("every dispatch began on the P its buffer was returned on")
	}
	if got := ReadStats().NotRecorded - before; got != 0 {
		t.Errorf("%d of %d dispatches not recorded (%d began on another P than the buffer's), want 0", got, n, moved.Load())
	}
	if s := ReadStats(); s.Buffers != 1 {
		t.Errorf("%d buffers allocated, want 1", s.Buffers)
	}
	t.Logf("%d of %d dispatches began on another P than the one their buffer was returned on", moved.Load(), n)
}

// TestClockIdlesWithTheProcess: while every P is idle the clock thread
// does not wake once a millisecond, and a dispatch that runs after such a
// spell, without blocking, still has the clock of every moment in its
// records.
func TestClockIdlesWithTheProcess(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	const idle = 300 * time.Millisecond
	time.Sleep(50 * time.Millisecond) // let the goroutines of Start settle
	ticks, idles := rtClockCounts()
	time.Sleep(idle)
	ticks2, idles2 := rtClockCounts()
	if woke := ticks2 - ticks; woke >= uint64(idle/time.Millisecond)/2 {
		t.Errorf("the clock thread ticked %d times in %v with every P idle (%d idle sleeps): it does not idle", woke, idle, idles2-idles)
	}
	if idles2 == 0 {
		t.Errorf("the clock thread never idled (ticks %d → %d)", ticks, ticks2)
	}
	// Not one record or clock reading between the two ends but the
	// enter and the exit: the clock must move for the spin itself. A
	// clock that stood still reads nothing; one whose thread a loaded
	// machine kept from running for a while reads less than the spin
	// (the limit the design documents), but not half as little.
	const spin = 40 * time.Millisecond
	const atLeast = uint64(spin/time.Millisecond) / 2
	var before, after, spinTicks uint64
	Run("spin", func() {
		before = Now()
		t0, _ := rtClockCounts()
		rtEnter(7)
		for start := time.Now(); time.Since(start) < spin; {
		}
		rtExit(7)
		t1, _ := rtClockCounts()
		after, spinTicks = Now(), t1-t0
	})
	// The goroutine's preemptions move the clock too (every 10 ms), so
	// the thread's own ticks tell whether the dispatch woke it.
	if spinTicks < atLeast/2 {
		t.Errorf("the clock thread ticked %d times in a %v spin: the dispatch did not wake it", spinTicks, spin)
	}
	if after-before < atLeast {
		t.Errorf("Now moved %d ms over a %v spin", after-before, spin)
	}
	var in, out uint64
	for _, r := range c.recs["spin"] {
		if r.ID() == 7 {
			if r.Enter() {
				in = r.Time()
			} else {
				out = r.Time()
			}
		}
	}
	if out < in+atLeast {
		t.Errorf("a %v spin recorded from %d to %d ms: the clock stood still (records %v)", spin, in, out, c.recs["spin"])
	}
}
