package tracer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
)

// fpsReports is a Reporter that keeps what it gets.
type fpsReports struct {
	mu     sync.Mutex
	issues []Issue
}

func (r *fpsReports) Report(is Issue) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issues = append(r.issues, is)
	return true
}

func (r *fpsReports) all() []Issue {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Issue(nil), r.issues...)
}

// startFrames starts a frame tracer with the given slice, stopped at the
// end of the test.
func startFrames(t *testing.T, slice time.Duration) (*FrameTracer, *fpsReports) {
	t.Helper()
	ft := NewFrameTracer(FrameConfig{TimeSlice: slice})
	var r fpsReports
	if err := ft.Start(&r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ft.Stop)
	return ft, &r
}

// levels builds the expected dropLevel or dropSum map, in the order
// BEST, NORMAL, MIDDLE, HIGH, FROZEN.
func levels(best, normal, middle, high, frozen int) map[string]int {
	return map[string]int{
		"DROPPED_BEST": best, "DROPPED_NORMAL": normal, "DROPPED_MIDDLE": middle,
		"DROPPED_HIGH": high, "DROPPED_FROZEN": frozen,
	}
}

func TestDroppedFrames(t *testing.T) {
	const I = 10 * time.Millisecond
	for _, tc := range []struct {
		cost, interval time.Duration
		want           int
	}{
		{0, I, 0},
		{I, I, 0},
		{2*I - 1, I, 0},
		{2 * I, I, 1},
		{25 * time.Millisecond, I, 1},
		{4 * I, I, 3},
		{43 * I, I, 42},
		{time.Second, 0, 0},
		{time.Second, -I, 0},
		{time.Second, time.Second / 60, 59},
	} {
		if got := DroppedFrames(tc.cost, tc.interval); got != tc.want {
			t.Errorf("DroppedFrames(%v, %v) = %d, want %d", tc.cost, tc.interval, got, tc.want)
		}
	}
}

func TestDropLevels(t *testing.T) {
	th := DefaultDropThresholds
	for _, tc := range []struct {
		dropped int
		want    DropLevel
	}{
		{0, DroppedBest}, {2, DroppedBest},
		{3, DroppedNormal}, {8, DroppedNormal},
		{9, DroppedMiddle}, {23, DroppedMiddle},
		{24, DroppedHigh}, {41, DroppedHigh},
		{42, DroppedFrozen}, {1000, DroppedFrozen},
	} {
		if got := th.Level(tc.dropped); got != tc.want {
			t.Errorf("Level(%d) = %v, want %v", tc.dropped, got, tc.want)
		}
	}
	names := []string{DroppedBest.String(), DroppedNormal.String(), DroppedMiddle.String(), DroppedHigh.String(), DroppedFrozen.String()}
	if strings.Join(names, " ") != "DROPPED_BEST DROPPED_NORMAL DROPPED_MIDDLE DROPPED_HIGH DROPPED_FROZEN" {
		t.Errorf("names %v", names)
	}
	if s := DropLevel(7).String(); s != "DropLevel(7)" {
		t.Errorf("unknown level %q", s)
	}
}

