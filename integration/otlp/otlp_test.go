package otlp_test

import (
	"encoding/hex"
	. "github.com/matrixgo/matrix/tracer/otlp"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/integration/otlptest"
	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

func i64(v int64) *int64 { return &v }

// flat is a report as the tests build it: every field at the top, as a
// report line has them; typed gives the report export reads.
type flat struct {
	Tag, ID, Time, Process                 string
	PID                                    int64
	HostName, GoVersion                    string
	Detail                                 string
	Cost                                   int64
	StackKey, Scene, Name, Kind, Note, Why string
	Goroutine, DispatchID                  uint64
	Begin, Method, Host, Scheme            string
	Status                                 int
	TraceParent, TraceState, TraceID       string
	Frames                                 []tracer.Frame
	ThreadStack                            string
	Served                                 uint64
	Running, Goroutines                    int
	Memory                                 map[string]uint64
	GCPauseMs                              float64
	GCCycles                               uint64
	Repeat                                 *tracer.RepeatFields
	CPU                                    *int64
	Usage                                  string
}

func (f *flat) typed() *Report {
	ev := &tracer.EvilReport{
		Detail: f.Detail, Scene: f.Scene, Cost: f.Cost, Note: f.Note, Why: f.Why,
		TraceParent: f.TraceParent, TraceState: f.TraceState, TraceID: f.TraceID, Repeat: f.Repeat, CPU: f.CPU, Usage: f.Usage,
		Dispatch: &tracer.DispatchFields{Name: f.Name, Kind: f.Kind, Goroutine: f.Goroutine, ThreadID: f.Goroutine, ID: f.DispatchID,
			Method: f.Method, Host: f.Host, Scheme: f.Scheme, Status: f.Status, Begin: f.Begin},
	}
	if f.Detail == tracer.DetailLag || f.Detail == tracer.DetailANR {
		ev.Watchdog = &tracer.WatchdogFields{ThreadStack: f.ThreadStack, Served: f.Served, Running: f.Running, Goroutines: f.Goroutines}
	}
	if f.Detail == tracer.DetailANR {
		ev.ANR = &tracer.ANRFields{Memory: f.Memory, GCPauseMs: f.GCPauseMs, GCCycles: f.GCCycles}
	}
	if f.Frames != nil || f.StackKey != "" {
		ev.Tree = &tracer.TreeFields{StackKey: f.StackKey, Frames: f.Frames, Recorded: len(f.Frames) > 0}
	}
	return &Report{Tag: f.Tag, ID: f.ID, Time: f.Time, Process: f.Process, PID: f.PID, HostName: f.HostName, GoVersion: f.GoVersion, Evil: ev}
}

func slowReport() *flat {
	return &flat{
		Tag: tracer.TagEvilMethod, ID: "5b1f0c1e-8d57-4b4e-9d8f-3f7f0a4f5e21", Time: "2026-01-02T03:04:05.5Z",
		Process: "shop", PID: 42, Detail: "NORMAL", Cost: 900, StackKey: "7|", Scene: "GET /slow", Name: "http", Kind: "http",
		TraceParent: "00-" + callerTrace + "-" + callerSpan + "-01",
		TraceState:  "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
		Frames: []tracer.Frame{
			{Depth: 0, ID: abi.DispatchID, Count: 1, Cost: 900, Func: "DISPATCH", Start: 0},
			{Depth: 1, ID: 5, Count: 1, Cost: 880, Func: "example.com/shop.handler", File: "/src/shop/main.go", Line: 10, Start: 10},
			{Depth: 2, ID: 6, Count: 3, Cost: 30, Func: "example.com/shop.fast", File: "/src/shop/main.go", Line: 20, Start: 12},
			{Depth: 2, ID: 7, Count: 1, Cost: 800, Func: "example.com/shop.slow", File: "/src/shop/main.go", Line: 30, Start: 60},
			{Depth: 3, ID: 8, Count: 1, Cost: 790, Kind: "wait", Reason: "sync.Mutex.Lock", Start: 65},
		},
	}
}

func decode(t *testing.T, spans []Span) []*tracepb.Span {
	t.Helper()
	body := Encode([]*ResourceSpans{{Scope: ScopeName, Spans: spans}})
	var td tracepb.TracesData
	if err := proto.Unmarshal(body, &td); err != nil {
		t.Fatalf("body does not decode: %v", err)
	}
	var out []*tracepb.Span
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	if len(out) != len(spans) {
		t.Fatalf("decoded %d spans of %d", len(out), len(spans))
	}
	return out
}

func byName(spans []*tracepb.Span) map[string]*tracepb.Span {
	m := map[string]*tracepb.Span{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

func toTest(spans []*tracepb.Span) []otlptest.Span {
	out := make([]otlptest.Span, len(spans))
	for i, s := range spans {
		out[i] = otlptest.Span{Span: s}
	}
	return out
}

func TestSpansFromReport(t *testing.T) {
	own, err := Spans(slowReport().typed())
	if err != nil {
		t.Fatal(err)
	}
	spans := decode(t, own)
	if len(spans) != 5 {
		t.Fatalf("%d spans, want the root and 4 nodes:\n%s", len(spans), otlptest.Dump(toTest(spans)))
	}
	m := byName(spans)
	root, handler, fast, slow, wait := m["GET /slow"], m["example.com/shop.handler"], m["example.com/shop.fast"], m["example.com/shop.slow"], m["[sync.Mutex.Lock]"]
	if root == nil || handler == nil || fast == nil || slow == nil || wait == nil {
		t.Fatalf("span names:\n%s", otlptest.Dump(toTest(spans)))
	}
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) != callerTrace {
			t.Errorf("span %q in trace %x, want the caller's %s", s.Name, s.TraceId, callerTrace)
		}
		if s.TraceState != "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7" {
			t.Errorf("span %q has tracestate %q, want the caller's", s.Name, s.TraceState)
		}
	}
	if hex.EncodeToString(root.ParentSpanId) != callerSpan {
		t.Errorf("root parent %x, want the caller's span %s", root.ParentSpanId, callerSpan)
	}
	if root.Flags&uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK) == 0 {
		t.Error("root's parent not marked remote")
	}
	parents := map[*tracepb.Span]*tracepb.Span{handler: root, fast: handler, slow: handler, wait: slow}
	for c, p := range parents {
		if string(c.ParentSpanId) != string(p.SpanId) {
			t.Errorf("%q's parent is %x, want %q", c.Name, c.ParentSpanId, p.Name)
		}
	}
	end := time.Date(2026, 1, 2, 3, 4, 5, 500e6, time.UTC)
	ms := func(s *tracepb.Span) (int64, int64) {
		base := end.Add(-900 * time.Millisecond).UnixNano()
		return (int64(s.StartTimeUnixNano) - base) / 1e6, (int64(s.EndTimeUnixNano) - base) / 1e6
	}
	for s, want := range map[*tracepb.Span][2]int64{root: {0, 900}, handler: {10, 891}, fast: {12, 43}, slow: {60, 861}, wait: {65, 856}} {
		if a, b := ms(s); a != want[0] || b != want[1] {
			t.Errorf("%q spans [%d, %d] ms, want %v", s.Name, a, b, want)
		}
	}
	if err := otlptest.CheckNested(toTest(spans)); err != nil {
		t.Error(err)
	}
	ra := otlptest.Span{Span: root}
	for k, v := range map[string]string{"matrix.stackKey": "7|", "matrix.detail": "NORMAL", "matrix.scene": "GET /slow", "matrix.stackKey.function": "example.com/shop.slow", "http.route": "/slow", "http.request.method": "GET", "matrix.cost_ms": "900"} {
		if got := ra.Attr(k); got != v {
			t.Errorf("root %s = %q, want %q", k, got, v)
		}
	}
	sa := otlptest.Span{Span: slow}
	for k, v := range map[string]string{"code.function.name": "example.com/shop.slow", "code.file.path": "shop/main.go", "code.line.number": "30", "matrix.id": "7"} {
		if got := sa.Attr(k); got != v {
			t.Errorf("slow %s = %q, want %q", k, got, v)
		}
	}
	if got := (otlptest.Span{Span: fast}).Attr("matrix.count"); got != "3" {
		t.Errorf("fast count %q", got)
	}
	if got := (otlptest.Span{Span: wait}).Attr("matrix.wait.reason"); got != "sync.Mutex.Lock" {
		t.Errorf("wait reason %q", got)
	}
	if got := (otlptest.Span{Span: wait}).Attr("matrix.wait.for"); got != "" {
		t.Errorf("wait for %q, want none", got)
	}

	if got := ra.Attr("matrix.repeat"); got != "" {
		t.Errorf("root matrix.repeat = %q without an N+1 pattern", got)
	}
	// A report with an N+1 pattern carries it on the root span.
	rep := slowReport()
	rep.Frames[4].For = tracer.WaitForPool
	rep.Repeat = &tracer.RepeatFields{Func: "example.com/shop.fast", ID: 6, Parent: "example.com/shop.handler", ParentID: 5, Calls: 30, Cost: 300, Percent: 33}
	withRepeat, err := Spans(rep.typed())
	if err != nil {
		t.Fatal(err)
	}
	named := byName(decode(t, withRepeat))
	if got := (otlptest.Span{Span: named["[sync.Mutex.Lock]"]}).Attr("matrix.wait.for"); got != tracer.WaitForPool {
		t.Errorf("wait for %q, want %q", got, tracer.WaitForPool)
	}
	rr := otlptest.Span{Span: named["GET /slow"]}
	for k, v := range map[string]string{"matrix.repeat": "N+1: fast ×30 under handler, 300 ms (33 %)", "matrix.repeat.key": "example.com/shop.fast under example.com/shop.handler", "matrix.repeat.calls": "30", "matrix.repeat.cost_ms": "300"} {
		if got := rr.Attr(k); got != v {
			t.Errorf("root %s = %q, want %q", k, got, v)
		}
	}

	// The same report gives the same ids (re-export is idempotent).
	again, _ := Spans(slowReport().typed())
	for i := range own {
		if own[i].SpanID != again[i].SpanID {
			t.Errorf("span %d id changed", i)
		}
	}
}

