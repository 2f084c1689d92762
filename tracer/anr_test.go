package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
)

// Tests of the lag/ANR watchdog. The ones that need running dispatches
// need the recorder: TestMain runs them in a linked binary.

func TestGoroutineBlock(t *testing.T) {
	dump := []byte("goroutine 7 [running]:\nmain.main()\n\t/src/main.go:5 +0x1\n\n" +
		"goroutine 12 [chan receive, 2 minutes]:\nmain.wait(...)\n\t/src/main.go:9\n" +
		"created by main.start in goroutine 7\n\t/src/main.go:20 +0x2\n\n" +
		"goroutine 123 gp=0xc000 m=nil [select]:\nmain.loop()\n\t/src/main.go:30 +0x3\n" +
		"created by main.start in goroutine 12\n\t/src/main.go:21 +0x4\n")
	for _, tc := range []struct {
		goid uint64
		want string
	}{
		{7, "goroutine 7 [running]:\nmain.main()\n\t/src/main.go:5 +0x1"},
		{12, "goroutine 12 [chan receive, 2 minutes]:\nmain.wait(...)\n\t/src/main.go:9\ncreated by main.start in goroutine 7\n\t/src/main.go:20 +0x2"},
		{123, "goroutine 123 gp=0xc000 m=nil [select]:\nmain.loop()\n\t/src/main.go:30 +0x3\ncreated by main.start in goroutine 12\n\t/src/main.go:21 +0x4"},
		{1, ""},
		{2, ""},
		{0, ""},
	} {
		if got := goroutineBlock(dump, tc.goid); got != tc.want {
			t.Errorf("goroutine %d: got\n%q\nwant\n%q", tc.goid, got, tc.want)
		}
	}
	// "created by … in goroutine 99" alone is not goroutine 99's block.
	if got := goroutineBlock([]byte("goroutine 5 [running]:\ncreated by x in goroutine 99 [\n"), 99); got != "" {
		t.Errorf("matched a created-by line: %q", got)
	}
}

// goid returns the calling goroutine's id from its stack header.
func goid(t testing.TB) uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	if len(f) < 2 {
		t.Fatalf("stack header %q", buf)
	}
	id, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

//go:noinline
func parkedForTest(ch chan struct{}) { <-ch }

func TestStackDumpFindsGoroutine(t *testing.T) {
	ch, ids := make(chan struct{}), make(chan uint64)
	go func() { ids <- goid(t); parkedForTest(ch) }()
	id := <-ids
	defer close(ch)
	var block string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		dump, complete := stackDump(nil)
		if !complete {
			t.Fatal("dump incomplete")
		}
		if block = goroutineBlock(dump, id); strings.Contains(block, "[chan receive") {
			break
		}
	}
	if !strings.HasPrefix(block, "goroutine "+strconv.FormatUint(id, 10)+" [chan receive") ||
		!strings.Contains(block, "tracer.parkedForTest(") || !strings.Contains(block, "anr_test.go:") {
		t.Errorf("block of goroutine %d:\n%s", id, block)
	}
	// A small buffer grows.
	dump, complete := stackDump(make([]byte, 10))
	if !complete || !bytes.HasPrefix(dump, []byte("goroutine ")) {
		t.Errorf("grown dump complete=%v %q", complete, dump[:min(len(dump), 40)])
	}
}

