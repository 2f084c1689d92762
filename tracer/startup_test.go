package tracer

import (
	"fmt"
	"io"
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
)

// startupReports is a Reporter that keeps what it gets.
type startupReports struct {
	mu     sync.Mutex
	issues []Issue
}

func (r *startupReports) Report(is Issue) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issues = append(r.issues, is)
	return true
}

func (r *startupReports) OnReportIssue(is Issue) { r.Report(is) }

func (r *startupReports) all() []Issue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Issue(nil), r.issues...)
}

// wait returns the issues once there are at least n, or after 5 s.
func (r *startupReports) wait(t *testing.T, n int) []Issue {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if is := r.all(); len(is) >= n {
			return is
		}
	}
	return r.all()
}

// resetStartup forgets the process-wide start-up state (the cold start
// and any warm start in progress) now and at the end of the test, and
// restores the clock.
func resetStartup(t *testing.T) {
	t.Helper()
	startup.reset()
	t.Cleanup(startup.reset)
}

// fakeClock is a settable clock for startupNow.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func useFakeClock(at time.Time) *fakeClock {
	c := &fakeClock{t: at}
	startupNow = c.now
	return c
}

// testStartupTracer returns a tracer whose start-up facts are injected.
func testStartupTracer(cfg StartupConfig, info beat.StartupInfo, proc time.Time, source string) *StartupTracer {
	st := NewStartupTracer(cfg)
	st.info = func() beat.StartupInfo { return info }
	st.procStart = func() (time.Time, string) { return proc, source }
	st.testBin = func() bool { return false }
	return st
}

func startStartup(t *testing.T, st *StartupTracer) *startupReports {
	t.Helper()
	var r startupReports
	if err := st.Start(&r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	return &r
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestComputePhases(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		proc, rt, main, ready time.Time
		p2r, init, app, first int64
		total                 int64
		mainEntered           bool
	}{
		{"normal", t0, t0.Add(ms(40)), t0.Add(ms(3040)), t0.Add(ms(4100)), 40, 3000, 3040, 1060, 4100, true},
		{"sub-ms boundaries add up", t0, t0.Add(1500 * time.Microsecond), t0.Add(2700 * time.Microsecond), t0.Add(4900 * time.Microsecond), 1, 1, 2, 2, 4, true},
		{"main never entered", t0, t0.Add(ms(40)), time.Time{}, t0.Add(ms(900)), 40, 860, 900, 0, 900, false},
		{"main entered after ready", t0, t0.Add(ms(40)), t0.Add(ms(1000)), t0.Add(ms(900)), 40, 860, 900, 0, 900, false},
		{"unknown process start", time.Time{}, t0, t0.Add(ms(200)), t0.Add(ms(300)), 0, 200, 200, 100, 300, true},
		{"process start after runtime init", t0.Add(ms(50)), t0, t0.Add(ms(200)), t0.Add(ms(300)), 0, 200, 200, 100, 300, true},
		{"ready before runtime init", t0, t0.Add(ms(40)), time.Time{}, t0.Add(ms(10)), 40, 0, 40, 0, 40, false},
		{"nothing known", time.Time{}, time.Time{}, time.Time{}, t0, 0, 0, 0, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := computePhases(tc.proc, tc.rt, tc.main, tc.ready)
			want := startupPhases{tc.p2r, tc.init, tc.app, tc.first, tc.total, tc.mainEntered}
			if p != want {
				t.Errorf("got %+v, want %+v", p, want)
			}
			if p.applicationCreate+p.firstActivityCreate != p.startupDuration || p.processToRuntime+p.init != p.applicationCreate {
				t.Errorf("phases do not add up: %+v", p)
			}
		})
	}
}

