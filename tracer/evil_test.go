package tracer

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/internal/uuidv4"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// Ids the tests write by hand: far above what matrixexec allocates, so
// that no instrumented function of the test binary has them.
const (
	idA = 1040001
	idB = 1040002
	idC = 1040003
)

func records(evs ...any) []uint64 {
	var out []uint64
	for i := 0; i < len(evs); i += 3 {
		out = append(out, uint64(analysis.MakeRecord(evs[i].(bool), uint32(evs[i+1].(int)), uint64(evs[i+2].(int)))))
	}
	return out
}

func toAnalysis(recs []uint64) []analysis.Record {
	out := make([]analysis.Record, len(recs))
	for i, r := range recs {
		out[i] = analysis.Record(r)
	}
	return out
}

// docs/design.md worked example 1, with ids A, B, C for 1, 2, 3.
func TestEvilIssueContent(t *testing.T) {
	const D = beat.DispatchID
	end := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	j := &evilJob{
		recs: records(true, D, 1000, true, idA, 1000, true, idB, 1010, false, idB, 1030,
			true, idC, 1030, false, idC, 1100, false, idA, 1120, false, D, 1125),
		rec: recDispatch, name: "job", kind: beat.KindHTTP, goid: 77, id: 9,
		cost: 125 * time.Millisecond, endMs: 1125, end: end,
		cpuNs: 50 * int64(time.Millisecond), cpuWall: 125 * time.Millisecond, hasCPU: true,
	}
	is := evilIssue(j, toAnalysis(j.recs))
	if is.Tag != TagEvilMethod || is.Key != "1040001|" {
		t.Errorf("tag %q key %q", is.Tag, is.Key)
	}
	c := is.Content
	want := map[string]any{
		"tag":        TagEvilMethod,
		"detail":     "NORMAL",
		"cost":       int64(125),
		"stack":      "0,1048574,1,125\n1,1040001,1,120\n2,1040002,1,20\n2,1040003,1,70\n",
		"stackKey":   "1040001|",
		"scene":      "job", // no scene: the name
		"name":       "job",
		"kind":       "http",
		"threadId":   uint64(77),
		"goroutine":  uint64(77),
		"dispatchId": uint64(9),
		"begin":      "2025-01-02T03:04:04.875000006Z", // the end less the cost
		"recorded":   true,
		"cpu":        int64(50),
		"usage":      "40.00%",
		"time":       "2025-01-02T03:04:05.000000006Z",
		"pid":        c["pid"],
		"process":    c["process"],
		"id":         is.ID,
		"frames":     c["frames"],
		"goVersion":  runtime.Version(),
		"parts":      c["parts"],
	}
	if h := hostName(); h != "" {
		want["hostName"] = h
	}
	// Without samples or waits, the calls' own time is unexplained.
	if p, ok := c["parts"].(PartsFields); !ok || p != (PartsFields{Unexplained: 125}) {
		t.Errorf("parts %#v, want all 125 ms unexplained", c["parts"])
	}
	for k, v := range want {
		if k == "frames" || k == "parts" {
			continue
		}
		if c[k] != v {
			t.Errorf("content[%q] = %#v, want %#v", k, c[k], v)
		}
	}
	if len(c) != len(want) {
		t.Errorf("content has %d fields, want %d: %v", len(c), len(want), c)
	}
	if !uuidv4.Canonical(is.ID) {
		t.Errorf("issue id %q is not a UUID", is.ID)
	}
	frames := c["frames"].([]Frame)
	wantFrames := []Frame{
		{Depth: 0, ID: beat.DispatchID, Count: 1, Cost: 125, Func: "DISPATCH"},
		{Depth: 1, ID: idA, Count: 1, Cost: 120},
		{Depth: 2, ID: idB, Count: 1, Cost: 20, Start: 10},
		{Depth: 2, ID: idC, Count: 1, Cost: 70, Start: 30},
	}
	if len(frames) != len(wantFrames) {
		t.Fatalf("frames %+v", frames)
	}
	for i := range frames {
		if frames[i] != wantFrames[i] {
			t.Errorf("frame %d = %+v, want %+v", i, frames[i], wantFrames[i])
		}
	}

	j.scene = "GET /x/{id}"
	if s := evilIssue(j, toAnalysis(j.recs)).Content["scene"]; s != "GET /x/{id}" {
		t.Errorf("scene %v", s)
	}
	// An HTTP dispatch's request and status; never more of the request.
	j.req = DispatchFields{Method: "GET", Host: "shop:8080", Scheme: "https", Status: 503}
	c = evilIssue(j, toAnalysis(j.recs)).Content
	for k, v := range map[string]any{"method": "GET", "host": "shop:8080", "scheme": "https", "status": 503} {
		if c[k] != v {
			t.Errorf("content[%q] = %#v, want %#v", k, c[k], v)
		}
	}
	j.hasCPU = false
	if _, ok := evilIssue(j, toAnalysis(j.recs)).Content["cpu"]; ok {
		t.Error("cpu reported without a reading")
	}
}

