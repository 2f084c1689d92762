package otlp_test

import (
	"bytes"
	"encoding/hex"
	. "github.com/matrixgo/matrix/tracer/otlp"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/integration/otlptest"
	"github.com/matrixgo/matrix/tracer"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// An HTTP dispatch's slow-call report is a SERVER span named after the
// method and route, with the HTTP semantic conventions' attributes; a 5xx
// response is an error.
func TestSpansHTTPServer(t *testing.T) {
	r := slowReport()
	r.Scene = "GET shop.example/orders/{id}" // a pattern with a host
	r.Method, r.Host, r.Scheme, r.Status = "GET", "shop.example:8443", "https", 503
	spans := decode(t, mustSpans(t, r))
	root := spans[0]
	if root.Name != "GET /orders/{id}" || root.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("root %q kind %v, want the SERVER span GET /orders/{id}", root.Name, root.Kind)
	}
	ra := otlptest.Span{Span: root}
	for k, v := range map[string]string{
		"http.request.method": "GET", "http.route": "/orders/{id}", "http.response.status_code": "503",
		"server.address": "shop.example", "server.port": "8443", "url.scheme": "https",
		"matrix.scene": "GET shop.example/orders/{id}",
	} {
		if got := ra.Attr(k); got != v {
			t.Errorf("root %s = %q, want %q", k, got, v)
		}
	}
	if root.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("status %v on a 503, want an error", root.Status)
	}
	for _, k := range []string{"url.path", "url.query", "url.full", "http.target"} {
		if ra.Attr(k) != "" {
			t.Errorf("root has %s", k)
		}
	}

	// A 200 is no error; an unknown method is _OTHER; a scene the
	// handler named is not a route.
	r = slowReport()
	r.Scene, r.Method, r.Status = "checkout", "PURGE", 200
	root = decode(t, mustSpans(t, r))[0]
	ra = otlptest.Span{Span: root}
	if root.Name != "HTTP" || ra.Attr("http.request.method") != "_OTHER" || ra.Attr("http.request.method_original") != "PURGE" || ra.Attr("http.route") != "" {
		t.Errorf("root %q attrs:\n%s", root.Name, otlptest.Dump([]otlptest.Span{ra}))
	}
	if root.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("status %v on a 200", root.Status)
	}

	// A Host without a port: the scheme's.
	r = slowReport()
	r.Method, r.Host, r.Scheme = "GET", "shop.example", "https"
	ra = otlptest.Span{Span: decode(t, mustSpans(t, r))[0]}
	if ra.Attr("server.address") != "shop.example" || ra.Attr("server.port") != "443" {
		t.Errorf("server %q port %q", ra.Attr("server.address"), ra.Attr("server.port"))
	}
}

// A test is a span named after the test; another dispatch after its scene.
func TestSpansTestAndCustomNames(t *testing.T) {
	r := slowReport()
	r.Kind, r.Name, r.Scene = "test", "TestCheckout/slow", "TestCheckout/slow"
	root := decode(t, mustSpans(t, r))[0]
	if root.Name != "TestCheckout/slow" || root.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("test span %q kind %v", root.Name, root.Kind)
	}
	r.Kind, r.Name, r.Scene = "custom", "job", "nightly"
	if root := decode(t, mustSpans(t, r))[0]; root.Name != "nightly" {
		t.Errorf("custom span %q", root.Name)
	}
}