func TestProcStatParsing(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 1234 0 0 0 12 3 0 0 20 0 8 0 987654 123456789 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	if n, err := procStartTicks([]byte(stat)); err != nil || n != 987654 {
		t.Errorf("procStartTicks = %d, %v; want 987654", n, err)
	}
	for _, bad := range []string{"", "4242 prog S 1", "4242 (prog) S 1 2 3", "4242 (prog) S 1 4242 4242 0 -1 4194560 1234 0 0 0 12 3 0 0 20 0 8 0 x 1"} {
		if _, err := procStartTicks([]byte(bad)); err == nil {
			t.Errorf("procStartTicks(%q) gave no error", bad)
		}
	}
	procStat := "cpu  1 2 3 4\nintr 5\nctxt 99\nbtime 1767268800\nprocesses 7\n"
	if b, err := procBtime([]byte(procStat)); err != nil || b != 1767268800 {
		t.Errorf("procBtime = %d, %v", b, err)
	}
	if _, err := procBtime([]byte("cpu 1\n")); err == nil {
		t.Error("procBtime without btime gave no error")
	}
	if d := ticksDuration(250); d != 2500*time.Millisecond {
		t.Errorf("250 ticks = %v", d)
	}
	// Started 987654 ticks (9876.54 s) after boot; the boot clock reads 10000 s.
	at, ok := startFromAge(t0, 10000*time.Second, 987654)
	if !ok || !at.Equal(t0.Add(-123460*time.Millisecond)) {
		t.Errorf("startFromAge = %v %v", at, ok)
	}
	if _, ok := startFromAge(t0, time.Second, 987654); ok {
		t.Error("a start after the boot clock's reading was accepted")
	}
}

func TestProcessStartOfThisProcess(t *testing.T) {
	at, source := processStart()
	if runtime.GOOS != "linux" {
		if !at.IsZero() || source != ProcessStartRuntime {
			t.Errorf("processStart on %s = %v %q, want the runtime fallback", runtime.GOOS, at, source)
		}
		return
	}
	if source != ProcessStartProc {
		t.Errorf("source %q, want %q", source, ProcessStartProc)
	}
	// This test binary started a moment ago, before this test.
	if age := time.Since(at); age <= 0 || age > 10*time.Minute {
		t.Errorf("process start %v is %v ago", at, age)
	}
	if again, _ := processStart(); !again.Equal(at) {
		t.Errorf("processStart changed: %v then %v", at, again)
	}
}

// initRecords is package initialisation with a slow init: DISPATCH →
// idA (an init function) → idB (the slow loader, 3000 ms) and idC (40 ms).
func initRecords() []uint64 {
	return records(
		true, beat.DispatchID, 0,
		true, idA, 5,
		true, idB, 5,
		false, idB, 3005,
		true, idC, 3005,
		false, idC, 3045,
		false, idA, 3050,
		false, beat.DispatchID, 3060,
	)
}

