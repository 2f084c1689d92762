package tracer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
	"github.com/matrixgo/matrix/tracer/httptrace"
)

// These tests need the recorder: they run in the binary that TestMain
// builds with -toolexec=matrixexec (integration's linked.txtar runs them
// under -race too). The module's own packages are never instrumented, so
// no function of this binary has an id: that a report's frames name their
// functions, files and lines is checked by the integration scripts, on
// programs built with matrixexec (every script that reads matrixexec show).

// startPlugin starts a TracePlugin through a Matrix, with a recorder
// listener and a JSON listener writing to the returned buffer (read it
// after Stop).
func startPlugin(t *testing.T, cfg TraceConfig) (*TracePlugin, *recorder, *bytes.Buffer) {
	t.Helper()
	requireLinked(t)
	p := NewTracePlugin(cfg)
	var got recorder
	var out bytes.Buffer
	m, err := NewBuilder().Plugin(p).Listener(&got).Listener(NewJSONListener(&out)).Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.StartAllPlugins(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.StopAllPlugins)
	return p, &got, &out
}

func (r *recorder) all() []Issue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Issue(nil), r.issues...)
}

// settled returns frames without the incidental waits a busy machine adds
// to a tree: waits of another reason than the one under test (time
// runnable, a moment stopped for the garbage collector), with the inline
// frames that lead to them.
func settled(frames []Frame, reason string) []Frame {
	incidental := func(f Frame) bool { return f.Kind == FrameWait && f.Reason != reason }
	var out []Frame
	for i, f := range frames {
		if f.Kind == FrameInline {
			j := i
			for j < len(frames) && frames[j].Kind == FrameInline {
				j++
			}
			if j < len(frames) && incidental(frames[j]) {
				continue
			}
		}
		if !incidental(f) {
			out = append(out, f)
		}
	}
	return out
}

// frameIDs returns the ids of the frames that are lines of the report's
// stack (inline frames are not), space-separated.
func frameIDs(frames []Frame) string {
	var ids []string
	for _, f := range frames {
		if f.Kind != FrameInline {
			ids = append(ids, strconv.FormatUint(uint64(f.ID), 10))
		}
	}
	return strings.Join(ids, " ")
}

func stackIDs(stack string) []string {
	var ids []string
	for _, line := range strings.Split(strings.TrimSuffix(stack, "\n"), "\n") {
		if f := strings.Split(line, ","); len(f) == 4 {
			ids = append(ids, f[1])
		}
	}
	return ids
}