// A dispatch that is not an HTTP request's is named and described as its
// conventions say: a gRPC call's (kind rpc, its full method as scene) is a
// SERVER span with rpc.system, rpc.service and rpc.method; a message's
// (kind message, named after the messaging system, the subscription's
// subject as scene) is a CONSUMER span with messaging.system, the
// operation and the subscription. Neither has http.route.
func TestSpansRPCAndMessage(t *testing.T) {
	for _, tc := range []struct {
		kind, name, scene, span string
		spanKind                tracepb.Span_SpanKind
		attrs                   map[string]string
	}{
		{"rpc", "grpc", "/shop.Orders/Get", "shop.Orders/Get", tracepb.Span_SPAN_KIND_SERVER,
			map[string]string{"rpc.system": "grpc", "rpc.service": "shop.Orders", "rpc.method": "Get"}},
		{"message", "nats", "orders.*", "process orders.*", tracepb.Span_SPAN_KIND_CONSUMER,
			map[string]string{"messaging.system": "nats", "messaging.operation.name": "process", "messaging.operation.type": "process",
				"messaging.destination.subscription.name": "orders.*"}},
	} {
		r := slowReport()
		r.Kind, r.Name, r.Scene = tc.kind, tc.name, tc.scene
		r.Method, r.Host, r.Scheme, r.Status = "", "", "", 0
		root := otlptest.Span{Span: decode(t, mustSpans(t, r))[0]}
		if root.Name != tc.span || root.Kind != tc.spanKind {
			t.Errorf("%s span %q kind %v, want %q, %v", tc.kind, root.Name, root.Kind, tc.span, tc.spanKind)
		}
		tc.attrs["matrix.scene"] = tc.scene
		for k, v := range tc.attrs {
			if got := root.Attr(k); got != v {
				t.Errorf("%s span: %s = %q, want %q", tc.kind, k, got, v)
			}
		}
		if got := root.Attr("http.route"); got != "" {
			t.Errorf("%s span has http.route %q", tc.kind, got)
		}
	}
}

// Times come from the report at the clock's resolution: the dispatch's
// span is exactly [begin, time]; a node of cost c ms lasts c+1 ms (it ran
// for less), so none is empty; every node has its cost.
func TestSpansTrueTimes(t *testing.T) {
	r := slowReport()
	r.Begin = "2026-01-02T03:04:04.599999123Z"
	r.Time = "2026-01-02T03:04:05.500000457Z"
	r.Frames[2].Cost = 0 // a call under 1 ms
	spans := decode(t, mustSpans(t, r))
	begin, _ := time.Parse(time.RFC3339Nano, r.Begin)
	end, _ := time.Parse(time.RFC3339Nano, r.Time)
	root := spans[0]
	if root.StartTimeUnixNano != uint64(begin.UnixNano()) || root.EndTimeUnixNano != uint64(end.UnixNano()) {
		t.Errorf("root [%d, %d], want [%d, %d]", root.StartTimeUnixNano, root.EndTimeUnixNano, begin.UnixNano(), end.UnixNano())
	}
	for _, s := range spans {
		if s.EndTimeUnixNano <= s.StartTimeUnixNano {
			t.Errorf("%q lasts %d ns", s.Name, int64(s.EndTimeUnixNano-s.StartTimeUnixNano))
		}
		if (otlptest.Span{Span: s}).Attr("matrix.cost_ms") == "" {
			t.Errorf("%q has no matrix.cost_ms", s.Name)
		}
	}
	fast := byName(spans)["example.com/shop.fast"]
	if d := time.Duration(fast.EndTimeUnixNano - fast.StartTimeUnixNano); d != time.Millisecond {
		t.Errorf("a node of cost 0 ms lasts %v, want the 1 ms tick", d)
	}
	if got := (otlptest.Span{Span: fast}).Attr("matrix.cost_ms"); got != "0" {
		t.Errorf("matrix.cost_ms = %q, want 0", got)
	}
	if start := int64(fast.StartTimeUnixNano) - begin.UnixNano(); start != 12e6 {
		t.Errorf("fast starts %d ns after the begin, want its 12 ms", start)
	}

	// Re-export: the same bytes, every span.
	a := Encode([]*ResourceSpans{{Scope: ScopeName, Spans: mustSpans(t, r)}})
	b := Encode([]*ResourceSpans{{Scope: ScopeName, Spans: mustSpans(t, r)}})
	if !bytes.Equal(a, b) {
		t.Error("exporting the same report twice gives other bytes")
	}

	// A begin after the time is refused.
	r.Begin = "2026-01-02T03:04:06Z"
	if _, err := Spans(r.typed()); err == nil {
		t.Error("begin after time: no error")
	}
}