func TestSpansWithoutTraceParent(t *testing.T) {
	r := slowReport()
	r.TraceParent = "00-" + strings.Repeat("0", 32) + "-" + callerSpan + "-01" // invalid: ignored
	own, err := Spans(r.typed())
	if err != nil {
		t.Fatal(err)
	}
	spans := decode(t, own)
	m := byName(spans)
	root := m["GET /slow"]
	if len(root.ParentSpanId) != 0 {
		t.Errorf("root has parent %x without a valid traceparent", root.ParentSpanId)
	}
	for _, s := range spans {
		if s.TraceState != "" {
			t.Errorf("span %q has tracestate %q without a valid traceparent", s.Name, s.TraceState)
		}
	}
	if hex.EncodeToString(root.TraceId) == strings.Repeat("0", 32) || len(root.TraceId) != 16 {
		t.Errorf("trace id %x", root.TraceId)
	}
	if err := otlptest.CheckNested(toTest(spans)); err != nil {
		t.Error(err)
	}
}

func TestSpansClampIntoParent(t *testing.T) {
	r := slowReport()
	// A child reported longer than its parent, and one starting after it.
	r.Frames[3].Cost = 5000
	r.Frames[2].Start = 2000
	r.Frames[4].Cost = 1 << 62 // garbage: no overflow
	r.Frames[4].Start = 1 << 62
	own, err := Spans(r.typed())
	if err != nil {
		t.Fatal(err)
	}
	spans := decode(t, own)
	if err := otlptest.CheckNested(toTest(spans)); err != nil {
		t.Error(err)
	}
}