// TestFrameReportExact feeds scripted frame costs and checks every field
// of the reports: one when the slice is full, one for the rest at Stop.
func TestFrameReportExact(t *testing.T) {
	const I = 10 * time.Millisecond
	ft, got := startFrames(t, time.Second) // 100 slots of 10 ms
	l := ft.NewFrameLoop("level-1", I)
	if l.Scene() != "level-1" || l.Interval() != I {
		t.Errorf("loop %q %v", l.Scene(), l.Interval())
	}
	var script []time.Duration
	for i := 0; i < 50; i++ {
		script = append(script, 5*time.Millisecond) // on time: 1 slot each
	}
	script = append(script,
		45*time.Millisecond,  // 3 dropped, NORMAL, 4 slots
		20*time.Millisecond,  // 1 dropped, BEST, 2 slots
		100*time.Millisecond, // 9 dropped, MIDDLE, 10 slots
		250*time.Millisecond, // 24 dropped, HIGH, 25 slots
		8*time.Millisecond,   // 0 dropped, 1 slot: 92 slots so far
		430*time.Millisecond, // 42 dropped, FROZEN, 43 slots: 135 >= 100, report
	)
	wantDropped := []int{3, 1, 9, 24, 0, 42}
	for i, c := range script {
		d := l.frameWith(c)
		if i >= 50 && d != wantDropped[i-50] {
			t.Errorf("frame %d of %v dropped %d, want %d", i, c, d, wantDropped[i-50])
		}
	}
	if n := len(got.all()); n != 1 {
		t.Fatalf("%d reports after a full slice, want 1", n)
	}
	for i := 0; i < 3; i++ {
		l.frameWith(10 * time.Millisecond)
	}
	ft.Stop()
	l.frameWith(time.Second) // after Stop: not counted
	issues := got.all()
	if len(issues) != 2 {
		t.Fatalf("got %d reports, want 2", len(issues))
	}
	want := []map[string]any{{
		"scene":       "level-1",
		"dropLevel":   levels(52, 1, 1, 1, 1),
		"dropSum":     levels(1, 3, 9, 24, 42),
		"fps":         41.48, // 100 Hz × 56 frames / 135 slots
		"refreshRate": 100.0,
		"interval":    10.0,
		"frames":      56,
		"dropped":     79,
		"frameTime":   int64(1350),
	}, {
		"scene":       "level-1",
		"dropLevel":   levels(3, 0, 0, 0, 0),
		"dropSum":     levels(0, 0, 0, 0, 0),
		"fps":         100.0,
		"refreshRate": 100.0,
		"interval":    10.0,
		"frames":      3,
		"dropped":     0,
		"frameTime":   int64(30),
	}}
	for i, is := range issues {
		if is.Tag != TagFPS || is.Key != "level-1" || is.Content[KeyTag] != TagFPS {
			t.Errorf("report %d: tag %q key %q", i, is.Tag, is.Key)
		}
		for k, v := range want[i] {
			if !reflect.DeepEqual(is.Content[k], v) {
				t.Errorf("report %d: %s = %#v, want %#v", i, k, is.Content[k], v)
			}
		}
	}
}

// A 60 Hz loop: the interval is not a whole number of milliseconds.
func TestFrameReport60Hz(t *testing.T) {
	ft, got := startFrames(t, 10*time.Second)
	l := ft.NewFrameLoop("menu", 0) // 0: the 60 Hz default
	if l.Interval() != DefaultFrameInterval {
		t.Fatalf("interval %v", l.Interval())
	}
	I := DefaultFrameInterval
	for i := 0; i < 591; i++ {
		l.frameWith(I / 2)
	}
	if len(got.all()) != 0 {
		t.Fatal("reported before 10 s of frame time")
	}
	// 9 dropped, MIDDLE: 601 slots (600 × 16.666666 ms is just under 10 s).
	l.frameWith(10*I + I/2)
	issues := got.all()
	if len(issues) != 1 {
		t.Fatalf("got %d reports, want 1", len(issues))
	}
	c := issues[0].Content
	if c["frames"] != 592 || c["fps"] != 59.1 || c["refreshRate"] != 60.0 || c["interval"] != 16.667 ||
		!reflect.DeepEqual(c["dropLevel"], levels(591, 0, 1, 0, 0)) || c["frameTime"] != int64(10016) {
		t.Errorf("content %v", c)
	}
}