func TestSlowDispatchReported(t *testing.T) {
	p, got, out := startPlugin(t, DefaultTraceConfig())
	start := time.Now()
	beat.Run("slow-job", func() {
		beat.Enter(idA)
		beat.Enter(idB)
		time.Sleep(800 * time.Millisecond)
		beat.Exit(idB)
		beat.Exit(idA)
	})
	took := time.Since(start).Milliseconds()
	p.Stop() // delivers everything queued
	issues := got.all()
	if len(issues) != 1 {
		t.Fatalf("got %d issues, want 1: %+v", len(issues), issues)
	}
	is := issues[0]
	c := is.Content
	if is.Tag != TagEvilMethod || c["detail"] != DetailNormal {
		t.Errorf("tag %q detail %v", is.Tag, c["detail"])
	}
	// The key names where the time went: the sleep, in the function that
	// slept (the closure: idB is a hand-made id without a name).
	const sleeper = "github.com/matrixgo/matrix/tracer.TestSlowDispatchReported.func1"
	if is.Key != sleeper+"[sleep]|" || c["stackKey"] != is.Key {
		t.Errorf("key %q stackKey %v, want the sleep in %s\n%v", is.Key, c["stackKey"], sleeper, c["stack"])
	}
	// At least the sleep (less the recorder clock's 10 % slack), at most
	// what the dispatch took on the wall clock (+1 ms of rounding).
	if cost := c["cost"].(int64); cost < 720 || cost > took+1 {
		t.Errorf("cost %d ms, want at least 720 and at most the %d ms the dispatch took", cost, took)
	}
	all := c["frames"].([]Frame)
	if ids := strings.Join(stackIDs(c["stack"].(string)), " "); ids != frameIDs(all) {
		t.Errorf("stack ids %s, frames %s\n%s", ids, frameIDs(all), c["stack"])
	}
	// DISPATCH, idA, idB, the closure that slept (named through the
	// wait's program counters), and the wait.
	frames := settled(all, "sleep")
	if ids := frameIDs(frames); ids != "1048574 1040001 1040002 1048575" {
		t.Errorf("stack ids %s\n%s", ids, c["stack"])
	}
	if len(frames) != 5 || frames[0].Func != "DISPATCH" || frames[2].ID != idB || frames[2].Depth != 2 || frames[2].Cost < 720 ||
		frames[3].Kind != FrameInline || frames[3].Func != sleeper || frames[3].Depth != 3 ||
		frames[4].Kind != FrameWait || frames[4].Reason != "sleep" || frames[4].Func != sleeper || frames[4].Depth != 4 || frames[4].Cost < 720 {
		t.Errorf("frames %+v", frames)
	}
	if c["scene"] != "slow-job" || c["name"] != "slow-job" || c["kind"] != "custom" || c["recorded"] != true {
		t.Errorf("content %v", c)
	}
	if g, ok := c["goroutine"].(uint64); !ok || g == 0 || c["threadId"] != g {
		t.Errorf("goroutine %v threadId %v", c["goroutine"], c["threadId"])
	}
	if id, ok := c["dispatchId"].(uint64); !ok || id == 0 {
		t.Errorf("dispatchId %v", c["dispatchId"])
	}
	if cpuSupported {
		if _, ok := c["cpu"].(int64); !ok {
			t.Errorf("cpu missing: %v", c)
		}
		if u, _ := c["usage"].(string); !strings.HasSuffix(u, "%") {
			t.Errorf("usage %q", u)
		}
	}
	if p.Dropped() != 0 || p.ListenerPanics() != 0 {
		t.Errorf("dropped %d panics %d", p.Dropped(), p.ListenerPanics())
	}
	// The JSON listener wrote the same issue as one line.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("JSON report has %d lines:\n%s", len(lines), out.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m["id"] != is.ID || m["stackKey"] != is.Key || m["tag"] != TagEvilMethod {
		t.Errorf("JSON line %v", m)
	}
	fr, ok := m["frames"].([]any)
	slept := false
	for _, f := range fr {
		f, _ := f.(map[string]any)
		slept = slept || f["kind"] == "wait" && f["reason"] == "sleep"
	}
	if !ok || len(fr) != len(all) || fr[0].(map[string]any)["func"] != "DISPATCH" || fr[0].(map[string]any)["kind"] != nil || !slept {
		t.Errorf("JSON frames %v", m["frames"])
	}
}

// TestFastDispatchNotReported: with a fixed threshold (no floor), a
// dispatch under it is not reported.
func TestFastDispatchNotReported(t *testing.T) {
	cfg := DefaultTraceConfig()
	cfg.EvilFloor = 0
	p, got, _ := startPlugin(t, cfg)
	beat.Run("fast-job", func() {
		beat.Enter(idA)
		time.Sleep(100 * time.Millisecond)
		beat.Exit(idA)
	})
	p.Stop()
	if issues := got.all(); len(issues) != 0 {
		t.Fatalf("a 100ms dispatch was reported: %+v", issues)
	}
}

func TestMiddlewareSceneInIssue(t *testing.T) {
	cfg := DefaultTraceConfig()
	// Wide margins: on a loaded machine the recorder's clock goroutine can
	// lag by tens of milliseconds.
	cfg.EvilThreshold = 200 * time.Millisecond
	p, got, out := startPlugin(t, cfg)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow/{id}", func(w http.ResponseWriter, r *http.Request) {
		beat.Enter(idC)
		time.Sleep(400 * time.Millisecond)
		beat.Exit(idC)
		fmt.Fprint(w, "ok")
	})
	h := httptrace.Middleware(mux)

	// Called directly: the middleware's dispatch.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/slow/kqzv?token=secret", nil))
	if rec.Body.String() != "ok" {
		t.Fatalf("response %q", rec.Body.String())
	}
	// Through a real server: the instrumented net/http server begins a
	// dispatch and the middleware joins it.
	srv := httptest.NewServer(h)
	resp, err := http.Get(srv.URL + "/slow/wxyj?token=secret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	srv.Close()

	p.Stop()
	issues := got.all()
	if len(issues) != 2 {
		t.Fatalf("got %d issues, want one per request: %+v", len(issues), issues)
	}
	for _, is := range issues {
		c := is.Content
		// The handler sleeps: the key names the sleep.
		if c["scene"] != "GET /slow/{id}" || c["kind"] != "http" || c["name"] != "http" || !strings.HasSuffix(is.Key, "[sleep]|") ||
			!strings.Contains(c["stack"].(string), "\n1,1040003,1,") {
			t.Errorf("issue %v", c)
		}
	}
	// The ids are letters that no report field holds by chance (ids,
	// trace ids and costs are decimal or hexadecimal digits).
	for _, leak := range []string{"secret", "token", "kqzv", "wxyj", "/slow/kqzv", "/slow/wxyj"} {
		if strings.Contains(out.String(), leak) {
			t.Errorf("report contains request data %q:\n%s", leak, out.String())
		}
	}
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > want {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines, want %d:\n%s", n, want, buf)
	}
}