func TestSpansLagWithoutFrames(t *testing.T) {
	r := slowReport()
	r.Detail, r.Frames, r.StackKey = "LAG", nil, ""
	own, err := Spans(r.typed())
	if err != nil {
		t.Fatal(err)
	}
	spans := decode(t, own)
	if len(spans) != 1 || spans[0].Name != "LAG GET /slow" {
		t.Fatalf("spans %v, err %v", spans, err)
	}
}

// issue returns the issue the tracer would hand the sink for r: its typed
// report, with the fields every issue carries.
func issue(t testing.TB, r *flat) tracer.Issue {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		t.Fatal(err)
	}
	is := tracer.NewIssue(tracer.TagEvilMethod, r.StackKey, at, nil)
	is.Report = r.typed().Evil
	return is
}

func TestExporterSends(t *testing.T) {
	rcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	e, err := NewExporter(Config{URL: rcv.URL + "/v1/traces", Headers: map[string]string{"Api-Key": "secret"}, Resource: Resource{ServiceName: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	e.OnReportIssue(issue(t, slowReport()))
	e.OnReportIssue(tracer.NewIssue(tracer.TagFPS, "", time.Time{}, nil)) // ignored
	e.Close(10 * time.Second)
	if e.Sent() != 1 || e.Dropped() != 0 {
		t.Errorf("sent %d dropped %d (err %v)", e.Sent(), e.Dropped(), e.Err())
	}
	if !e.Flush(0) {
		t.Error("Flush after Close: issues unaccounted for")
	}
	spans := rcv.Spans()
	if len(spans) != 5 || len(rcv.Errors()) > 0 {
		t.Fatalf("received %d spans, errors %v:\n%s", len(spans), rcv.Errors(), otlptest.Dump(spans))
	}
	if spans[0].Resource["service.name"] != "shop" {
		t.Errorf("resource %v", spans[0].Resource)
	}
	if h := rcv.Headers()[0].Get("Api-Key"); h != "secret" {
		t.Errorf("header Api-Key = %q", h)
	}
	if hex.EncodeToString(spans[0].TraceId) != callerTrace {
		t.Errorf("trace %x", spans[0].TraceId)
	}
}

func TestExporterRetries(t *testing.T) {
	rcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	rcv.FailNext(http.StatusServiceUnavailable, http.StatusTooManyRequests)
	e, err := NewExporter(Config{URL: rcv.URL + "/v1/traces", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.OnReportIssue(issue(t, slowReport()))
	if !e.Flush(20 * time.Second) {
		t.Error("Flush gave up")
	}
	e.Close(10 * time.Second)
	if e.Sent() != 1 || e.Dropped() != 0 || rcv.Requests() != 3 {
		t.Errorf("sent %d dropped %d after %d requests (err %v)", e.Sent(), e.Dropped(), rcv.Requests(), e.Err())
	}

	// A non-retryable status loses the batch at once.
	rcv.FailNext(http.StatusBadRequest)
	e, _ = NewExporter(Config{URL: rcv.URL + "/v1/traces", Backoff: time.Millisecond})
	e.OnReportIssue(issue(t, slowReport()))
	e.Close(10 * time.Second)
	if e.Sent() != 0 || e.Failed() != 1 || rcv.Requests() != 4 || e.Err() == nil {
		t.Errorf("sent %d failed %d after %d requests (err %v)", e.Sent(), e.Failed(), rcv.Requests(), e.Err())
	}
}

// Whatever the frames say (depths that jump, costs larger than the

// parent's, starts outside it, missing starts), the spans nest in time.

func TestSpansAlwaysNest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		r := slowReport()
		r.Cost = rng.Int64N(5000)
		r.Frames = r.Frames[:1]
		depth := 0
		for range rng.IntN(40) {
			depth = max(0, min(depth+rng.IntN(3)-1, depth+1))
			if rng.IntN(10) == 0 {
				depth += 2 // a gap
			}
			f := tracer.Frame{Depth: depth, ID: uint32(1 + rng.IntN(50)), Count: 1, Cost: rng.Int64N(6000) - 100, Func: "f"}
			if rng.IntN(4) != 0 {
				f.Start = rng.Int64N(6000) - 100
			}
			r.Frames = append(r.Frames, f)
		}
		own, err := Spans(r.typed())
		if err != nil {
			t.Fatal(err)
		}
		if len(own) != len(r.Frames) {
			t.Fatalf("report %d: %d spans for %d frames", n, len(own), len(r.Frames))
		}
		if err := otlptest.CheckNested(toTest(decode(t, own))); err != nil {
			t.Fatalf("report %d: %v", n, err)
		}
	}
}