func TestColdIssues(t *testing.T) {
	in := coldInput{
		info: beat.StartupInfo{
			RuntimeInit: t0.Add(ms(40)),
			MainEntered: t0.Add(ms(3100)),
			Records:     initRecords(),
		},
		procStart: t0,
		source:    ProcessStartProc,
		ready:     t0.Add(ms(4300)),
		scene:     StartupSceneHTTP,
		threshold: 3 * time.Second,
	}
	issues := coldIssues(in)
	if len(issues) != 2 {
		t.Fatalf("got %d issues, want Trace_StartUp and STARTUP", len(issues))
	}
	su := issues[0]
	c := su.Content
	want := map[string]any{
		"application_create":    int64(3100),
		"first_activity_create": int64(1200),
		"startup_duration":      int64(4300),
		"is_warm_start_up":      false,
		"process_to_runtime":    int64(40),
		"init":                  int64(3060),
		"scene":                 "http",
		"process_start_source":  ProcessStartProc,
		"process_start":         t0.Format(time.RFC3339Nano),
		"main_entered":          true,
		"tag":                   TagStartUp,
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("Trace_StartUp %s = %#v, want %#v", k, c[k], v)
		}
	}
	if _, ok := c["note"]; ok || su.Tag != TagStartUp {
		t.Errorf("tag %q note %v", su.Tag, c["note"])
	}
	if ts := c["time"]; ts != in.ready.Format(time.RFC3339Nano) {
		t.Errorf("time %v, want the ready moment", ts)
	}

	ev := issues[1]
	c = ev.Content
	if ev.Tag != TagEvilMethod || c["detail"] != DetailStartup || c["subType"] != 1 || c["recorded"] != true || c["is_warm_start_up"] != false {
		t.Errorf("STARTUP issue %v", c)
	}
	wantStack := fmt.Sprintf("0,%d,1,3060\n1,%d,1,3045\n2,%d,1,3000\n2,%d,1,40\n", beat.DispatchID, idA, idB, idC)
	if c["stack"] != wantStack {
		t.Errorf("stack\n%v\nwant\n%v", c["stack"], wantStack)
	}
	if ev.Key != fmt.Sprintf("%d|", idB) || c["stackKey"] != ev.Key {
		t.Errorf("key %q stackKey %v, want the slow loader", ev.Key, c["stackKey"])
	}
	if c["cost"] != int64(4300) || c["startup_duration"] != int64(4300) || c["init"] != int64(3060) {
		t.Errorf("cost %v startup_duration %v init %v", c["cost"], c["startup_duration"], c["init"])
	}
	frames := c["frames"].([]Frame)
	if len(frames) != 4 || frames[0].Func != "DISPATCH" || frames[2].ID != idB || frames[2].Cost != 3000 {
		t.Errorf("frames %+v", frames)
	}

	// Under the threshold: the phases only.
	in.threshold = 5 * time.Second
	if issues := coldIssues(in); len(issues) != 1 || issues[0].Tag != TagStartUp {
		t.Errorf("under the threshold: %+v", issues)
	}
	// At the threshold exactly: Matrix reports only above it.
	in.threshold = 4300 * time.Millisecond
	if issues := coldIssues(in); len(issues) != 1 {
		t.Errorf("at the threshold: %d issues", len(issues))
	}
}

func TestColdIssuesWithoutFacts(t *testing.T) {
	in := coldInput{
		info:      beat.StartupInfo{RuntimeInit: t0},
		source:    ProcessStartRuntime,
		ready:     t0.Add(ms(2500)),
		scene:     StartupSceneReady,
		threshold: time.Second,
	}
	issues := coldIssues(in)
	if len(issues) != 2 {
		t.Fatalf("%d issues", len(issues))
	}
	c := issues[0].Content
	note, _ := c["note"].(string)
	if c["process_start_source"] != ProcessStartRuntime || c["process_to_runtime"] != int64(0) || c["main_entered"] != false ||
		c["application_create"] != int64(2500) || c["first_activity_create"] != int64(0) || c["startup_duration"] != int64(2500) ||
		!strings.Contains(note, "main.main was not entered") || !strings.Contains(note, "OS start time") {
		t.Errorf("content %v", c)
	}
	c = issues[1].Content
	if c["recorded"] != false || c["stack"] != "" || c["stackKey"] != "" || !strings.Contains(c["note"].(string), "MATRIX_REPORT") {
		t.Errorf("STARTUP without records %v", c)
	}
	in.info.Wrapped = true
	if c := coldIssues(in)[1].Content; !strings.Contains(c["note"].(string), "131072") {
		t.Errorf("wrapped note %v", c["note"])
	}
}

func TestWarmIssues(t *testing.T) {
	ev := startupEvent{warm: true, from: t0, at: t0.Add(ms(1500)), scene: StartupSceneReady, rec: recWarmMarked}
	issues := warmIssues(ev, 4*time.Second)
	if len(issues) != 1 {
		t.Fatalf("%d issues", len(issues))
	}
	c := issues[0].Content
	if issues[0].Tag != TagStartUp || c["is_warm_start_up"] != true || c["startup_duration"] != int64(1500) ||
		c["application_create"] != int64(0) || c["first_activity_create"] != int64(0) || c["scene"] != "Ready" {
		t.Errorf("warm Trace_StartUp %v", c)
	}
	ev.at = t0.Add(ms(4500))
	issues = warmIssues(ev, 4*time.Second)
	if len(issues) != 2 {
		t.Fatalf("%d issues over the threshold", len(issues))
	}
	c = issues[1].Content
	if c["detail"] != DetailStartup || c["subType"] != 2 || c["recorded"] != false || c["note"] != noteWarmNoTree || c["cost"] != int64(4500) {
		t.Errorf("warm STARTUP %v", c)
	}
	// With the records of a ReloadFunc dispatch, still open when copied.
	ev.recs = records(true, beat.DispatchID, 100, true, idA, 100, false, idA, 4550)
	ev.endMs, ev.rec = 4600, recDispatch
	c = warmIssues(ev, 4*time.Second)[1].Content
	if c["recorded"] != true || c["stack"] != fmt.Sprintf("0,%d,1,4500\n1,%d,1,4450\n", beat.DispatchID, idA) || c["stackKey"] != fmt.Sprintf("%d|", idA) {
		t.Errorf("warm STARTUP with records %v", c)
	}
}

