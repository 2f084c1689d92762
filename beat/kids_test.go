package beat

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// kidObserver keeps the analysis of every dispatch that ends.
type kidObserver struct {
	mu   sync.Mutex
	res  map[string]analysis.Result
	exts map[string][]*analysis.Interval // of the untrimmed tree
}

func (o *kidObserver) DispatchBegin(*Dispatch) {}
func (o *kidObserver) DispatchEnd(d *Dispatch) {
	var rs []analysis.Record
	for _, r := range d.Records(nil) {
		rs = append(rs, analysis.Record(r))
	}
	res := analysis.Analyze(rs, analysis.Strict, d.EndMs(), 0)
	_, exts := analysis.ItemsExt(rs, analysis.Strict, d.EndMs())
	o.mu.Lock()
	o.res[d.Name()] = res
	o.exts[d.Name()] = exts
	o.mu.Unlock()
}

func observeKids(t *testing.T, cfg Config) *kidObserver {
	t.Helper()
	if err := Start(cfg); err != nil {
		t.Fatal(err)
	}
	o := &kidObserver{res: map[string]analysis.Result{}, exts: map[string][]*analysis.Interval{}}
	AddObserver(o)
	t.Cleanup(func() { RemoveObserver(o); Stop() })
	return o
}

// goroutines returns the indices of the goroutine items of res.
func goroutines(res analysis.Result) []int { return goroutineItems(res.Exts) }

// goroutineItems returns the indices of the goroutine intervals in exts.
func goroutineItems(exts []*analysis.Interval) []int {
	var out []int
	for i, x := range exts {
		if x != nil && x.Kind == analysis.ExtGo {
			out = append(out, i)
		}
	}
	return out
}

// TestGoroutinesRecordIntoTheirDispatch: goroutines a dispatch starts
// record into it, each under the function that started it, with its own
// calls and its wall time.
func TestGoroutinesRecordIntoTheirDispatch(t *testing.T) {
	requireLinked(t)
	o := observeKids(t, Config{})
	before := ReadStats()
	Run("fan", func() {
		Enter(7)
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				Enter(8)
				time.Sleep(50 * time.Millisecond)
				Exit(8)
			}()
		}
		wg.Wait()
		Exit(7)
	})
	res := o.res["fan"]
	gs := goroutines(res)
	if len(gs) != 3 {
		t.Fatalf("%d goroutine items, want 3:\n%s", len(gs), res.Stack)
	}
	for _, g := range gs {
		it := res.Items[g]
		// Under function 7, with a call of 8 as long as the sleep.
		if p := parentItem(res.Items, g); it.Depth != 2 || p < 0 || res.Items[p].ID != 7 {
			t.Errorf("goroutine item %d %v not under function 7:\n%s", g, it, res.Stack)
		}
		if c := childItem(res.Items, g, 8); c < 0 || res.Items[c].Cost < 45 || it.Cost < res.Items[c].Cost {
			t.Errorf("goroutine item %d %v lacks its 50 ms call of 8:\n%s", g, it, res.Stack)
		}
		if x := res.Exts[g]; len(x.PCs) != abi.ExtGoWords || x.PCs[0] == 0 {
			t.Errorf("goroutine interval %+v", x)
		}
	}
	s := ReadStats()
	if s.Children-before.Children != 3 || s.ChildrenLost != before.ChildrenLost {
		t.Errorf("stats before %+v, after %+v", before, s)
	}
	// The goroutines have exited (wg.Wait returns before they do): their
	// buffers go back.
	waitFor(t, "the child buffers to go back", func() bool { return ReadStats().ChildBuffers == before.ChildBuffers })
}

// parentItem returns the index of the parent of pre-order item i, -1 for
// none.
func parentItem(items []analysis.Item, i int) int {
	for j := i - 1; j >= 0; j-- {
		if items[j].Depth < items[i].Depth {
			return j
		}
	}
	return -1
}

// childItem returns the index of the child of item i with the given id,
// -1 for none.
func childItem(items []analysis.Item, i int, id uint32) int {
	for j := i + 1; j < len(items) && items[j].Depth > items[i].Depth; j++ {
		if items[j].Depth == items[i].Depth+1 && items[j].ID == id {
			return j
		}
	}
	return -1
}

// poll polls cond for up to 10 s and reports whether it held.
func poll(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return true
}