func TestBlockedIn(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"goroutine 9 [sync.Mutex.Lock]:\ninternal/sync.runtime_SemacquireMutex(0xc0001?, 0x0?, 0x1?)\n\t/go/src/runtime/sema.go:95 +0x25\n" +
			"internal/sync.(*Mutex).lockSlow(0xc000012345)\n\t/go/src/internal/sync/mutex.go:149 +0x15d\n" +
			"sync.(*Mutex).Lock(...)\n\t/go/src/sync/mutex.go:46\n" +
			"main.(*inventory).reserve(0xc00001, {0x6fa1b2, 0x6})\n\t/src/stuck/main.go:170 +0x9d\n" +
			"main.newMux.func3({0x7a, 0xc0}, 0xc0)\n\t/src/stuck/main.go:90 +0x1b9\n" +
			"created by net/http.(*Server).Serve in goroutine 1\n\t/go/src/net/http/server.go:3454 +0x485",
			"main.(*inventory).reserve"},
		{"goroutine 5 [select]:\ntime.Sleep(0x3b9aca00)\n\t/go/src/runtime/time.go:363 +0x165\n" +
			"github.com/acme/svc/db.(*Client).query(...)\n\t/src/db/db.go:12\n", "github.com/acme/svc/db.(*Client).query"},
		{"goroutine 5 [chan receive]:\nnet/http.(*conn).serve(0xc0)\n\t/go/src/net/http/server.go:2100 +0x1\ncreated by main.main in goroutine 1\n\t/src/main.go:3 +0x1", ""},
		{"", ""},
	} {
		if got := blockedIn(tc.block); got != tc.want {
			t.Errorf("blockedIn = %q, want %q\n%s", got, tc.want, tc.block)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	line := "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 30 10 7 0 123 456 789 18446744073709551615\n"
	p, n, ok := parseProcStat([]byte(line))
	if !ok || p != 30 || n != 10 {
		t.Errorf("got %d %d %v, want 30 10 true", p, n, ok)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 x y 1"} {
		if _, _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if p, n, ok := processPriority(); runtime.GOOS == "linux" && (!ok || n < -20 || n > 19 || p < -100 || p > 139) {
		t.Errorf("processPriority() = %d %d %v", p, n, ok)
	}
}

func TestMetrics(t *testing.T) {
	m := newMetricsReader()
	mem := m.memory()
	for _, k := range []string{MemHeap, MemStacks, MemTotal, MemHeapGoal} {
		if mem[k] == 0 {
			t.Errorf("memory[%s] = 0: %v", k, mem)
		}
	}
	if mem[MemTotal] < mem[MemHeap] {
		t.Errorf("total < heap: %v", mem)
	}
	before, procs := m.gc()
	if procs != runtime.GOMAXPROCS(0) {
		t.Errorf("gomaxprocs %d, want %d", procs, runtime.GOMAXPROCS(0))
	}
	runtime.GC()
	after, _ := m.gc()
	if after.cycles <= before.cycles || after.pauseCPU <= before.pauseCPU {
		t.Errorf("a GC changed nothing: %+v → %+v", before, after)
	}
	if ms := gcPauseMs(before, after, procs); ms <= 0 || ms > 1000 {
		t.Errorf("gcPauseMs %v", ms)
	}
	if ms := gcPauseMs(gcCounters{pauseCPU: 0.004}, gcCounters{pauseCPU: 0.010}, 4); ms != 1.5 {
		t.Errorf("gcPauseMs 6 ms of CPU on 4 Ps = %v, want 1.5", ms)
	}
	if ms := gcPauseMs(after, before, procs); ms != 0 {
		t.Errorf("backwards: %v", ms)
	}
	if a := testing.AllocsPerRun(100, func() { m.gc() }); a != 0 {
		t.Errorf("a tick's metrics read allocates %.1f times", a)
	}
}

func TestHistorySince(t *testing.T) {
	var h history
	if _, ok := h.since(0); ok {
		t.Fatal("empty history returned a sample")
	}
	for i := 1; i <= historySize+10; i++ {
		h.push(tickSample{at: time.Duration(i) * time.Second, completed: uint64(i)})
	}
	for _, tc := range []struct {
		at   time.Duration
		want uint64
	}{
		{0, 11},                               // older than the ring: the oldest
		{500 * time.Second, 500},              // exact
		{500*time.Second + 1, 501},            // the next tick
		{time.Hour, uint64(historySize + 10)}, // after the newest: the newest
	} {
		if s, ok := h.since(tc.at); !ok || s.completed != tc.want {
			t.Errorf("since(%v) = %d, want %d", tc.at, s.completed, tc.want)
		}
	}
}

func TestEnvDynamicConfig(t *testing.T) {
	dc := EnvDynamicConfig(env(map[string]string{
		"MATRIX_LAG_MS": " 300 ", "MATRIX_ANR": "off", "MATRIX_FOO_BAR": "x", "MATRIX_ANR_MS": "",
	}))
	for key, want := range map[string]string{DynLagMs: "300", DynANREnabled: "off", "foo_bar": "x"} {
		if v, ok := dc.Get(key); !ok || v != want {
			t.Errorf("Get(%q) = %q %v, want %q", key, v, ok, want)
		}
	}
	if v, ok := dc.Get(DynANRMs); ok {
		t.Errorf("empty variable is set: %q", v)
	}
}

func TestANRSettings(t *testing.T) {
	var mu sync.Mutex
	vals := map[string]string{}
	set := func(k, v string) { mu.Lock(); vals[k] = v; mu.Unlock() }
	dc := DynamicConfigFunc(func(k string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if k == "panic" || vals["panic"] != "" {
			panic("broken config")
		}
		v, ok := vals[k]
		return v, ok
	})
	tr := NewANRTracer(ANRConfig{Lag: 300 * time.Millisecond, Dynamic: dc})
	check := func(on bool, lag, anr time.Duration) {
		t.Helper()
		gotOn, gotLag, gotANR := tr.Settings()
		if gotOn != on || gotLag != lag || gotANR != anr {
			t.Errorf("settings %v %v %v, want %v %v %v", gotOn, gotLag, gotANR, on, lag, anr)
		}
	}
	check(true, 300*time.Millisecond, DefaultANRThreshold)
	tr.SetANRThreshold(time.Second)
	tr.SetEnabled(false)
	check(false, 300*time.Millisecond, time.Second)
	set(DynANREnabled, "on")
	set(DynLagMs, "1500")
	set(DynANRMs, "4000")
	check(true, 1500*time.Millisecond, 4*time.Second)
	// Bad values leave the code's values in force.
	set(DynANREnabled, "perhaps")
	set(DynLagMs, "-3")
	set(DynANRMs, "soon")
	check(false, 300*time.Millisecond, time.Second)
	// A panicking source too.
	set("panic", "yes")
	tr.SetEnabled(true)
	check(true, 300*time.Millisecond, time.Second)
	if tr.Name() != "LooperAnrTracer" {
		t.Errorf("name %q", tr.Name())
	}
}

func TestConfigFromEnvANR(t *testing.T) {
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ANR || cfg.Watchdog.Lag != 2*time.Second || cfg.Watchdog.ANR != 5*time.Second || cfg.Dynamic == nil {
		t.Errorf("defaults: ANR %v %+v dynamic %v", cfg.ANR, cfg.Watchdog, cfg.Dynamic)
	}
	e := map[string]string{"MATRIX_ANR": "off", "MATRIX_LAG_MS": "250", "MATRIX_ANR_MS": "900"}
	cfg, err = ConfigFromEnv(env(e))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ANR || cfg.Watchdog.Lag != 250*time.Millisecond || cfg.Watchdog.ANR != 900*time.Millisecond {
		t.Errorf("got ANR %v %+v", cfg.ANR, cfg.Watchdog)
	}
	// The environment stays the dynamic configuration.
	e["MATRIX_LAG_MS"] = "777"
	if v, ok := cfg.Dynamic.Get(DynLagMs); !ok || v != "777" {
		t.Errorf("dynamic lag_ms %q %v", v, ok)
	}
	for _, tc := range []struct{ name, value string }{
		{"MATRIX_ANR", "sometimes"},
		{"MATRIX_LAG_MS", "2s"},
		{"MATRIX_LAG_MS", "0"},
		{"MATRIX_ANR_MS", "-1"},
		{"MATRIX_ANR_MS", "999999999999"},
	} {
		_, err := ConfigFromEnv(env(map[string]string{tc.name: tc.value}))
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%q: error %v", tc.name, tc.value, err)
		}
	}
	_, err = ConfigFromEnv(env(map[string]string{"MATRIX_LAG_MS": "x"}))
	var numErr *strconv.NumError
	if !errors.As(err, &numErr) {
		t.Errorf("error %v does not wrap the parse error", err)
	}
}

func TestPluginHasANRTracer(t *testing.T) {
	p := NewTracePlugin(DefaultTraceConfig())
	if _, ok := p.Tracer(ANRTracerName).(*ANRTracer); !ok {
		t.Errorf("the default plugin has no %s: %v", ANRTracerName, p.Tracers())
	}
	cfg := DefaultTraceConfig()
	cfg.ANR = false
	if tr := NewTracePlugin(cfg).Tracer(ANRTracerName); tr != nil {
		t.Errorf("ANR off, still a %s", ANRTracerName)
	}
	// The plugin's Dynamic reaches the watchdog.
	cfg = DefaultTraceConfig()
	cfg.Dynamic = DynamicConfigFunc(func(k string) (string, bool) { return "1234", k == DynLagMs })
	tr := NewTracePlugin(cfg).Tracer(ANRTracerName).(*ANRTracer)
	if _, lag, _ := tr.Settings(); lag != 1234*time.Millisecond {
		t.Errorf("lag %v, want the dynamic 1.234s", lag)
	}
	cfg.Watchdog.Period = -time.Second
	if err := NewTracePlugin(cfg).Init(); err == nil || !strings.Contains(err.Error(), "Watchdog.Period") {
		t.Errorf("negative period: %v", err)
	}
}

// countReporter is a Reporter that keeps what it gets.
type countReporter struct {
	mu     sync.Mutex
	issues []Issue
}

func (r *countReporter) Report(is Issue) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issues = append(r.issues, is)
	return true
}