func TestStartupTracerColdAndWarm(t *testing.T) {
	resetStartup(t)
	clock := useFakeClock(t0.Add(ms(5000)))
	info := beat.StartupInfo{RuntimeInit: t0.Add(ms(30)), MainEntered: t0.Add(ms(3500)), Records: initRecords()}
	before := runtime.NumGoroutine()
	st := testStartupTracer(StartupConfig{Cold: 4 * time.Second}, info, t0, ProcessStartProc)
	r := startStartup(t, st)

	Reload() // before the cold start is ready: ignored
	ReloadFunc(func() { clock.advance(time.Second) })
	if warmPending.Load() {
		t.Fatal("a Reload before ready began a warm start")
	}
	Ready()
	clock.advance(time.Second)
	Ready() // only the first cold Ready counts
	issues := r.wait(t, 2)
	if len(issues) != 2 || issues[0].Tag != TagStartUp || issues[1].Content["detail"] != DetailStartup {
		t.Fatalf("issues %+v", issues)
	}
	if c := issues[0].Content; c["startup_duration"] != int64(6000) || c["first_activity_create"] != int64(2500) || c["scene"] != "Ready" {
		t.Errorf("cold %v", c)
	}

	// A warm start under the threshold, then one over it.
	Reload()
	clock.advance(ms(1200))
	Reload() // the first Reload counts
	clock.advance(ms(300))
	Ready()
	Reload()
	clock.advance(ms(4100))
	Ready()
	Ready()
	issues = r.wait(t, 5)
	if len(issues) != 5 {
		t.Fatalf("%d issues, want 2 cold + 1 warm + 2 warm: %+v", len(issues), issues)
	}
	if c := issues[2].Content; c["is_warm_start_up"] != true || c["startup_duration"] != int64(1500) {
		t.Errorf("first warm %v", c)
	}
	if c := issues[3].Content; c["is_warm_start_up"] != true || c["startup_duration"] != int64(4100) {
		t.Errorf("second warm %v", c)
	}
	if c := issues[4].Content; c["detail"] != DetailStartup || c["subType"] != 2 || c["note"] != noteWarmNoTree {
		t.Errorf("warm STARTUP %v", c)
	}

	// A restarted tracer does not report the cold start again; a new
	// one, started after ready, does.
	st.Stop()
	if err := st.Start(r); err != nil {
		t.Fatal(err)
	}
	st2 := testStartupTracer(StartupConfig{}, info, t0, ProcessStartProc)
	r2 := startStartup(t, st2)
	if is := r2.wait(t, 1); len(is) != 1 || is[0].Tag != TagStartUp || is[0].Content["startup_duration"] != int64(6000) {
		t.Errorf("late tracer: %+v", is)
	}
	time.Sleep(20 * time.Millisecond)
	if n := len(r.all()); n != 5 {
		t.Errorf("restarted tracer reported again: %d issues", n)
	}
	st.Stop()
	st2.Stop()
	waitGoroutines(t, before)
}