// dispatchReports are the LAG, ANR and final reports of one dispatch.
func dispatchReports() (lag, anr, final *flat) {
	base := func(id, detail, at string, cost int64) *flat {
		r := slowReport()
		r.ID, r.Detail, r.Time, r.Cost, r.TraceParent = id, detail, at, cost, ""
		r.DispatchID, r.Begin = 17, "2026-01-02T03:04:00.000000100Z"
		r.Method, r.Scheme, r.Host = "GET", "http", "127.0.0.1:8080"
		return r
	}
	lag = base("a1", tracer.DetailLag, "2026-01-02T03:04:02Z", 2000)
	lag.Frames, lag.StackKey = nil, ""
	lag.ThreadStack = "goroutine 7 [sleep]:\nexample.com/shop.slow()\n\t/src/shop/main.go:31"
	lag.Goroutines, lag.Running = 12, 1
	anr = base("a2", tracer.DetailANR, "2026-01-02T03:04:05Z", 5000)
	anr.ThreadStack = lag.ThreadStack
	anr.Memory = map[string]uint64{"heapBytes": 1 << 20, "totalBytes": 3 << 20}
	anr.GCPauseMs, anr.GCCycles, anr.Goroutines = 1.5, 3, 13
	final = base("a3", tracer.DetailNormal, "2026-01-02T03:04:06Z", 6000)
	final.CPU, final.Usage, final.Status = i64(120), "2.00%", 200
	return lag, anr, final
}

// The LAG, ANR and final reports of a dispatch form one trace: the LAG and
// ANR spans are children of the dispatch's span, with an event holding the
// goroutine's stack; with a traceparent, the caller's trace.
func TestSpansOneDispatchOneTrace(t *testing.T) {
	for _, tp := range []string{"", "00-" + callerTrace + "-" + callerSpan + "-01"} {
		lag, anr, final := dispatchReports()
		lag.TraceParent, anr.TraceParent, final.TraceParent = tp, tp, tp
		l := decode(t, mustSpans(t, lag))[0]
		a := decode(t, mustSpans(t, anr))
		f := decode(t, mustSpans(t, final))[0]
		if !bytes.Equal(l.TraceId, f.TraceId) || !bytes.Equal(a[0].TraceId, f.TraceId) {
			t.Fatalf("traceparent %q: traces %x %x %x, want one", tp, l.TraceId, a[0].TraceId, f.TraceId)
		}
		if tp != "" && hex.EncodeToString(f.TraceId) != callerTrace {
			t.Errorf("trace %x, want the caller's", f.TraceId)
		}
		if tp != "" && hex.EncodeToString(f.ParentSpanId) != callerSpan {
			t.Errorf("dispatch span's parent %x, want the caller's span", f.ParentSpanId)
		}
		if tp == "" && len(f.ParentSpanId) != 0 {
			t.Errorf("dispatch span has parent %x without a traceparent", f.ParentSpanId)
		}
		if !bytes.Equal(l.ParentSpanId, f.SpanId) || !bytes.Equal(a[0].ParentSpanId, f.SpanId) {
			t.Errorf("LAG/ANR parents %x %x, want the dispatch's span %x", l.ParentSpanId, a[0].ParentSpanId, f.SpanId)
		}
		if l.Name != "LAG GET /slow" || a[0].Name != "ANR GET /slow" || f.Name != "GET /slow" {
			t.Errorf("names %q %q %q", l.Name, a[0].Name, f.Name)
		}
		if len(a) < 2 || !bytes.Equal(a[1].ParentSpanId, a[0].SpanId) {
			t.Errorf("the ANR's call tree is not under its span")
		}
		for _, s := range []*tracepb.Span{l, a[0]} {
			if len(s.Events) != 1 || !strings.Contains((otlptest.Span{Span: &tracepb.Span{Attributes: s.Events[0].Attributes}}).Attr("matrix.goroutine.stack"), "example.com/shop.slow()") {
				t.Errorf("%q events %v, want one with the goroutine's stack", s.Name, s.Events)
			}
		}
		aa := otlptest.Span{Span: a[0]}
		for k, v := range map[string]string{"matrix.memory.heapBytes": "1048576", "matrix.memory.totalBytes": "3145728", "matrix.gc.pause_ms": "1.5", "matrix.gc.cycles": "3", "matrix.goroutines": "13"} {
			if got := aa.Attr(k); got != v {
				t.Errorf("ANR %s = %q, want %q", k, got, v)
			}
		}
		fa := otlptest.Span{Span: f}
		if fa.Attr("matrix.cpu_ms") != "120" || fa.Attr("matrix.cpu.usage") != "2.00%" || fa.Attr("http.response.status_code") != "200" {
			t.Errorf("final attrs:\n%s", otlptest.Dump([]otlptest.Span{fa}))
		}
	}

	// Another dispatch (or the same number in another process) is
	// another trace.
	_, _, f1 := dispatchReports()
	_, _, f2 := dispatchReports()
	f2.DispatchID = 18
	if a, b := mustSpans(t, f1)[0], mustSpans(t, f2)[0]; a.TraceID == b.TraceID || a.SpanID == b.SpanID {
		t.Error("two dispatches share a trace or span id")
	}
}