func TestEvilIssueNotRecorded(t *testing.T) {
	for _, tc := range []struct {
		rec  recording
		note string
	}{{recNoBuffer, "began (raise MATRIX_RECORD_MEMORY_MB"}, {recShort, "stopped recording (raise MATRIX_RECORD_MEMORY_MB)"}, {recDispatch, "MATRIX_BUFFER_SIZE"}} {
		j := &evilJob{rec: tc.rec, name: "n", cost: 900 * time.Millisecond, endMs: 900}
		is := evilIssue(j, nil)
		c := is.Content
		if c["recorded"] != false || c["stack"] != "" || c["stackKey"] != "" || is.Key != "" || c["cost"] != int64(900) {
			t.Errorf("recording %v: %v", tc.rec, c)
		}
		if note, _ := c["note"].(string); !strings.Contains(note, tc.note) {
			t.Errorf("recording %v: note %q does not mention %s", tc.rec, note, tc.note)
		}
		if f := c["frames"].([]Frame); f == nil || len(f) != 0 {
			t.Errorf("frames %#v, want an empty list", f)
		}
	}
}

func TestProcessCPU(t *testing.T) {
	a, ok := processCPU()
	if ok != cpuSupported {
		t.Fatalf("processCPU ok=%v on %s", ok, runtime.GOOS)
	}
	if !ok {
		t.Skip("no process CPU clock on " + runtime.GOOS)
	}
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	if b, _ := processCPU(); b <= a {
		t.Errorf("CPU time did not advance over a busy loop: %d → %d", a, b)
	}
}