func TestReloadFuncWithoutRecorder(t *testing.T) {
	requirePlain(t)
	resetStartup(t)
	clock := useFakeClock(t0)
	st := testStartupTracer(StartupConfig{}, beat.StartupInfo{RuntimeInit: t0}, t0, ProcessStartProc)
	r := startStartup(t, st)
	Ready()
	ran := false
	ReloadFunc(func() {
		ran = true
		Ready() // does not end a ReloadFunc
		clock.advance(5 * time.Second)
	})
	issues := r.wait(t, 3)
	if !ran || len(issues) != 3 {
		t.Fatalf("ran %v, issues %+v", ran, issues)
	}
	if c := issues[1].Content; c["is_warm_start_up"] != true || c["startup_duration"] != int64(5000) || c["scene"] != StartupSceneReloadFunc {
		t.Errorf("warm %v", c)
	}
	if c := issues[2].Content; c["note"] != noteNotRecording {
		t.Errorf("warm STARTUP %v", c)
	}
	// A panicking fn still ends the warm start.
	func() {
		defer func() { recover() }()
		ReloadFunc(func() { clock.advance(time.Second); panic("boom") })
	}()
	if warmPending.Load() {
		t.Error("a panicking ReloadFunc left its warm start open")
	}
	if is := r.wait(t, 4); len(is) != 4 || is[3].Content["startup_duration"] != int64(1000) {
		t.Errorf("after panic: %+v", is)
	}
}

func TestReadyConcurrent(t *testing.T) {
	resetStartup(t)
	st := testStartupTracer(StartupConfig{}, beat.StartupInfo{RuntimeInit: time.Now()}, time.Time{}, ProcessStartRuntime)
	r := startStartup(t, st)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				Ready()
				if j%10 == 0 {
					Reload()
				}
			}
		}()
	}
	wg.Wait()
	Ready() // ends a warm start the last Reload may have begun
	st.Stop()
	cold := 0
	for _, is := range r.all() {
		if is.Tag == TagStartUp && is.Content["is_warm_start_up"] == false {
			cold++
		}
	}
	if cold != 1 {
		t.Errorf("%d cold Trace_StartUp issues, want 1", cold)
	}
}

func TestReadyIsCheap(t *testing.T) {
	resetStartup(t)
	Ready()
	if a := testing.AllocsPerRun(1000, Ready); a != 0 {
		t.Errorf("Ready after ready allocates %.1f times", a)
	}
}

func BenchmarkReady(b *testing.B) {
	Ready()
	for b.Loop() {
		Ready()
	}
}

func TestStartupSettings(t *testing.T) {
	st := NewStartupTracer(StartupConfig{})
	if on, cold, warm := st.Settings(); !on || cold != DefaultColdStartupThreshold || warm != DefaultWarmStartupThreshold {
		t.Errorf("defaults %v %v %v", on, cold, warm)
	}
	st.SetColdThreshold(time.Second)
	st.SetWarmThreshold(-1)
	st.SetEnabled(false)
	if on, cold, warm := st.Settings(); on || cold != time.Second || warm != DefaultWarmStartupThreshold {
		t.Errorf("set %v %v %v", on, cold, warm)
	}
	dyn := EnvDynamicConfig(env(map[string]string{
		EnvStartupTracer: "on", EnvColdStartupMs: "2500", EnvWarmStartupMs: "bad",
	}))
	st = NewStartupTracer(StartupConfig{Cold: 7 * time.Second, Warm: 3 * time.Second, Dynamic: dyn})
	st.SetEnabled(false)
	if on, cold, warm := st.Settings(); !on || cold != 2500*time.Millisecond || warm != 3*time.Second {
		t.Errorf("dynamic %v %v %v", on, cold, warm)
	}
	if err := st.Start(nil); err == nil {
		t.Error("Start(nil) gave no error")
	}
}

func TestStartupTracerDisabledReportsNothing(t *testing.T) {
	resetStartup(t)
	st := testStartupTracer(StartupConfig{}, beat.StartupInfo{RuntimeInit: time.Now()}, time.Time{}, "")
	st.SetEnabled(false)
	r := startStartup(t, st)
	Ready()
	st.Stop()
	if is := r.all(); len(is) != 0 {
		t.Errorf("a disabled tracer reported %+v", is)
	}
}

func TestStartupConfigFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Startup || cfg.StartupThresholds.Cold != 10*time.Second || cfg.StartupThresholds.Warm != 4*time.Second {
		t.Errorf("defaults: %v %+v", cfg.Startup, cfg.StartupThresholds)
	}
	p := NewTracePlugin(cfg)
	if _, ok := p.Tracer(StartupTracerName).(*StartupTracer); !ok {
		t.Errorf("no StartupTracer in the default plugin: %v", p.Tracers())
	}
	cfg, err = ConfigFromEnv(env(map[string]string{
		"MATRIX_STARTUP_TRACER":  "off",
		"MATRIX_COLD_STARTUP_MS": "3000",
		"MATRIX_WARM_STARTUP_MS": " 1500 ",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Startup || cfg.StartupThresholds.Cold != 3*time.Second || cfg.StartupThresholds.Warm != 1500*time.Millisecond {
		t.Errorf("got %v %+v", cfg.Startup, cfg.StartupThresholds)
	}
	if NewTracePlugin(cfg).Tracer(StartupTracerName) != nil {
		t.Error("MATRIX_STARTUP_TRACER=off still runs the tracer")
	}
	_, err = ConfigFromEnv(env(map[string]string{
		"MATRIX_STARTUP_TRACER":  "maybe",
		"MATRIX_COLD_STARTUP_MS": "0",
		"MATRIX_WARM_STARTUP_MS": "x",
	}))
	for _, name := range []string{"MATRIX_STARTUP_TRACER", "MATRIX_COLD_STARTUP_MS", "MATRIX_WARM_STARTUP_MS"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not name %s", err, name)
		}
	}
	bad := DefaultTraceConfig()
	bad.StartupThresholds.Cold = -time.Second
	if err := NewTracePlugin(bad).Init(); err == nil || !strings.Contains(err.Error(), "StartupThresholds.Cold") {
		t.Errorf("Init with a negative threshold: %v", err)
	}
}

// The tests below need the recorder.

// startStartupPlugin runs a plugin with st as its only tracer (so that
// it also runs the recorder).
func startStartupPlugin(t *testing.T, st *StartupTracer) (*TracePlugin, *startupReports) {
	t.Helper()
	requireLinked(t)
	var got startupReports
	p := NewTracePlugin(TraceConfig{Tracers: []Tracer{st}})
	p.AddListener(&got)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, &got
}

func TestStartupReadyOnFirstHTTPRequest(t *testing.T) {
	requireLinked(t)
	resetStartup(t)
	st := NewStartupTracer(StartupConfig{Cold: time.Millisecond})
	st.testBin = func() bool { return false }
	p, got := startStartupPlugin(t, st)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	for i := 0; i < 3; i++ {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	Ready() // after the first request: changes nothing
	p.Stop()
	issues := got.all()
	if len(issues) != 2 {
		t.Fatalf("got %d issues, want Trace_StartUp and STARTUP: %+v", len(issues), issues)
	}
	c := issues[0].Content
	if issues[0].Tag != TagStartUp || c["scene"] != StartupSceneHTTP {
		t.Errorf("Trace_StartUp %v", c)
	}
	info := beat.Startup()
	proc, _ := processStart()
	if proc.IsZero() {
		proc = info.RuntimeInit
	}
	if total := c["startup_duration"].(int64); total <= 0 || time.Duration(total)*time.Millisecond > time.Since(proc) {
		t.Errorf("startup_duration %d ms, process age %v", total, time.Since(proc))
	}
	if c["application_create"].(int64)+c["first_activity_create"].(int64) != c["startup_duration"] {
		t.Errorf("phases do not add up: %v", c)
	}
	if runtime.GOOS == "linux" && c["process_start_source"] != ProcessStartProc {
		t.Errorf("process_start_source %v", c["process_start_source"])
	}
	if c := issues[1].Content; c["detail"] != DetailStartup {
		t.Errorf("STARTUP %v", c)
	} else if len(info.Records) == 0 && c["recorded"] != false {
		t.Errorf("STARTUP without start-up records says recorded: %v", c)
	}
}

func TestStartupHTTPIgnoredInTestBinary(t *testing.T) {
	requireLinked(t)
	resetStartup(t)
	if !isTestBinary() {
		t.Fatal("isTestBinary is false in a test binary")
	}
	_, got := startStartupPlugin(t, NewStartupTracer(StartupConfig{}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(20 * time.Millisecond)
	if coldReady.Load() || len(got.all()) != 0 {
		t.Errorf("an HTTP request in a test binary made the process ready: %+v", got.all())
	}
}

func TestReloadFuncCallTree(t *testing.T) {
	requireLinked(t)
	resetStartup(t)
	st := NewStartupTracer(StartupConfig{Warm: 20 * time.Millisecond})
	p, got := startStartupPlugin(t, st)
	Ready()
	slow := func() {
		beat.Enter(idA)
		beat.Enter(idB)
		time.Sleep(60 * time.Millisecond)
		beat.Exit(idB)
		beat.Exit(idA)
	}
	// How long each dispatch that holds a warm tree took on the wall clock.
	var took []int64
	start := time.Now()
	// On a goroutine outside any dispatch: a dispatch of its own.
	ReloadFunc(slow)
	took = append(took, time.Since(start).Milliseconds())
	// Inside a dispatch: the part of it fn made.
	start = time.Now()
	beat.Run("admin", func() {
		beat.Enter(idC)
		time.Sleep(5 * time.Millisecond)
		beat.Exit(idC)
		ReloadFunc(slow)
	})
	took = append(took, time.Since(start).Milliseconds())
	if beat.Current() != nil {
		t.Error("ReloadFunc left the goroutine inside a dispatch")
	}
	p.Stop()
	var warmTrees []map[string]any
	for _, is := range got.all() {
		if is.Tag == TagEvilMethod && is.Content["is_warm_start_up"] == true {
			warmTrees = append(warmTrees, is.Content)
		}
	}
	if len(warmTrees) != 2 {
		t.Fatalf("got %d warm STARTUP issues, want 2: %+v", len(warmTrees), got.all())
	}
	for i, c := range warmTrees {
		// The calls are the dispatch, idA and idB; idB sleeps, and the
		// key names the sleep. Other waits (a park on the way, time
		// runnable on a loaded machine) may be anywhere in the tree.
		var calls []string
		waits := 0
		for _, id := range stackIDs(c["stack"].(string)) {
			if id == strconv.Itoa(analysis.Ext) {
				waits++
			} else {
				calls = append(calls, id)
			}
		}
		key, _ := c["stackKey"].(string)
		if c["recorded"] != true || strings.Join(calls, " ") != fmt.Sprintf("%d %d %d", beat.DispatchID, idA, idB) || waits == 0 || !strings.HasSuffix(key, "[sleep]|") {
			t.Errorf("warm tree %d: recorded %v calls %v key %v\n%v", i, c["recorded"], calls, c["stackKey"], c["stack"])
		}
		// At least fn's sleep less the recorder clock's 10 % slack, at
		// most what the dispatch that holds it took (+1 ms of rounding).
		if cost := c["cost"].(int64); cost < 54 || cost > took[i]+1 {
			t.Errorf("warm tree %d: cost %d, want at least 54 and at most the %d ms its dispatch took", i, cost, took[i])
		}
	}
}

// TestTreeNote: the note of every kind of report without a call tree, and
// none for one with a tree.
func TestTreeNote(t *testing.T) {
	for _, c := range []struct {
		rec  recording
		has  bool
		want string
	}{
		{recDispatch, true, ""},
		{recDispatch, false, noteWrapped},
		{recNoBuffer, false, noteNoBuffer},
		{recShort, false, noteShort},
		{recShort, true, noteShort},
		{recOff, false, noteNotRecording},
		{recWarmMarked, false, noteWarmNoTree},
		{recStartup, true, ""},
		{recStartup, false, noteNoStartupRec},
		{recStartupWrapped, false, noteStartupWrap},
		{recStartupWrapped, true, noteStartupWrap},
	} {
		if got := treeNote(c.rec, c.has); got != c.want {
			t.Errorf("treeNote(%d, %v) = %q, want %q", c.rec, c.has, got, c.want)
		}
	}
}
