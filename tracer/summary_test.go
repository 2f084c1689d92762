package tracer

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
)

func TestFramePaths(t *testing.T) {
	frames := []Frame{
		{Depth: 0, ID: beat.DispatchID, Count: 1, Cost: 100},
		{Depth: 1, Func: "p.a", Count: 1, Cost: 60},
		{Depth: 2, Func: "p.b", Count: 30, Cost: 50},
		{Depth: 2, Kind: FrameWait, Reason: "sleep", Cost: 5},
		{Depth: 1, Func: "p.a", Count: 2, Cost: 10}, // the same path again
		{Depth: 1, Kind: FrameGoroutine, Func: "p.g", Count: 1, Cost: 90},
		{Depth: 1, ID: 7, Count: 1, Cost: 1},
	}
	got := FramePaths(frames)
	want := []PathNode{
		{Path: "DISPATCH", Count: 1, Cost: 100, Self: 29},
		{Path: "DISPATCH;p.a", Count: 3, Cost: 70, Self: 15},
		{Path: "DISPATCH;p.a;p.b", Count: 30, Cost: 50, Self: 50},
		{Path: "DISPATCH;p.a;[sleep]", Count: 0, Cost: 5, Self: 5},
		{Path: "DISPATCH;go p.g", Count: 1, Cost: 90, Self: 90},
		{Path: "DISPATCH;id 7", Count: 1, Cost: 1, Self: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("FramePaths:\n got %+v\nwant %+v", got, want)
	}
}

// issueSink is a Reporter that keeps what it is given.
type issueSink struct {
	mu     sync.Mutex
	issues []Issue
}

func (s *issueSink) Report(is Issue) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issues = append(s.issues, is)
	return true
}

func TestSummaryTracerFoldsDispatches(t *testing.T) {
	const D = beat.DispatchID
	st := NewSummaryTracer(0)
	sink := &issueSink{}
	if err := st.Start(sink); err != nil {
		t.Fatal(err)
	}
	job := func(scene string, calls int) *evilJob {
		var evs []any
		evs = append(evs, true, D, 0, true, idA, 0)
		ms := 0
		for range calls {
			evs = append(evs, true, idB, ms)
			ms += 5
			evs = append(evs, false, idB, ms)
		}
		evs = append(evs, false, idA, ms, false, D, ms+1)
		return &evilJob{recs: records(evs...), rec: recDispatch, name: scene, cost: time.Duration(ms+1) * time.Millisecond, endMs: uint64(ms + 1)}
	}
	for _, j := range []*evilJob{job("GET /a", 1), job("GET /a", 1), job("GET /a", 30), job("GET /b", 2)} {
		st.jobs <- j
	}
	st.jobs <- &evilJob{name: "GET /b", cost: 3 * time.Millisecond} // no records
	st.Stop()
	if len(sink.issues) != 2 {
		t.Fatalf("got %d issues, want one per scene (2)", len(sink.issues))
	}
	a := sink.issues[0].Report.(*SummaryReport)
	if a.Scene != "GET /a" || a.Dispatches != 3 || !slices.Equal(a.Costs, [][2]int64{{6, 2}, {151, 1}}) {
		t.Errorf("GET /a: %+v", a)
	}
	var b *SummaryPath
	for i := range a.Paths {
		if a.Paths[i].Path == "DISPATCH;id 1040001;id 1040002" {
			b = &a.Paths[i]
		}
	}
	if b == nil || b.Calls != 32 || b.Dispatches != 3 || b.TotalMs != 160 || b.SelfMs != 160 ||
		!slices.Equal(b.Costs, [][2]int64{{5, 2}, {150, 1}}) {
		t.Errorf("path of B: %+v (paths %+v)", b, a.Paths)
	}
	bb := sink.issues[1].Report.(*SummaryReport)
	if bb.Scene != "GET /b" || bb.Dispatches != 2 || bb.Untraced != 1 {
		t.Errorf("GET /b: %+v", bb)
	}
	if sink.issues[0].Tag != TagSummary || sink.issues[0].Content["scene"] != "GET /a" {
		t.Errorf("issue %q content %v", sink.issues[0].Tag, sink.issues[0].Content)
	}
}

// A tree longer than a report's (analysis.MaxStackLines) is summarised
// whole: no call is trimmed away.
func TestSummaryTracerKeepsEveryCall(t *testing.T) {
	const D = beat.DispatchID
	evs := []any{true, D, 0}
	ms := 0
	for range 30 {
		evs = append(evs, true, idB, ms, true, idC, ms+1, false, idC, ms+2, false, idB, ms+4)
		ms += 4
		evs = append(evs, true, idA, ms, false, idA, ms+1)
		ms++
	}
	evs = append(evs, false, D, ms)
	st := NewSummaryTracer(0)
	sink := &issueSink{}
	if err := st.Start(sink); err != nil {
		t.Fatal(err)
	}
	st.jobs <- &evilJob{recs: records(evs...), rec: recDispatch, name: "loop", cost: time.Duration(ms) * time.Millisecond, endMs: uint64(ms)}
	st.Stop()
	r := sink.issues[0].Report.(*SummaryReport)
	calls := map[string]int64{}
	total := map[string]int64{}
	for _, p := range r.Paths {
		calls[p.Path], total[p.Path] = p.Calls, p.TotalMs
	}
	if calls["DISPATCH;id 1040002"] != 30 || total["DISPATCH;id 1040002"] != 120 ||
		calls["DISPATCH;id 1040002;id 1040003"] != 30 || calls["DISPATCH;id 1040001"] != 30 {
		t.Errorf("calls %v\ntotal %v", calls, total)
	}
}

func TestConfigFromEnvSummary(t *testing.T) {
	has := func(p *TracePlugin) bool {
		for _, tr := range p.tracers {
			if _, ok := tr.(*SummaryTracer); ok {
				return true
			}
		}
		return false
	}
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil || cfg.Summary || has(NewTracePlugin(cfg)) {
		t.Errorf("the summary tracer is on by default (%v)", err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{EnvSummary: "on"}))
	if err != nil || !cfg.Summary || !has(NewTracePlugin(cfg)) {
		t.Errorf("MATRIX_SUMMARY=on: summary %v, %v", cfg.Summary, err)
	}
	if _, err := ConfigFromEnv(env(map[string]string{EnvSummary: "maybe"})); err == nil || !strings.Contains(err.Error(), EnvSummary) {
		t.Errorf("a bad MATRIX_SUMMARY: %v", err)
	}
}