// waitFor polls cond for up to 10 s, and fails the test if it never held.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitParked waits, for up to 10 s, until goroutine goid is parked for
// reason ("select", "chan receive", …) as a goroutine dump shows it, and
// reports whether it was. It may run on any goroutine.
func waitParked(goid uint64, reason string) bool {
	head := "goroutine " + strconv.FormatUint(goid, 10) + " [" + reason
	buf := make([]byte, 1<<20)
	return poll(func() bool {
		n := runtime.Stack(buf, true)
		for _, block := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.HasPrefix(block, head+"]") || strings.HasPrefix(block, head+",") {
				return true
			}
		}
		return false
	})
}

// TestGoroutineOutlivesItsDispatch: the dispatch's end does not wait for
// a goroutine it started; its tree so far is in the report, marked
// running, and counted. Parked at the end, or once blocked after it, the
// goroutine stops recording and its buffer goes back.
func TestGoroutineOutlivesItsDispatch(t *testing.T) {
	requireLinked(t)
	o := observeKids(t, Config{})
	before := ReadStats()
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	Run("outlive", func() {
		go func() {
			Enter(9)
			close(started)
			<-release
			Exit(9)
			close(done)
		}()
		<-started
	})
	res := o.res["outlive"]
	gs := goroutines(res)
	if len(gs) != 1 || res.Exts[gs[0]].Reason != abi.ExtGoRunning {
		t.Fatalf("goroutine items %v of %v, want one marked running:\n%s", gs, res.Exts, res.Stack)
	}
	if childItem(res.Items, gs[0], 9) < 0 {
		t.Errorf("the running goroutine's open call of 9 is not in the tree:\n%s", res.Stack)
	}
	if s := ReadStats(); s.ChildrenLate-before.ChildrenLate != 1 {
		t.Errorf("stats before %+v, after %+v", before, s)
	}
	// Parked, or about to park: its buffer goes back without its waking.
	waitFor(t, "the late goroutine's buffer to go back", func() bool { return ReadStats().ChildBuffers == before.ChildBuffers })
	close(release)
	<-done
}

// TestTenThousandGoroutinesInOneDispatch: a fan-out of 10,000 goroutines
// inside one dispatch records MaxChildren of them, counts the rest, holds
// no more child buffers than the bound, and changes nothing the program
// computes.
func TestTenThousandGoroutinesInOneDispatch(t *testing.T) {
	requireLinked(t)
	const n, maxKids, maxBuffers = 10000, 16, 4
	o := observeKids(t, Config{MaxBuffers: maxBuffers, MaxChildren: maxKids, ChildBufferSize: 256})
	before := ReadStats()
	var sum atomic.Int64
	var peak int
	Run("wide", func() {
		var wg sync.WaitGroup
		release := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				Enter(11)
				<-release
				sum.Add(int64(i))
				Exit(11)
			}()
		}
		peak = ReadStats().ChildBuffers
		close(release)
		wg.Wait()
	})
	if want := int64(n * (n - 1) / 2); sum.Load() != want {
		t.Errorf("the goroutines summed %d, want %d", sum.Load(), want)
	}
	if peak > maxBuffers*maxKids || peak < maxKids {
		t.Errorf("%d child buffers held during the fan-out, want %d..%d", peak, maxKids, maxBuffers*maxKids)
	}
	s := ReadStats()
	if s.Children-before.Children != maxKids || s.ChildrenLost-before.ChildrenLost != n-maxKids {
		t.Errorf("children %d recorded, %d lost; want %d and %d", s.Children-before.Children, s.ChildrenLost-before.ChildrenLost, maxKids, n-maxKids)
	}
	if gs := goroutineItems(o.exts["wide"]); len(gs) != maxKids {
		t.Errorf("%d goroutine items, want %d", len(gs), maxKids)
	}
	waitFor(t, "the child buffers to go back", func() bool { return ReadStats().ChildBuffers == before.ChildBuffers })
}