func mustSpans(t *testing.T, r *flat) []Span {
	t.Helper()
	s, err := Spans(r.typed())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A boundary is a CLIENT span under the semantic conventions: a database
// call named by its operation with db.system.name and db.query.text
// (other_sql for a driver it does not know), an HTTP client request by
// its method with server.address, server.port and url.scheme, a gRPC call
// by its method with rpc.* and server.address.
func TestSpansClientBoundaries(t *testing.T) {
	r := slowReport()
	r.Frames = append(r.Frames,
		tracer.Frame{Depth: 2, ID: 1048575, Count: 1, Cost: 20, Func: "db SELECT * FROM t WHERE id = ?", Kind: "db", Start: 100,
			Bound: &tracer.Bound{System: "sqlite", Statement: "SELECT * FROM t WHERE id = ?"}},
		tracer.Frame{Depth: 2, ID: 1048575, Count: 1, Cost: 5, Func: "db COMMIT", Kind: "db", Start: 130,
			Bound: &tracer.Bound{Statement: "COMMIT"}},
		tracer.Frame{Depth: 2, ID: 1048575, Count: 1, Cost: 20, Func: "http GET https://api.example.com", Kind: "http", Start: 140,
			Bound: &tracer.Bound{Method: "GET", Scheme: "https", Host: "api.example.com"}},
		tracer.Frame{Depth: 2, ID: 1048575, Count: 1, Cost: 20, Func: "rpc /shop.Orders/Get orders:50051", Kind: "rpc", Start: 170,
			Bound: &tracer.Bound{Method: "/shop.Orders/Get", Host: "orders:50051"}},
	)
	spans := decode(t, mustSpans(t, r))
	want := []struct {
		name  string
		attrs map[string]string
	}{
		{"SELECT", map[string]string{"db.system.name": "sqlite", "db.query.text": "SELECT * FROM t WHERE id = ?"}},
		{"COMMIT", map[string]string{"db.system.name": "other_sql", "db.query.text": "COMMIT"}},
		{"GET", map[string]string{"http.request.method": "GET", "url.scheme": "https", "server.address": "api.example.com", "server.port": "443"}},
		{"shop.Orders/Get", map[string]string{"rpc.system": "grpc", "rpc.service": "shop.Orders", "rpc.method": "Get", "server.address": "orders", "server.port": "50051"}},
	}
	var clients []*tracepb.Span
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			clients = append(clients, s)
		}
	}
	if len(clients) != len(want) {
		t.Fatalf("%d CLIENT spans, want %d", len(clients), len(want))
	}
	for i, w := range want {
		s := otlptest.Span{Span: clients[i]}
		if s.Name != w.name {
			t.Errorf("span %d named %q, want %q", i, s.Name, w.name)
		}
		for k, v := range w.attrs {
			if got := s.Attr(k); got != v {
				t.Errorf("span %q: %s = %q, want %q", s.Name, k, got, v)
			}
		}
		if s.Attr("url.full") != "" || s.Attr("url.path") != "" || s.Attr("code.function.name") != "" {
			t.Errorf("span %q has a URL or a function", s.Name)
		}
	}
}