func (r *countReporter) all() []Issue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Issue(nil), r.issues...)
}

// watchdogs counts the tracers' worker goroutines (beat.Workers; under
// matrixexec no stack dump shows them): in TestANRTracerStartStop, the
// watchdog alone.
func watchdogs() int { return beat.Workers() }

// The watchdog goroutine starts and stops with the tracer, leaving none
// behind, and ticks in between.
func TestANRTracerStartStop(t *testing.T) {
	tr := NewANRTracer(ANRConfig{Period: 5 * time.Millisecond})
	if err := tr.Start(nil); err == nil {
		t.Error("started without a reporter")
	}
	var r countReporter
	for i := 0; i < 5; i++ {
		if err := tr.Start(&r); err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(&r); err != nil { // idempotent
			t.Fatal(err)
		}
		if n := watchdogs(); n != 1 {
			t.Errorf("cycle %d: %d watchdog goroutines, want 1", i, n)
		}
		ticks := tr.Stats().Ticks
		for deadline := time.Now().Add(5 * time.Second); tr.Stats().Ticks < ticks+2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		tr.Stop()
		tr.Stop() // idempotent
		n := watchdogs()
		for deadline := time.Now().Add(time.Second); n != 0 && time.Now().Before(deadline); n = watchdogs() {
			time.Sleep(time.Millisecond) // Stop returned: it is on its way out
		}
		if n != 0 {
			t.Errorf("cycle %d: %d watchdog goroutines after Stop", i, n)
		}
	}
	if s := tr.Stats(); s.Ticks < 10 || s.Panics != 0 {
		t.Errorf("stats %+v", s)
	}
}