// TestDispatchInsideAGoroutine: a goroutine started inside a dispatch is
// not in it (Current is nil there) and can begin a dispatch of its own,
// after which it records into its own ring again.
func TestDispatchInsideAGoroutine(t *testing.T) {
	requireLinked(t)
	o := observeKids(t, Config{})
	Run("outer", func() {
		Enter(7)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if d := Current(); d != nil {
				t.Errorf("Current() in a goroutine started inside a dispatch = %q, want nil", d.Name())
			}
			Enter(8)
			Run("inner", func() { Enter(9); Exit(9) })
			Exit(8)
		}()
		<-done
		Exit(7)
	})
	inner, outer := o.res["inner"], o.res["outer"]
	if len(inner.Items) != 2 || inner.Items[1].ID != 9 {
		t.Errorf("inner dispatch:\n%s", inner.Stack)
	}
	gs := goroutines(outer)
	if len(gs) != 1 || childItem(outer.Items, gs[0], 8) < 0 {
		t.Fatalf("outer dispatch, want a goroutine item with its call of 8:\n%s", outer.Stack)
	}
	for _, it := range outer.Items {
		if it.ID == 9 {
			t.Errorf("the inner dispatch's call is in the outer tree:\n%s", outer.Stack)
		}
	}
}

// TestParkedForeverGoroutinesReturnTheirBuffers: 1,100 dispatches each
// start a goroutine that parks for good (a connection reader or a watcher
// started lazily in a request). Each goroutine's buffer goes back when its
// dispatch ends, so the process never holds more than the bound, and later
// dispatches still record their goroutines.
func TestParkedForeverGoroutinesReturnTheirBuffers(t *testing.T) {
	requireLinked(t)
	const n = 1100
	o := observeKids(t, Config{MaxBuffers: 4, MaxChildren: 4, ChildBufferSize: 64})
	forever := make(chan struct{})
	var exited sync.WaitGroup
	before := ReadStats()
	defer func() {
		// The goroutines end with the test, and so does what they hold:
		// the next test starts from a process without them.
		close(forever)
		exited.Wait()
		waitFor(t, "the child buffers to go back", func() bool { return ReadStats().ChildBuffers == before.ChildBuffers })
	}()
	for range n {
		Run("park", func() {
			parked := make(chan struct{})
			exited.Add(1)
			go func() {
				defer exited.Done()
				Enter(12)
				close(parked)
				<-forever
				Exit(12)
			}()
			<-parked
			// A moment for it to park on forever.
			runtime.Gosched()
		})
	}
	mid := ReadStats()
	if mid.ChildBuffers > 4*4 {
		t.Errorf("%d child buffers held after %d dispatches, want at most %d", mid.ChildBuffers, n, 4*4)
	}
	if lost := mid.ChildrenLost - before.ChildrenLost; lost != 0 {
		t.Errorf("%d goroutines not recorded", lost)
	}
	Run("later", func() {
		done := make(chan struct{})
		go func() {
			Enter(13)
			Exit(13)
			close(done)
		}()
		<-done
	})
	if lost := ReadStats().ChildrenLost - mid.ChildrenLost; lost != 0 {
		t.Errorf("the later dispatch lost %d goroutines", lost)
	}
	res := o.res["later"]
	if gs := goroutines(res); len(gs) != 1 || childItem(res.Items, gs[0], 13) < 0 {
		t.Errorf("the later dispatch's goroutine is not in its tree:\n%s", res.Stack)
	}
}