// A published message is a PRODUCER span named "publish", with
// messaging.system, the operation and the server's address, and the span
// id its message passed on to the consumer; never the subject.
func TestSpansPublishBoundary(t *testing.T) {
	const spanID = "051581bf3cb55c13"
	r := slowReport()
	r.Frames = append(r.Frames,
		tracer.Frame{Depth: 2, ID: 1048575, Count: 1, Cost: 1, Func: "publish nats 127.0.0.1:4222", Kind: "publish", Start: 100,
			Bound: &tracer.Bound{System: "nats", Host: "127.0.0.1:4222", SpanID: spanID}})
	var producers []*tracepb.Span
	for _, s := range decode(t, mustSpans(t, r)) {
		if s.Kind == tracepb.Span_SPAN_KIND_PRODUCER {
			producers = append(producers, s)
		}
	}
	if len(producers) != 1 {
		t.Fatalf("%d PRODUCER spans, want 1", len(producers))
	}
	s := otlptest.Span{Span: producers[0]}
	if s.Name != "publish" || hex.EncodeToString(s.SpanId) != spanID {
		t.Errorf("PRODUCER span %q with id %x, want publish with %s", s.Name, s.SpanId, spanID)
	}
	for k, v := range map[string]string{"messaging.system": "nats", "messaging.operation.name": "publish", "messaging.operation.type": "send",
		"server.address": "127.0.0.1", "server.port": "4222"} {
		if got := s.Attr(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// A dispatch that passed its trace context on is exported in the trace it
// made (the report's trace_id), and the call that passed it is the CLIENT
// span with the id the called service was given; a LAG report's copy of
// the call has an id of its own, so that no two spans share one.
func TestSpansPropagatedTrace(t *testing.T) {
	const traceID, spanID = "5b8aa5a2d2c872e8321cf37308d69df2", "051581bf3cb55c13"
	r := slowReport()
	r.TraceParent = ""
	r.TraceID = traceID
	r.Frames = append(r.Frames,
		tracer.Frame{Depth: 2, ID: 1048575, Count: 1, Cost: 20, Func: "http GET http://stock:8080", Kind: "http", Start: 140,
			Bound: &tracer.Bound{Method: "GET", Scheme: "http", Host: "stock:8080", SpanID: spanID}})
	client := func(r *flat) (*tracepb.Span, []*tracepb.Span) {
		spans := decode(t, mustSpans(t, r))
		for _, s := range spans {
			if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
				return s, spans
			}
		}
		t.Fatal("no CLIENT span")
		return nil, nil
	}
	c, spans := client(r)
	if got := hex.EncodeToString(c.SpanId); got != spanID {
		t.Errorf("CLIENT span id %s, want the one passed on, %s", got, spanID)
	}
	for _, s := range spans {
		if got := hex.EncodeToString(s.TraceId); got != traceID {
			t.Errorf("span %q in trace %s, want %s", s.Name, got, traceID)
		}
	}
	// The caller's trace, when the request brought one, wins.
	r.TraceParent = "00-" + strings.Repeat("ab", 16) + "-" + callerSpan + "-01"
	if c, _ := client(r); hex.EncodeToString(c.TraceId) != strings.Repeat("ab", 16) {
		t.Errorf("trace %x, want the caller's", c.TraceId)
	}
	r.TraceParent = ""
	lag := *r
	lag.Detail = tracer.DetailLag
	if c, _ := client(&lag); hex.EncodeToString(c.SpanId) == spanID || hex.EncodeToString(c.TraceId) != traceID {
		t.Errorf("LAG report's CLIENT span %x in trace %x", c.SpanId, c.TraceId)
	}
}