func TestFrameListener(t *testing.T) {
	const I = 10 * time.Millisecond
	ft, _ := startFrames(t, time.Hour)
	l := ft.NewFrameLoop("list", I)
	type call struct {
		scene   string
		dropped int
		cost    time.Duration
	}
	var mu sync.Mutex
	var calls, all []call
	remove := ft.AddFrameListener(3, FrameListenerFunc(func(scene string, dropped int, cost time.Duration) {
		mu.Lock()
		calls = append(calls, call{scene, dropped, cost})
		mu.Unlock()
	}))
	ft.AddFrameListener(0, FrameListenerFunc(func(scene string, dropped int, cost time.Duration) {
		mu.Lock()
		all = append(all, call{scene, dropped, cost})
		mu.Unlock()
	}))
	ft.AddFrameListener(1, FrameListenerFunc(func(string, int, time.Duration) { panic("listener bug") }))
	for _, c := range []time.Duration{5 * time.Millisecond, 35 * time.Millisecond, 40 * time.Millisecond, 500 * time.Millisecond} {
		l.frameWith(c)
	}
	want := []call{{"list", 3, 40 * time.Millisecond}, {"list", 49, 500 * time.Millisecond}}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("threshold 3 listener got %v, want %v", calls, want)
	}
	if len(all) != 4 {
		t.Errorf("threshold 0 listener got %d frames, want every one (4)", len(all))
	}
	if n := ft.ListenerPanics(); n != 3 {
		t.Errorf("ListenerPanics = %d, want 3 (frames dropping >= 1)", n)
	}
	remove()
	remove() // harmless
	l.frameWith(time.Second)
	if len(calls) != 2 {
		t.Errorf("removed listener still called: %v", calls)
	}
	if len(all) != 5 {
		t.Errorf("the other listener is gone too: %d calls", len(all))
	}
	ft.AddFrameListener(0, nil)() // a nil listener is ignored
}

// Loops made by NewFrameLoop report to the frame tracer started last.
func TestFrameLoopFollowsActiveTracer(t *testing.T) {
	const I = 10 * time.Millisecond
	l := NewFrameLoop("follow", I)
	if l.frameWith(time.Second) != 0 {
		t.Error("a frame was counted with no frame tracer running")
	}
	a, ra := startFrames(t, time.Hour)
	b, rb := startFrames(t, time.Hour)
	l.frameWith(35 * time.Millisecond) // to b
	b.Stop()
	l.frameWith(45 * time.Millisecond) // to a again
	a.Stop()
	l.frameWith(time.Second) // nowhere
	if a.Running() || b.Running() {
		t.Error("Running after Stop")
	}
	ia, ib := ra.all(), rb.all()
	if len(ia) != 1 || len(ib) != 1 {
		t.Fatalf("reports: a %d, b %d; want 1 each", len(ia), len(ib))
	}
	if ib[0].Content["dropped"] != 2 || ia[0].Content["dropped"] != 3 {
		t.Errorf("b dropped %v, a dropped %v; want 2 and 3", ib[0].Content["dropped"], ia[0].Content["dropped"])
	}
	// Restarted, a starts from scratch.
	if err := a.Start(ra); err != nil {
		t.Fatal(err)
	}
	l.frameWith(5 * time.Millisecond)
	a.Stop()
	if ia := ra.all(); len(ia) != 2 || ia[1].Content["frames"] != 1 || ia[1].Content["dropped"] != 0 {
		t.Errorf("after a restart: %v", ia)
	}
}

func TestFrameTracerStartStop(t *testing.T) {
	ft := NewFrameTracer(FrameConfig{})
	if ft.Name() != FrameTracerName || ft.TimeSlice() != DefaultFPSTimeSlice || ft.Thresholds() != DefaultDropThresholds {
		t.Errorf("defaults: %s %v %+v", ft.Name(), ft.TimeSlice(), ft.Thresholds())
	}
	if err := ft.Start(nil); err == nil {
		t.Error("started without a reporter")
	}
	ft.Stop() // not started: harmless
	var r fpsReports
	if err := ft.Start(&r); err != nil {
		t.Fatal(err)
	}
	if err := ft.Start(&r); err != nil || !ft.Running() {
		t.Errorf("second Start: %v", err)
	}
	ft.Stop()
	ft.Stop()
	if len(r.all()) != 0 {
		t.Errorf("a scene without frames was reported: %v", r.all())
	}
}