func TestCPUClockCaches(t *testing.T) {
	if !cpuSupported {
		t.Skip("no process CPU clock on " + runtime.GOOS)
	}
	var c cpuClock
	now := cpuNow()
	first, ok := c.read(now, 10*time.Millisecond)
	if !ok || first.ns <= 0 {
		t.Fatalf("first read %+v %v", first, ok)
	}
	// Within maxAge the cached reading is returned as it is.
	if again, _ := c.read(now+5*time.Millisecond, 10*time.Millisecond); again != first {
		t.Errorf("cached read %+v, want %+v", again, first)
	}
	// Outside it, a fresh one.
	deadline := time.Now().Add(20 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	later := cpuNow()
	fresh, _ := c.read(later, 10*time.Millisecond)
	if fresh.at < later || fresh.ns <= first.ns {
		t.Errorf("stale read %+v after busy 20ms (first %+v)", fresh, first)
	}
}

func TestEvilTracerLifecycleWithoutRecorder(t *testing.T) {
	tr := NewEvilMethodTracer(0, 0)
	if tr.Threshold() != DefaultEvilThreshold || cap(tr.jobs) != DefaultAnalysisBacklog {
		t.Errorf("defaults: %v %d", tr.Threshold(), cap(tr.jobs))
	}
	tr.SetThreshold(time.Second)
	if tr.Threshold() != time.Second {
		t.Error("SetThreshold")
	}
	if err := tr.Start(nil); err == nil {
		t.Error("started without a reporter")
	}
	before := runtime.NumGoroutine()
	var got recorder
	q := newQueue(8, nil)
	q.addListener(&got)
	q.start()
	if err := tr.Start(reporterFunc(q.report)); err != nil {
		t.Fatal(err)
	}
	// A job handed over before Stop is analysed and reported at Stop.
	j := &evilJob{recs: records(true, beat.DispatchID, 0, false, beat.DispatchID, 800), rec: recDispatch, name: "x", cost: 800 * time.Millisecond, endMs: 800}
	tr.jobs <- j
	tr.Stop()
	q.stopDelivery(time.Second)
	if len(got.issues) != 1 || got.issues[0].Content["stack"] != "0,1048574,1,800\n" {
		t.Errorf("issues %+v", got.issues)
	}
	waitGoroutines(t, before) // goroutines of earlier tests may end later
}

type reporterFunc func(Issue) bool

func (f reporterFunc) Report(is Issue) bool { return f(is) }

func TestEvilIssueTraceParent(t *testing.T) {
	const D = beat.DispatchID
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	j := &evilJob{
		recs: records(true, D, 0, true, idA, 0, false, idA, 800, false, D, 800),
		rec:  recDispatch, name: "http", kind: beat.KindHTTP,
		cost: 800 * time.Millisecond, endMs: 800, end: time.Now(),
		traceCtx: tp,
	}
	if got := evilIssue(j, toAnalysis(j.recs)).Content[KeyTraceParent]; got != tp {
		t.Errorf("traceparent = %v, want %s", got, tp)
	}
	j.traceCtx = "00-" + strings.Repeat("0", 32) + "-00f067aa0ba902b7-01"
	if got, ok := evilIssue(j, toAnalysis(j.recs)).Content[KeyTraceParent]; ok {
		t.Errorf("invalid traceparent reported as %v", got)
	}
}

// A slow call whose tree has an N+1 pattern names it (repeat); one under
// the rule's thresholds does not.
func TestEvilIssueRepeat(t *testing.T) {
	const D = beat.DispatchID
	// D calls A, which calls B 12 times for 10 ms each (B calls C, so
	// that the calls do not fold), then C once for 20 ms.
	evs := []any{true, D, 1000, true, idA, 1000}
	at := 1000
	for range 12 {
		evs = append(evs, true, idB, at, true, idC, at, false, idC, at+10, false, idB, at+10)
		at += 10
	}
	evs = append(evs, true, idC, at, false, idC, at+20, false, idA, at+20, false, D, at+20)
	job := func(rule analysis.RepeatRule) *evilJob {
		return &evilJob{recs: records(evs...), rec: recDispatch, name: "job", kind: beat.KindHTTP,
			cost: time.Duration(at+20-1000) * time.Millisecond, endMs: uint64(at + 20), repeats: rule}
	}
	is := evilIssue(job(analysis.RepeatRule{MinCalls: 10, MinPercent: 20}), nil)
	rp, ok := is.Content["repeat"].(RepeatFields)
	if !ok {
		t.Fatalf("no repeat in %v", is.Content)
	}
	want := RepeatFields{ID: idB, ParentID: idA, Calls: 12, Cost: 120, Percent: 85}
	if rp != want {
		t.Errorf("repeat %+v, want %+v", rp, want)
	}
	if s := rp.String(); s != "N+1: id 1040002 ×12 under id 1040001, 120 ms (85 %)" {
		t.Errorf("String() = %q", s)
	}
	named := RepeatFields{Func: "example.com/app.(*orderRepo).loadItem", Parent: "example.com/app.(*orderService).checkout", Calls: 48, Cost: 420, Percent: 56}
	if s := named.String(); s != "N+1: (*orderRepo).loadItem ×48 under (*orderService).checkout, 420 ms (56 %)" {
		t.Errorf("String() = %q", s)
	}
	if k := named.Key(); k != "example.com/app.(*orderRepo).loadItem under example.com/app.(*orderService).checkout" {
		t.Errorf("Key() = %q", k)
	}
	for _, rule := range []analysis.RepeatRule{{MinCalls: 13, MinPercent: 20}, {MinCalls: 10, MinPercent: 90}, {}} {
		if rp, ok := evilIssue(job(rule), nil).Content["repeat"]; ok {
			t.Errorf("rule %+v: repeat %+v", rule, rp)
		}
	}
}