// A tick that panics (here: a DynamicConfig that panics is recovered by
// safeGet; a nil reporter is not) is counted and the watchdog goes on.
func TestWatchdogTickPanicRecovered(t *testing.T) {
	tr := NewANRTracer(ANRConfig{})
	w := newWatchdog(tr, nil)
	w.m = nil // reading the metrics panics
	w.safeTick(time.Now(), 0)
	if s := tr.Stats(); s.Panics != 1 || s.Ticks != 1 {
		t.Errorf("stats %+v", s)
	}
}

// ---- with the recorder ----

// stuckDispatch runs a dispatch named name on a new goroutine: it enters
// idA and idB and parks in parkedForTest until release is closed. It
// returns once the dispatch has begun.
func stuckDispatch(name string, release chan struct{}) (done chan struct{}) {
	done = make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		beat.Run(name, func() {
			close(started)
			beat.Enter(idA)
			beat.Enter(idB)
			parkedForTest(release)
			beat.Exit(idB)
			beat.Exit(idA)
		})
	}()
	<-started
	return done
}

func byDetail(issues []Issue) map[string][]Issue {
	m := map[string][]Issue{}
	for _, is := range issues {
		d, _ := is.Content["detail"].(string)
		m[d] = append(m[d], is)
	}
	return m
}

