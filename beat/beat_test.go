package beat

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// The recorder only works in a binary built with matrixexec. These tests
// run both ways: plainly (go test ./...) they check the no-op contract, and
// integration's linked.txtar runs them with -toolexec=matrixexec.

func requireLinked(t *testing.T) {
	t.Helper()
	if !Linked() {
		t.Skip("needs a binary built with -toolexec=matrixexec; integration/testdata/script/linked.txtar runs it so")
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
	mu    sync.Mutex
	recs  map[string][]analysis.Record // the call records (enters and exits)
	waits map[string][]wait            // the waits and other intervals
	cost  map[string]time.Duration
}

// wait is an interval of extended records.
type wait struct {
	kind, reason uint8
	pcs          int
	start, end   uint64
}

func (c *captured) DispatchBegin(*Dispatch) {}
func (c *captured) DispatchEnd(d *Dispatch) {
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
	c := &captured{recs: map[string][]analysis.Record{}, waits: map[string][]wait{}, cost: map[string]time.Duration{}}
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
		// The clock thread refreshes the clock every 0.5 ms: wait for it
		// to catch up with the monotonic clock rather than assume how
		// late the operating system lets it run.
		woke := nowMs()
		slept = woke - start
		deadline := time.Now().Add(time.Second)
		for Now() < woke && time.Now().Before(deadline) {
			runtime.Gosched()
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
		t.Fatalf("got %d records %v, want 6", len(rs), rs)
	}
	// The sleep is a wait with the runtime's reason, the program counters
	// where it blocked, and its duration.
	var sleep *wait
	for i, w := range c.waits["work"] {
		if w.kind == abi.ExtWait && WaitReason(w.reason) == "sleep" {
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

func TestPoolExhaustionDegradesToNotRecorded(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{BufferSize: 64, MaxBuffers: 1})
	before := ReadStats().NotRecorded
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

func TestNestedBeginJoins(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{})
	outer := Begin(KindHTTP, "outer")
	inner := Begin(KindCustom, "GET /x")
	if inner != outer {
		t.Fatal("nested Begin started a second dispatch")
	}
	rtEnter(9)
	rtExit(9)
	inner.End()
	if Current() != outer {
		t.Fatal("inner End ended the outer dispatch")
	}
	if outer.Scene() != "" {
		t.Errorf("joining set the scene to %q", outer.Scene())
	}
	outer.End()
	if Current() != nil {
		t.Fatal("goroutine still in a dispatch")
	}
	if rs := c.recs["outer"]; len(rs) != 4 {
		t.Errorf("got %d records, want 4", len(rs))
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
// counted as not recorded, and nothing blocks.
func TestTenThousandDispatches(t *testing.T) {
	requireLinked(t)
	const n, maxBuffers, size = 10000, 64, 4096
	if err := Start(Config{BufferSize: size, MaxBuffers: maxBuffers}); err != nil {
		t.Fatal(err)
	}
	defer Stop()
	before := ReadStats().NotRecorded
	var wg sync.WaitGroup
	inside := make(chan struct{}, n)
	release := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := Begin(KindCustom, "many")
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
	close(release)
	wg.Wait()
	if s := ReadStats(); s.Running != 0 || s.Buffers > maxBuffers {
		t.Errorf("after: %+v", s)
	}
}