// workers counts the tracers' worker goroutines.
func workers() int { return beat.Workers() }

func TestStartStopLeaksNoGoroutine(t *testing.T) {
	requireLinked(t)
	cfg := DefaultTraceConfig()
	cfg.EvilThreshold = time.Millisecond
	cfg.EvilScenes.ReportsPerMinute = -1 // a report per cycle, however many a minute
	p := NewTracePlugin(cfg)
	var got recorder
	p.AddListener(&got)
	// Goroutines of earlier tests (an HTTP client's connections) may
	// still be ending: count once the number has settled.
	before := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == before {
			break
		}
		before = n
	}
	for i := 0; i < 5; i++ {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil { // idempotent
			t.Fatal(err)
		}
		// The workers (delivery, analysis, watchdog, start-up) run on
		// goroutines the program does not see (beat.Go).
		if !beat.Started() || runtime.NumGoroutine() != before || workers() < 4 {
			t.Fatalf("cycle %d: recorder %v, %d goroutines (want %d), %d workers (want delivery, analysis, watchdog, start-up)", i, beat.Started(), runtime.NumGoroutine(), before, workers())
		}
		beat.Run("cycle", func() { beat.Enter(idA); time.Sleep(3 * time.Millisecond); beat.Exit(idA) })
		p.Stop()
		p.Stop() // idempotent
		if beat.Started() {
			t.Fatal("Stop left the recorder running")
		}
		waitGoroutines(t, before)
		for deadline := time.Now().Add(3 * time.Second); workers() > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n := workers(); n > 0 {
			t.Fatalf("cycle %d: %d workers left after Stop", i, n)
		}
	}
	if n := len(got.all()); n != 5 {
		t.Errorf("got %d issues over 5 cycles, want 5", n)
	}
}

func TestConcurrentSlowDispatches(t *testing.T) {
	cfg := DefaultTraceConfig()
	// Long enough that scheduling delays on a loaded machine stay well
	// under 30% of the dispatch, so the key is always the sleeping id.
	cfg.EvilThreshold = 200 * time.Millisecond
	cfg.EvilScenes.ReportsPerMinute = -1 // every dispatch's tree, not 6 a minute
	p, got, _ := startPlugin(t, cfg)
	const n = 50
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := uint32(1040100 + i)
			beat.Run("worker", func() {
				beat.Enter(id)
				time.Sleep(400 * time.Millisecond)
				beat.Exit(id)
			})
		}()
	}
	wg.Wait()
	p.Stop()
	issues := got.all()
	if len(issues) != n {
		t.Fatalf("got %d issues, want %d (dropped %d)", len(issues), n, p.Dropped())
	}
	// Each dispatch's own function is in its own tree (each key names the
	// sleep it made).
	keys := map[string]bool{}
	for _, is := range issues {
		for _, id := range stackIDs(is.Content["stack"].(string)) {
			keys[id+"|"] = true // a wait may come before the function (a park right after Begin)
		}
		if is.Content["recorded"] != true {
			t.Errorf("not recorded: %v", is.Content)
		}
	}
	for i := 0; i < n; i++ {
		if k := fmt.Sprintf("%d|", 1040100+i); !keys[k] {
			t.Errorf("no issue with key %s", k)
		}
	}
}