func TestFrameThresholdsAndSlice(t *testing.T) {
	ft, got := startFrames(t, time.Hour)
	if err := ft.SetThresholds(DropThresholds{Normal: 1, Middle: 2, High: 3, Frozen: 4}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []DropThresholds{{Normal: 0, Middle: 2, High: 3, Frozen: 4}, {Normal: 3, Middle: 3, High: 5, Frozen: 6}, {Normal: 1, Middle: 2, High: 3, Frozen: 3}} {
		if err := ft.SetThresholds(bad); err == nil {
			t.Errorf("thresholds %+v accepted", bad)
		}
	}
	if ft.Thresholds().Frozen != 4 {
		t.Errorf("a rejected change applied: %+v", ft.Thresholds())
	}
	l := ft.NewFrameLoop("custom", 10*time.Millisecond)
	for _, c := range []time.Duration{10, 20, 30, 40, 50} {
		l.frameWith(c * time.Millisecond) // dropped 0, 1, 2, 3, 4
	}
	ft.SetTimeSlice(100 * time.Millisecond) // 15 slots so far: report at the next frame
	l.frameWith(time.Millisecond)
	issues := got.all()
	if len(issues) != 1 || !reflect.DeepEqual(issues[0].Content["dropLevel"], levels(2, 1, 1, 1, 1)) {
		t.Fatalf("reports %v", issues)
	}
	ft.SetTimeSlice(-1)
	if ft.TimeSlice() != DefaultFPSTimeSlice || ft.Thresholds().Frozen != 4 {
		t.Errorf("slice %v thresholds %+v", ft.TimeSlice(), ft.Thresholds())
	}
	if ft2 := NewFrameTracer(FrameConfig{Thresholds: DropThresholds{Normal: 5}}); ft2.Thresholds() != DefaultDropThresholds {
		t.Errorf("invalid thresholds kept: %+v", ft2.Thresholds())
	}
}

// Concurrent loops, some sharing a scene, with reports made while others
// run: every frame is counted exactly once.
func TestFrameConcurrentLoops(t *testing.T) {
	const I = 10 * time.Millisecond
	ft, got := startFrames(t, 500*time.Millisecond)
	costs := []time.Duration{5 * time.Millisecond, 45 * time.Millisecond, 100 * time.Millisecond, 5 * time.Millisecond, 250 * time.Millisecond, 430 * time.Millisecond}
	const goroutines, frames = 8, 3000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		l := ft.NewFrameLoop(fmt.Sprintf("scene-%d", g%4), I)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < frames; i++ {
				l.frameWith(costs[i%len(costs)])
			}
		}()
	}
	wg.Wait()
	ft.Stop()
	per := map[string]map[string]int{}
	nframes := map[string]int{}
	for _, is := range got.all() {
		scene := is.Content["scene"].(string)
		if per[scene] == nil {
			per[scene] = map[string]int{}
		}
		for k, v := range is.Content["dropLevel"].(map[string]int) {
			per[scene][k] += v
		}
		nframes[scene] += is.Content["frames"].(int)
	}
	// Each scene: 2 loops × 3000 frames, a sixth of them of each cost.
	const n = 2 * frames / 6
	want := levels(2*n, n, n, n, n)
	for s := 0; s < 4; s++ {
		scene := fmt.Sprintf("scene-%d", s)
		if !reflect.DeepEqual(per[scene], want) || nframes[scene] != 2*frames {
			t.Errorf("%s: %d frames, levels %v; want %d, %v", scene, nframes[scene], per[scene], 2*frames, want)
		}
	}
}

func TestFrameDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	if beat.Started() {
		t.Skip("the recorder runs: beat.Begin is measured by its own tests")
	}
	ft, _ := startFrames(t, time.Hour)
	ft.AddFrameListener(1, FrameListenerFunc(func(string, int, time.Duration) {}))
	bound := ft.NewFrameLoop("bound", time.Millisecond)
	active := NewFrameLoop("active", time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { bound.frameWith(3 * time.Millisecond) }); n != 0 {
		t.Errorf("frameWith allocates %.1f times per frame", n)
	}
	fn := func() {}
	if n := testing.AllocsPerRun(1000, func() { active.Frame(fn) }); n != 0 {
		t.Errorf("Frame allocates %.1f times per frame", n)
	}
	if n := testing.AllocsPerRun(1000, func() { active.BeginFrame(); active.EndFrame() }); n != 0 {
		t.Errorf("BeginFrame/EndFrame allocate %.1f times per frame", n)
	}
	ft.Stop()
	if n := testing.AllocsPerRun(1000, func() { active.Frame(fn) }); n != 0 {
		t.Errorf("Frame without a tracer allocates %.1f times per frame", n)
	}
}

// Real frames: Frame and BeginFrame/EndFrame time what runs in them.
func TestFrameTiming(t *testing.T) {
	const I = 10 * time.Millisecond
	ft, got := startFrames(t, time.Hour)
	var dropped []int
	ft.AddFrameListener(0, FrameListenerFunc(func(_ string, d int, cost time.Duration) { dropped = append(dropped, d) }))
	l := ft.NewFrameLoop("timed", I)
	l.Frame(func() { time.Sleep(35 * time.Millisecond) }) // >= 2 dropped
	l.EndFrame()                                          // no frame open: nothing
	l.BeginFrame()
	time.Sleep(45 * time.Millisecond) // >= 3 dropped
	l.BeginFrame()                    // ends the open frame first
	l.EndFrame()
	func() {
		defer func() { recover() }()
		l.Frame(func() { panic("frame bug") })
	}()
	if len(dropped) != 4 || dropped[0] < 2 || dropped[1] < 3 {
		t.Fatalf("dropped per frame %v, want 4 frames, >= 2 then >= 3", dropped)
	}
	ft.Stop()
	if is := got.all(); len(is) != 1 || is[0].Content["frames"] != 4 {
		t.Errorf("reports %v", is)
	}
}

func TestFrameIssueJSON(t *testing.T) {
	ft, got := startFrames(t, time.Hour)
	ft.NewFrameLoop("json", 10*time.Millisecond).frameWith(45 * time.Millisecond)
	ft.Stop()
	var out bytes.Buffer
	NewJSONListener(&out).OnReportIssue(got.all()[0])
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if m["tag"] != TagFPS || m["scene"] != "json" || m["fps"] != 25.0 || m["frames"] != 1.0 {
		t.Errorf("JSON %s", out.String())
	}
	if lv, ok := m["dropLevel"].(map[string]any); !ok || lv["DROPPED_NORMAL"] != 1.0 || lv["DROPPED_BEST"] != 0.0 {
		t.Errorf("dropLevel %v", m["dropLevel"])
	}
	if s, ok := m["dropSum"].(map[string]any); !ok || s["DROPPED_NORMAL"] != 3.0 {
		t.Errorf("dropSum %v", m["dropSum"])
	}
}