func TestLagAndANRReported(t *testing.T) {
	cfg := DefaultTraceConfig()
	cfg.EvilMethod = false
	cfg.FPS = false
	cfg.Watchdog = ANRConfig{Lag: 200 * time.Millisecond, ANR: 500 * time.Millisecond}
	p, got, _ := startPlugin(t, cfg)

	// Fast dispatches keep ending meanwhile: the process is serving, and
	// none of them waits for the watchdog.
	stopFast := make(chan struct{})
	var fastMax atomic.Int64
	var fastN atomic.Int64
	fastDone := make(chan struct{})
	go func() {
		defer close(fastDone)
		for {
			select {
			case <-stopFast:
				return
			default:
			}
			start := time.Now()
			beat.Run("fast", func() { beat.Enter(idC); beat.Exit(idC) })
			if d := int64(time.Since(start)); d > fastMax.Load() {
				fastMax.Store(d)
			}
			fastN.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()

	release := make(chan struct{})
	stuck := stuckDispatch("stuck-job", release)
	lagOnly := make(chan struct{})
	go func() {
		defer close(lagOnly)
		beat.Run("lag-job", func() { beat.Enter(idC); time.Sleep(350 * time.Millisecond); beat.Exit(idC) })
	}()
	time.Sleep(800 * time.Millisecond)
	close(release)
	<-stuck
	<-lagOnly
	time.Sleep(300 * time.Millisecond) // more ticks: no second report
	close(stopFast)
	<-fastDone
	p.Stop()

	tr := p.Tracer(ANRTracerName).(*ANRTracer)
	issues := byDetail(got.all())
	if len(issues[DetailLag]) != 2 || len(issues[DetailANR]) != 1 || len(got.all()) != 3 {
		t.Fatalf("got %d LAG, %d ANR, %d in all; want 2, 1, 3: %v", len(issues[DetailLag]), len(issues[DetailANR]), len(got.all()), got.all())
	}
	if s := tr.Stats(); s.Lags != 2 || s.ANRs != 1 || s.DroppedLate != 0 || s.Panics != 0 {
		t.Errorf("stats %+v", s)
	}
	lags := map[string]Issue{}
	for _, is := range issues[DetailLag] {
		lags[is.Content["scene"].(string)] = is
	}
	for name, is := range lags {
		c := is.Content
		if is.Tag != TagEvilMethod || c["name"] != name || c["kind"] != "custom" {
			t.Errorf("LAG %s: tag %q key %q content %v", name, is.Tag, is.Key, c)
		}
		// Past the LAG threshold; and a LAG is what a dispatch is before
		// it is an ANR.
		if cost := c["cost"].(int64); cost < 200 || cost >= 500 {
			t.Errorf("LAG %s cost %d, want at least the LAG threshold 200 and below the ANR threshold 500", name, cost)
		}
		if g, ok := c["threadId"].(uint64); !ok || g == 0 || c["goroutine"] != g ||
			!strings.HasPrefix(c["threadStack"].(string), "goroutine "+strconv.FormatUint(g, 10)+" [") {
			t.Errorf("LAG %s threadId %v threadStack %q", name, c["threadId"], c["threadStack"])
		}
		if c["serving"] != true || c["served"].(uint64) == 0 || c["running"].(int) < 1 || c["goroutines"].(int) < 3 {
			t.Errorf("LAG %s serving %v served %v running %v goroutines %v", name, c["serving"], c["served"], c["running"], c["goroutines"])
		}
		if _, ok := c["stack"]; ok {
			t.Errorf("LAG %s carries a call tree", name)
		}
	}
	if ts := lags["stuck-job"].Content["threadStack"].(string); !strings.Contains(ts, "[chan receive") || !strings.Contains(ts, "tracer.parkedForTest(") {
		t.Errorf("LAG threadStack does not show where it is blocked:\n%s", ts)
	}
	if ts := lags["lag-job"].Content["threadStack"].(string); !strings.Contains(ts, "time.Sleep") {
		t.Errorf("LAG threadStack of the sleeper:\n%s", ts)
	}
	// Keys: where the program is stuck.
	if k := lags["stuck-job"].Key; k != "github.com/matrixgo/matrix/tracer.parkedForTest" {
		t.Errorf("LAG key of the stuck job %q", k)
	}
	if k := lags["lag-job"].Key; !strings.HasPrefix(k, "github.com/matrixgo/matrix/tracer.TestLagAndANRReported") {
		t.Errorf("LAG key of the sleeper %q", k)
	}

	is := issues[DetailANR][0]
	c := is.Content
	// The LAG and the ANR of one dispatch carry its number; another
	// dispatch has another.
	if id, ok := c["dispatchId"].(uint64); !ok || id == 0 || lags["stuck-job"].Content["dispatchId"] != id || lags["lag-job"].Content["dispatchId"] == id {
		t.Errorf("dispatchId: ANR %v, its LAG %v, the other LAG %v", c["dispatchId"], lags["stuck-job"].Content["dispatchId"], lags["lag-job"].Content["dispatchId"])
	}
	// The key names the wait the job is stuck in, where it parked.
	const parked = "github.com/matrixgo/matrix/tracer.parkedForTest"
	if is.Tag != TagEvilMethod || c["scene"] != "stuck-job" || is.Key != parked+"[chan receive]|" || c["stackKey"] != is.Key {
		t.Errorf("ANR tag %q scene %v key %q stackKey %v", is.Tag, c["scene"], is.Key, c["stackKey"])
	}
	frames := settled(c["frames"].([]Frame), "chan receive")
	if ids := frameIDs(frames); ids != "1048574 1040001 1040002 1048575" {
		t.Errorf("ANR stack ids %s\n%s", ids, c["stack"])
	}
	if cost := c["cost"].(int64); cost < 500 || cost > 750 {
		t.Errorf("ANR cost %d, want 500..750", cost)
	}
	// The tree ends in the open wait, under the function that parked.
	if len(frames) != 5 || frames[0].Func != "DISPATCH" || frames[2].ID != idB || frames[2].Cost < 450 ||
		frames[3].Kind != FrameInline || frames[3].Func != parked ||
		frames[4].Kind != FrameWait || frames[4].Reason != "chan receive" || frames[4].Func != parked || frames[4].Cost < 450 {
		t.Errorf("ANR frames %+v", frames)
	}
	if c["recorded"] != true || c["note"] != nil {
		t.Errorf("ANR recorded %v note %v", c["recorded"], c["note"])
	}
	if ts := c["threadStack"].(string); !strings.Contains(ts, "[chan receive") || !strings.Contains(ts, "tracer.parkedForTest(") {
		t.Errorf("ANR threadStack:\n%s", ts)
	}
	mem := c["memory"].(map[string]uint64)
	if mem[MemHeap] == 0 || mem[MemStacks] == 0 || mem[MemTotal] < mem[MemHeap] {
		t.Errorf("ANR memory %v", mem)
	}
	if runtime.GOOS == "linux" {
		if _, ok := c["processNice"].(int); !ok {
			t.Errorf("ANR processNice %v", c["processNice"])
		}
		if _, ok := c["processPriority"].(int); !ok {
			t.Errorf("ANR processPriority %v", c["processPriority"])
		}
	}
	if ms, ok := c["gcPauseMs"].(float64); !ok || ms < 0 {
		t.Errorf("ANR gcPauseMs %v", c["gcPauseMs"])
	}
	if _, ok := c["gcCycles"].(uint64); !ok {
		t.Errorf("ANR gcCycles %v", c["gcCycles"])
	}
	if c["serving"] != true || c["goroutines"].(int) < 3 {
		t.Errorf("ANR serving %v goroutines %v", c["serving"], c["goroutines"])
	}
	if fastN.Load() < 100 {
		t.Errorf("only %d fast dispatches ran", fastN.Load())
	}
	// A fast dispatch that had waited for the watchdog past the LAG
	// threshold would be a third LAG above; how long the others took is
	// only logged.
	t.Logf("%d fast dispatches, the slowest %v", fastN.Load(), time.Duration(fastMax.Load()))
}

// A tick 6 s late (the process was frozen) drops its ANR reports for good,
// as Matrix does; the LAG report stays.
func TestANRDroppedWhenWatchdogLate(t *testing.T) {
	requireLinked(t)
	if err := beat.Start(beat.Config{}); err != nil {
		t.Fatal(err)
	}
	defer beat.Stop()
	tr := NewANRTracer(ANRConfig{Lag: 50 * time.Millisecond, ANR: 100 * time.Millisecond})
	var r countReporter
	w := newWatchdog(tr, &r)
	release := make(chan struct{})
	done := stuckDispatch("frozen", release)
	// Ticks 150 ms on: past both thresholds.
	later := time.Now().Add(150 * time.Millisecond)
	w.tick(later, 7*time.Second)
	w.tick(later, 0)
	close(release)
	<-done
	issues := byDetail(r.all())
	if len(issues[DetailLag]) != 1 || len(issues[DetailANR]) != 0 {
		t.Errorf("got %d LAG %d ANR, want 1 0", len(issues[DetailLag]), len(issues[DetailANR]))
	}
	if s := tr.Stats(); s.DroppedLate != 1 || s.MaxLate != 7*time.Second || s.ANRs != 0 {
		t.Errorf("stats %+v", s)
	}

	// 5.9 s late is not frozen.
	w = newWatchdog(tr, &r)
	release = make(chan struct{})
	done = stuckDispatch("late-but-not-frozen", release)
	w.tick(time.Now().Add(150*time.Millisecond), 5900*time.Millisecond)
	close(release)
	<-done
	if n := len(byDetail(r.all())[DetailANR]); n != 1 {
		t.Errorf("%d ANR after a 5.9 s late tick, want 1", n)
	}
}

// Switched off at run time (DynamicConfig), the watchdog reports nothing;
// switched on again, it reports the dispatches still running.
func TestANRDynamicSwitch(t *testing.T) {
	requireLinked(t)
	if err := beat.Start(beat.Config{}); err != nil {
		t.Fatal(err)
	}
	defer beat.Stop()
	var on atomic.Bool
	tr := NewANRTracer(ANRConfig{Lag: 50 * time.Millisecond, ANR: 100 * time.Millisecond,
		Dynamic: DynamicConfigFunc(func(k string) (string, bool) {
			if k == DynANREnabled {
				return strconv.FormatBool(on.Load()), true
			}
			return "", false
		})})
	var r countReporter
	w := newWatchdog(tr, &r)
	release := make(chan struct{})
	done := stuckDispatch("switched", release)
	later := time.Now().Add(150 * time.Millisecond)
	w.tick(later, 0)
	if n := len(r.all()); n != 0 {
		t.Errorf("switched off: %d issues", n)
	}
	on.Store(true)
	w.tick(later, 0)
	w.tick(later, 0)
	close(release)
	<-done
	if issues := byDetail(r.all()); len(issues[DetailLag]) != 1 || len(issues[DetailANR]) != 1 {
		t.Errorf("switched on: %v", r.all())
	}
}

// A dispatch without a buffer still gets its LAG and ANR, without a tree.
func TestANRWithoutCallTree(t *testing.T) {
	requireLinked(t)
	if err := beat.Start(beat.Config{BufferSize: 16, MaxBuffers: 1}); err != nil {
		t.Fatal(err)
	}
	defer beat.Stop()
	tr := NewANRTracer(ANRConfig{Lag: 50 * time.Millisecond, ANR: 100 * time.Millisecond})
	var r countReporter
	w := newWatchdog(tr, &r)
	hold, holdDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(holdDone); beat.Run("holder", func() { <-hold }) }()
	time.Sleep(10 * time.Millisecond)
	release := make(chan struct{})
	done := stuckDispatch("unbuffered", release)
	time.Sleep(150 * time.Millisecond)
	w.tick(time.Now(), 0)
	close(release)
	close(hold)
	<-done
	<-holdDone
	var anr *Issue
	for _, is := range r.all() {
		if is.Content["detail"] == DetailANR && is.Content["name"] == "unbuffered" {
			anr = &is
		}
	}
	if anr == nil {
		t.Fatalf("no ANR for the unbuffered dispatch: %v", r.all())
	}
	c := anr.Content
	if c["recorded"] != false || c["stack"] != "" || anr.Key != "" || !strings.Contains(c["note"].(string), "MATRIX_MAX_BUFFERS") ||
		!strings.Contains(c["threadStack"].(string), "parkedForTest") {
		t.Errorf("content %v", c)
	}
}

func TestScrubStack(t *testing.T) {
	for _, tc := range []struct{ block, want string }{
		{"goroutine 9 [sync.Mutex.Lock, 2 minutes]:\ninternal/sync.runtime_SemacquireMutex(0xc0001?, 0x0?, 0x1?)\n\t/go/src/runtime/sema.go:95 +0x25\n" +
			"sync.(*Mutex).Lock(...)\n\t/go/src/sync/mutex.go:46\n" +
			"main.(*inventory).reserve(0xc00001, {0x6fa1b2, 0x6}, 0x1badc0de)\n\t/home/a user/stuck/main.go:170 +0x9d\n" +
			"main.Map[...]({0x1, 0x2}, 0x3)\n\t/src/main.go:9 +0x1\n" +
			"...additional frames elided...\n" +
			"created by net/http.(*Server).Serve in goroutine 1\n\t/go/src/net/http/server.go:3454 +0x485",
			"goroutine 9 [sync.Mutex.Lock, 2 minutes]:\ninternal/sync.runtime_SemacquireMutex(...)\n\t/go/src/runtime/sema.go:95\n" +
				"sync.(*Mutex).Lock(...)\n\t/go/src/sync/mutex.go:46\n" +
				"main.(*inventory).reserve(...)\n\t/home/a user/stuck/main.go:170\n" +
				"main.Map[...](...)\n\t/src/main.go:9\n" +
				"...additional frames elided...\n" +
				"created by net/http.(*Server).Serve in goroutine 1\n\t/go/src/net/http/server.go:3454"},
		// GOTRACEBACK=system adds addresses to the header and the frames.
		{"goroutine 7 gp=0xc000007a40 m=nil [select]:\nruntime.gopark(0x1badc0de?, 0x0?)\n\t/go/src/runtime/proc.go:435 +0xce fp=0xc00004 sp=0xc00004 pc=0x43f0ae",
			"goroutine 7 [select]:\nruntime.gopark(...)\n\t/go/src/runtime/proc.go:435"},
		{"", ""},
	} {
		got := scrubStack(tc.block)
		if got != tc.want {
			t.Errorf("scrubStack:\n%s\n=\n%s\nwant\n%s", tc.block, got, tc.want)
		}
		if strings.Contains(got, "0x") {
			t.Errorf("scrubStack left a hex word:\n%s", got)
		}
		if blockedIn(got) != blockedIn(tc.block) {
			t.Errorf("blockedIn of the scrubbed block %q, of the dump's %q", blockedIn(got), blockedIn(tc.block))
		}
	}
}

func TestLagAndANRCarryTraceParent(t *testing.T) {
	requireLinked(t)
	if err := beat.Start(beat.Config{}); err != nil {
		t.Fatal(err)
	}
	defer beat.Stop()
	tr := NewANRTracer(ANRConfig{Lag: 50 * time.Millisecond, ANR: 100 * time.Millisecond})
	var r countReporter
	w := newWatchdog(tr, &r)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	release, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		d := beat.Begin(beat.KindHTTP, "traced")
		d.SetTraceParent(tp)
		parkedForTest(release)
		d.End()
	}()
	time.Sleep(150 * time.Millisecond)
	w.tick(time.Now(), 0)
	close(release)
	<-done
	seen := map[string]bool{}
	for _, is := range r.all() {
		if is.Content["name"] != "traced" {
			continue
		}
		d, _ := is.Content["detail"].(string)
		seen[d] = true
		if is.Content[KeyTraceParent] != tp {
			t.Errorf("%s report: traceparent %v, want %s", d, is.Content[KeyTraceParent], tp)
		}
	}
	if !seen[DetailLag] || !seen[DetailANR] {
		t.Errorf("reports of the traced dispatch: %v", seen)
	}
}