// TestWorkerHandedWorkRecordsIntoDispatch: a goroutine that existed before
// the dispatch, parked receiving jobs, records the job a dispatch's send
// hands it into that dispatch, under the function that sent it, and stops
// once it has delivered the answer and blocks again; the dispatch's wait
// for the answer names the worker as its waker. A close wakes the workers
// without handing them work, and a signal to the parent hands it none.
func TestWorkerHandedWorkRecordsIntoDispatch(t *testing.T) {
	requireLinked(t)
	o := observeKids(t, Config{})
	jobs, done := make(chan int), make(chan uint64)
	stop := make(chan struct{})
	workerID := make(chan uint64)
	go func() {
		workerID <- rtGoid()
		for {
			select {
			case <-jobs:
				Enter(12)
				time.Sleep(50 * time.Millisecond)
				Exit(12)
				done <- rtGoid()
			case <-stop:
				return
			}
		}
	}()
	if w := <-workerID; !waitParked(w, "select") {
		t.Fatalf("the worker (goroutine %d) never parked", w)
	}
	before := ReadStats()
	var worker uint64
	Run("handoff", func() {
		Enter(7)
		jobs <- 1
		worker = <-done
		Exit(7)
	})
	res := o.res["handoff"]
	gs := goroutines(res)
	if len(gs) != 1 || !res.Exts[gs[0]].Handoff() {
		t.Fatalf("goroutine items %v, want one handoff:\n%s", gs, res.Stack)
	}
	g := gs[0]
	if p := parentItem(res.Items, g); p < 0 || res.Items[p].ID != 7 {
		t.Errorf("the worker's item is not under function 7:\n%s", res.Stack)
	}
	if c := childItem(res.Items, g, 12); c < 0 || res.Items[c].Cost < 45 {
		t.Errorf("the worker's item lacks its 50 ms call of 12:\n%s", res.Stack)
	}
	var woken bool
	for i, x := range res.Exts {
		if x != nil && x.Kind == analysis.ExtWait && x.Waker != nil && res.Items[i].Cost >= 45 {
			woken = x.Waker.Goid == worker && len(x.Waker.PCs) > 0
		}
	}
	if !woken {
		t.Errorf("no 50 ms wait woken by the worker (goroutine %d):\n%s", worker, res.Stack)
	}
	// Delivered and parked again: its buffer goes back.
	waitFor(t, "the worker's buffer to go back", func() bool { return ReadStats().ChildBuffers == before.ChildBuffers })

	Run("close", func() {
		Enter(7)
		close(stop)
		time.Sleep(10 * time.Millisecond)
		Exit(7)
	})
	if gs := goroutines(o.res["close"]); len(gs) != 0 {
		t.Errorf("a close handed work to %d goroutines:\n%s", len(gs), o.res["close"].Stack)
	}
	// A dispatch's goroutine that wakes the goroutine that started it (a
	// parent waiting for it to finish, as the testing package's runner
	// waits for a test) hands it nothing.
	signal := make(chan int)
	parent := rtGoid()
	go func() {
		Run("signal", func() {
			Enter(7)
			if !waitParked(parent, "chan receive") {
				t.Errorf("the parent (goroutine %d) never parked", parent)
			}
			signal <- 1
			Exit(7)
		})
	}()
	<-signal
	waitFor(t, "the signalling dispatch to end", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		_, ok := o.res["signal"]
		return ok
	})
	o.mu.Lock()
	res = o.res["signal"]
	o.mu.Unlock()
	if gs := goroutines(res); len(gs) != 0 {
		t.Errorf("a signal to the parent handed it work:\n%s", res.Stack)
	}
	if s := ReadStats(); s.Children-before.Children != 1 || s.ChildrenLost != before.ChildrenLost {
		t.Errorf("stats before %+v, after %+v: want one child", before, s)
	}
}

// TestRuntimeGoroutinesAreNoChildren: the goroutines the runtime starts for
// itself from whichever goroutine first needs them (the garbage
// collector's mark workers at the first collection, the finalizer
// goroutine at the first finalizer) are not the dispatch's work, even when
// that goroutine records: they get no child ring and count as no lost
// child, and the dispatch's tree has the one goroutine it started. The
// test runs in a fresh process of its own, with collections off until
// the dispatch asks for one, so that none of them exists before.
func TestRuntimeGoroutinesAreNoChildren(t *testing.T) {
	requireLinked(t)
	if os.Getenv("MATRIX_TEST_FRESH_RUNTIME") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRuntimeGoroutinesAreNoChildren$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MATRIX_TEST_FRESH_RUNTIME=1", "GOGC=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("in a fresh process: %v\n%s", err, out)
		}
		return
	}
	o := observeKids(t, Config{MaxChildren: 16})
	before := ReadStats()
	Run("first", func() {
		runtime.SetFinalizer(new([16]byte), func(*[16]byte) {})
		runtime.GC()
		done := make(chan struct{})
		go func() {
			time.Sleep(5 * time.Millisecond)
			close(done)
		}()
		<-done
	})
	s := ReadStats()
	if s.Children-before.Children != 1 || s.ChildrenLost-before.ChildrenLost != 0 {
		t.Errorf("children %d recorded, %d lost; want the dispatch's own goroutine alone", s.Children-before.Children, s.ChildrenLost-before.ChildrenLost)
	}
	if gs := goroutineItems(o.exts["first"]); len(gs) != 1 {
		var kinds []string
		for _, x := range o.exts["first"] {
			if x != nil {
				kinds = append(kinds, fmt.Sprintf("%v/%d", x.Kind, x.Reason))
			}
		}
		t.Errorf("%d goroutine items, want 1 (the tree %v, its intervals %v)", len(gs), o.res["first"].Items, kinds)
	}
}