func TestDispatchWithoutCallTree(t *testing.T) {
	cfg := DefaultTraceConfig()
	cfg.EvilThreshold = 20 * time.Millisecond
	cfg.Beat = beat.Config{BufferSize: 16, MaxBuffers: 1}
	p, got, _ := startPlugin(t, cfg)
	// More calls than the 16-record buffer holds.
	beat.Run("wraps", func() {
		for i := 0; i < 20; i++ {
			beat.Enter(idA)
			beat.Exit(idA)
		}
		time.Sleep(30 * time.Millisecond)
	})
	// No free buffer: the only one is held by another dispatch.
	hold, started, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		beat.Run("holder", func() { close(started); <-hold })
	}()
	<-started
	beat.Run("unbuffered", func() { beat.Enter(idB); time.Sleep(30 * time.Millisecond); beat.Exit(idB) })
	close(hold)
	<-done
	p.Stop()
	notes := map[string]string{}
	for _, is := range got.all() {
		c := is.Content
		if c["name"] == "holder" {
			continue // it waited for the others: slow, and recorded
		}
		if c["recorded"] != false || c["stack"] != "" || is.Key != "" {
			t.Errorf("%v: recorded %v stack %q", c["name"], c["recorded"], c["stack"])
		}
		notes[c["name"].(string)], _ = c["note"].(string)
	}
	if !strings.Contains(notes["wraps"], "MATRIX_BUFFER_SIZE") || !strings.Contains(notes["unbuffered"], "MATRIX_MAX_BUFFERS") {
		t.Errorf("notes %q", notes)
	}
}

func TestHotPathAllocs(t *testing.T) {
	p, got, _ := startPlugin(t, DefaultTraceConfig())
	tr := p.Tracer(EvilMethodTracerName).(*EvilMethodTracer)
	d := beat.Begin(beat.KindCustom, "held")
	if a := testing.AllocsPerRun(1000, func() { tr.DispatchBegin(d); tr.DispatchEnd(d) }); a != 0 {
		t.Errorf("the tracer's DispatchBegin+DispatchEnd of a fast dispatch allocate %.1f times", a)
	}
	d.End()
	if raceEnabled {
		t.Log("race detector: sync.Pool drops objects, whole-dispatch allocations not checked")
	} else {
		a := testing.AllocsPerRun(1000, func() {
			d := beat.Begin(beat.KindCustom, "fast")
			beat.Enter(idA)
			beat.Exit(idA)
			d.End()
		})
		// The Dispatch itself: dispatches are not pooled, so that a
		// late End through a stale pointer can never end another one.
		if a > 1 {
			t.Errorf("a fast dispatch with the plugin running allocates %.1f times, want at most the Dispatch", a)
		}
	}
	p.Stop()
	if n := len(got.all()); n != 0 {
		t.Errorf("%d issues from fast dispatches", n)
	}
}

// BenchmarkFastDispatch measures a dispatch under the threshold with and
// without the plugin's tracers observing it, and with them on every P at
// once.
func BenchmarkFastDispatch(b *testing.B) {
	requireLinked(b)
	run := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := beat.Begin(beat.KindCustom, "fast")
			beat.Enter(idA)
			beat.Exit(idA)
			d.End()
		}
	}
	b.Run("recorder", func(b *testing.B) {
		if err := beat.Start(beat.Config{}); err != nil {
			b.Fatal(err)
		}
		defer beat.Stop()
		run(b)
	})
	b.Run("plugin", func(b *testing.B) {
		p := NewTracePlugin(DefaultTraceConfig())
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		defer p.Stop()
		run(b)
	})
	// Every P at once, as a server's requests of one route: what the
	// dispatches' shared state costs (-cpu 1,2,…).
	b.Run("plugin-parallel", func(b *testing.B) {
		p := NewTracePlugin(DefaultTraceConfig())
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		defer p.Stop()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d := beat.Begin(beat.KindCustom, "fast")
				beat.Enter(idA)
				beat.Exit(idA)
				d.End()
			}
		})
	})
}

// BenchmarkSlowDispatchCopy measures the dispatching goroutine's share of a
// slow dispatch: the copy of its records and the hand-over.
func BenchmarkSlowDispatchCopy(b *testing.B) {
	requireLinked(b)
	cfg := DefaultTraceConfig()
	cfg.EvilThreshold = time.Nanosecond
	cfg.QueueSize = 1 << 20
	cfg.AnalysisBacklog = 1 << 16
	p := NewTracePlugin(cfg)
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	b.ReportAllocs()
	for b.Loop() {
		d := beat.Begin(beat.KindCustom, "slow")
		for i := 0; i < 50; i++ {
			beat.Enter(idA)
			beat.Exit(idA)
		}
		d.End()
	}
}