func TestFrameConfig(t *testing.T) {
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil || !cfg.FPS || cfg.Frame.TimeSlice != 10*time.Second || cfg.Frame.Thresholds != DefaultDropThresholds {
		t.Errorf("defaults: %+v %v", cfg.Frame, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{"MATRIX_FPS": "Off", "MATRIX_FPS_SLICE_MS": " 2500 "}))
	if err != nil || cfg.FPS || cfg.Frame.TimeSlice != 2500*time.Millisecond {
		t.Errorf("set: %v %+v %v", cfg.FPS, cfg.Frame, err)
	}
	for _, tc := range []struct{ name, value string }{
		{"MATRIX_FPS", "sometimes"},
		{"MATRIX_FPS_SLICE_MS", "10s"},
		{"MATRIX_FPS_SLICE_MS", "0"},
		{"MATRIX_FPS_SLICE_MS", "99999999999"},
	} {
		if _, err := ConfigFromEnv(env(map[string]string{tc.name: tc.value})); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%q: %v", tc.name, tc.value, err)
		}
	}

	p := NewTracePlugin(DefaultTraceConfig())
	ft, ok := p.Tracer(FrameTracerName).(*FrameTracer)
	if !ok {
		t.Fatalf("no FrameTracer in the default plugin: %v", p.Tracers())
	}
	if ft.TimeSlice() != DefaultFPSTimeSlice {
		t.Errorf("slice %v", ft.TimeSlice())
	}
	c := DefaultTraceConfig()
	c.FPS = false
	if NewTracePlugin(c).Tracer(FrameTracerName) != nil {
		t.Error("FPS off runs a FrameTracer")
	}
	c = DefaultTraceConfig()
	c.Frame.TimeSlice = -time.Second
	c.Frame.Thresholds = DropThresholds{Normal: 9, Middle: 3, High: 24, Frozen: 42}
	err = NewTracePlugin(c).Init()
	if err == nil || !strings.Contains(err.Error(), "TimeSlice") || !strings.Contains(err.Error(), "thresholds") {
		t.Errorf("bad frame config: %v", err)
	}
}

// TestSlowFrameIsDispatch: each frame is a dispatch, so a frame slower than
// the slow-call threshold comes with its call tree, and the frame tracer of
// the plugin counts it.
func TestSlowFrameIsDispatch(t *testing.T) {
	cfg := DefaultTraceConfig()
	cfg.EvilThreshold = 50 * time.Millisecond
	p, got, _ := startPlugin(t, cfg)
	l := NewFrameLoop("level-1", 10*time.Millisecond)
	l.Frame(func() {
		beat.Enter(idA)
		time.Sleep(75 * time.Millisecond) // 6 dropped (up to 99 ms: 8), NORMAL
		beat.Exit(idA)
	})
	l.Frame(func() {})
	l.BeginFrame()
	beat.Enter(idB)
	time.Sleep(60 * time.Millisecond)
	beat.Exit(idB)
	l.EndFrame()
	p.Stop()
	var evil, fps []Issue
	for _, is := range got.all() {
		switch is.Tag {
		case TagEvilMethod:
			evil = append(evil, is)
		case TagFPS:
			fps = append(fps, is)
		}
	}
	if len(evil) != 2 {
		t.Fatalf("%d slow-call reports, want 2 (the slow frames): %v", len(evil), evil)
	}
	for i, key := range []string{"1040001|", "1040002|"} {
		c := evil[i].Content
		// Each frame's function slept: its tree holds it, the key names
		// the sleep.
		if c["kind"] != "frame" || c["scene"] != "level-1" || !strings.HasSuffix(evil[i].Key, "[sleep]|") ||
			!strings.Contains(c["stack"].(string), "\n1,"+strings.TrimSuffix(key, "|")+",1,") {
			t.Errorf("slow frame %d: kind %v scene %v key %q, want frame level-1 %s\n%v", i, c["kind"], c["scene"], evil[i].Key, key, c["stack"])
		}
	}
	if len(fps) != 1 {
		t.Fatalf("%d FPS reports, want 1", len(fps))
	}
	c := fps[0].Content
	if c["frames"] != 3 || c["scene"] != "level-1" {
		t.Errorf("FPS report %v", c)
	}
	// The two slow frames dropped at least 5 frames each (NORMAL); a
	// loaded machine may oversleep them into a higher level, never a lower.
	lv := c["dropLevel"].(map[string]int)
	if slow := lv["DROPPED_NORMAL"] + lv["DROPPED_MIDDLE"] + lv["DROPPED_HIGH"] + lv["DROPPED_FROZEN"]; lv["DROPPED_BEST"] != 1 || slow != 2 {
		t.Errorf("dropLevel %v, want 1 BEST and 2 NORMAL or worse", lv)
	}
}