// TestStackDumpsRateLimited: stuck dispatches that reach the LAG threshold
// tick after tick (an outage) cost at most one stop-the-world stack dump
// per second, not one per tick.
func TestStackDumpsRateLimited(t *testing.T) {
	requireLinked(t)
	cfg := DefaultTraceConfig()
	cfg.EvilMethod = false
	cfg.FPS = false
	cfg.Watchdog = ANRConfig{Lag: 30 * time.Millisecond, ANR: time.Minute, Period: 10 * time.Millisecond}
	p, got, _ := startPlugin(t, cfg)
	tr := p.Tracer(ANRTracerName).(*ANRTracer)

	const n = 6
	start := time.Now()
	release := make(chan struct{})
	var done []chan struct{}
	for i := range n {
		done = append(done, stuckDispatch(fmt.Sprintf("stuck-%d", i), release))
		time.Sleep(50 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); tr.Stats().Lags < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	close(release)
	for _, d := range done {
		<-d
	}
	p.Stop()

	s := tr.Stats()
	if s.Lags != n {
		t.Fatalf("%d LAGs, want %d", s.Lags, n)
	}
	if limit := 1 + uint64(elapsed/stackDumpInterval); s.StackDumps > limit {
		t.Errorf("%d stack dumps for %d LAGs in %v, want at most %d (one per second)", s.StackDumps, n, elapsed, limit)
	}
	withStack := 0
	for _, is := range byDetail(got.all())[DetailLag] {
		c := is.Content
		switch {
		case strings.HasPrefix(c["threadStack"].(string), "goroutine "):
			withStack++
		case c["note"] != noteDumpLimited:
			t.Errorf("LAG %v without threadStack, note %q", c["name"], c["note"])
		}
	}
	if withStack == 0 {
		t.Error("no LAG has a threadStack")
	}
	t.Logf("%d LAGs in %v: %d stack dumps, %d with a threadStack", n, elapsed, s.StackDumps, withStack)
}

// The watchdog's decisions depend on the time its tick is given, not on
// how long the test waits: ticks at chosen times after a dispatch began
// give a LAG once its age reaches the LAG threshold and an ANR once it
// reaches the ANR threshold, each once, with the age of that tick as the
// cost, and a frozen tick drops the ANR.
func TestWatchdogTicksOnAGivenClock(t *testing.T) {
	requireLinked(t)
	if err := beat.Start(beat.Config{}); err != nil {
		t.Fatal(err)
	}
	defer beat.Stop()
	for _, tc := range []struct {
		name string
		late time.Duration // of the tick at the ANR threshold
		want []string      // detail and cost of each report, in order
	}{
		{"on-time", 0, []string{"LAG 300", "ANR 700"}},
		{"frozen", DefaultWatchdogLateLimit, []string{"LAG 300"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewANRTracer(ANRConfig{Lag: 300 * time.Millisecond, ANR: 700 * time.Millisecond})
			var r countReporter
			w := newWatchdog(tr, &r)
			started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				beat.Run(tc.name, func() { close(started); <-release })
			}()
			<-started
			var start time.Time
			beat.Running(func(d *beat.Dispatch) {
				if d.Name() == tc.name {
					start = d.Start()
				}
			})
			if start.IsZero() {
				t.Fatal("the dispatch is not running")
			}
			for _, at := range []struct {
				age  time.Duration
				late time.Duration
			}{{299 * time.Millisecond, 0}, {300 * time.Millisecond, 0}, {450 * time.Millisecond, 0},
				{699 * time.Millisecond, 0}, {700 * time.Millisecond, tc.late}, {900 * time.Millisecond, 0}} {
				w.tick(start.Add(at.age), at.late)
			}
			close(release)
			<-done
			var got []string
			for _, is := range r.all() {
				// (The test's own dispatch is running too.)
				if is.Content["name"] == tc.name {
					got = append(got, fmt.Sprint(is.Content["detail"], " ", is.Content["cost"]))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("reports %q, want %q", got, tc.want)
			}
		})
	}
}