// TestPanicRecoveredTwoFramesUp records what instrumented code records when
// a panic is recovered two frames above its origin inside a dispatch:
// functions record their exit at their returns, so the two frames the panic
// unwinds (idB and idC) have no exit; the recovering frame (idA, which
// defers, and so keeps a deferred exit) has one. The report's tree keeps
// every frame at its depth with a cost no smaller than its child's, and the
// call that follows the recovery (idD) is idA's sibling, not a child of the
// unwound frames.
func TestPanicRecoveredTwoFramesUp(t *testing.T) {
	const idD = 1040004
	cfg := DefaultTraceConfig()
	cfg.EvilThreshold = 100 * time.Millisecond
	p, got, _ := startPlugin(t, cfg)
	inner := func() {
		beat.Enter(idC)
		time.Sleep(150 * time.Millisecond)
		panic("boom")
	}
	middle := func() {
		beat.Enter(idB)
		inner()
		beat.Exit(idB)
	}
	outer := func() (recovered any) {
		beat.Enter(idA)
		defer beat.Exit(idA)
		defer func() { recovered = recover() }()
		middle()
		return nil
	}
	var recovered any
	beat.Run("panics", func() {
		recovered = outer()
		beat.Enter(idD)
		time.Sleep(10 * time.Millisecond)
		beat.Exit(idD)
	})
	p.Stop()
	if recovered != "boom" {
		t.Fatalf("recovered %v", recovered)
	}
	issues := got.all()
	if len(issues) != 1 {
		t.Fatalf("%d issues, want 1: %+v", len(issues), issues)
	}
	c := issues[0].Content
	// The calls; the sleeps are waits under them (with the closures that
	// slept named as inline frames), left out here.
	var frames []Frame
	var shape []string
	for _, f := range c["frames"].([]Frame) {
		if f.Kind == "" {
			frames = append(frames, f)
			shape = append(shape, fmt.Sprintf("%d:%d", f.Depth, f.ID))
		}
	}
	want := fmt.Sprintf("0:%d 1:%d 2:%d 3:%d 1:%d", analysis.Dispatch, idA, idB, idC, idD)
	if got := strings.Join(shape, " "); got != want {
		t.Fatalf("tree %s, want %s\n%s", got, want, c["stack"])
	}
	// Each frame costs at least its child; the sleeping frame at least
	// its sleep, less the recorder clock's 10 % slack (on a loaded machine
	// its thread can be descheduled, and an exit stamped with a stale
	// time); the dispatch at least both frames.
	if frames[3].Cost < 135 || frames[2].Cost < frames[3].Cost || frames[1].Cost < frames[2].Cost ||
		frames[0].Cost < frames[1].Cost+frames[4].Cost {
		t.Errorf("costs %+v\n%s", frames, c["stack"])
	}
	// The key names the sleep of the frame that panicked.
	if k := issues[0].Key; !strings.HasPrefix(k, "github.com/matrixgo/matrix/tracer.TestPanicRecoveredTwoFramesUp.func") || !strings.HasSuffix(k, "[sleep]|") {
		t.Errorf("key %q, want the sleep of the frame that panicked\n%s", k, c["stack"])
	}
}

// TestWorkersAreSystemGoroutines: the tracers' workers (the queue's
// delivery loop, the slow-call analysis, the watchdog, the start-up
// tracer) are goroutines of the monitor's own (beat.Go), which the program
// does not see: runtime.NumGoroutine does not count them and
// runtime.Stack(all) does not show them, so a test suite's leak check run
// with every test recorded finds the goroutines it would without Matrix.
func TestWorkersAreSystemGoroutines(t *testing.T) {
	requireLinked(t)
	// Goroutines of the tests before may still be ending: the count must
	// stay the same across a start in one of a few tries, where workers
	// that counted would change it in every one.
	var counts []string
	for range 5 {
		before := runtime.NumGoroutine()
		p := NewTracePlugin(DefaultTraceConfig())
		m, err := NewBuilder().Plugin(p).Listener(ListenerFunc(func(Issue) {})).Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.StartAllPlugins(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		after := runtime.NumGoroutine()
		m.StopAllPlugins()
		for _, worker := range []string{"(*queue).deliverLoop", "(*EvilMethodTracer).run", "(*ANRTracer).run", "(*StartupTracer).run"} {
			if strings.Contains(stacks, worker) {
				t.Fatalf("runtime.Stack(all) shows the worker %s:\n%s", worker, stacks)
			}
		}
		if after == before {
			return
		}
		counts = append(counts, fmt.Sprintf("%d before, %d with the tracers running", before, after))
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("runtime.NumGoroutine changed when the tracers started, in every try: %s", strings.Join(counts, "; "))
}
