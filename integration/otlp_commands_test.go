package integration

import (
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/matrixgo/matrix/integration/otlptest"
	"github.com/rogpeppe/go-internal/testscript"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// receivers holds each script's OTLP receiver.
var receivers sync.Map // *testscript.TestScript → *otlptest.Receiver

// otlprecv
//
// Starts an OTLP/HTTP receiver on 127.0.0.1 for the rest of the script
// (it decodes bodies with the collector's ExportTraceServiceRequest) and
// points OTEL_EXPORTER_OTLP_ENDPOINT at it.
//
// otlprecv -grpc
//
// Starts an OTLP/gRPC receiver on 127.0.0.1 instead (google.golang.org/grpc's
// server with the collector's TraceService) and points
// OTEL_EXPORTER_OTLP_ENDPOINT at it (the script sets the protocol).
//
// otlprecv -down
//
// Points OTEL_EXPORTER_OTLP_ENDPOINT at a 127.0.0.1 port nothing listens on.
func cmdOTLPRecv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 || len(args) == 1 && args[0] != "-down" && args[0] != "-grpc" {
		ts.Fatalf("usage: otlprecv [-down | -grpc]")
	}
	if len(args) == 1 && args[0] == "-down" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
		ts.Check(ln.Close())
		return
	}
	start := otlptest.Start
	if len(args) == 1 {
		start = otlptest.StartGRPC
	}
	r, err := start()
	ts.Check(err)
	if old, ok := receivers.Swap(ts, r); ok {
		ts.Check(old.(*otlptest.Receiver).Close())
	}
	ts.Defer(func() {
		receivers.Delete(ts)
		_ = r.Close()
	})
	ts.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
}

// otlpspans FILE
//
// Writes the spans the receiver got so far to FILE, one per line (see
// otlptest.Dump), and checks that they nest in time within each trace.
// It fails if a body did not decode.
func cmdOTLPSpans(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: otlpspans FILE")
	}
	v, ok := receivers.Load(ts)
	if !ok {
		ts.Fatalf("otlpspans: no receiver (run otlprecv first)")
	}
	r := v.(*otlptest.Receiver)
	if errs := r.Errors(); len(errs) > 0 {
		ts.Fatalf("receiver: bad bodies: %v", errs)
	}
	spans := r.Spans()
	byTrace := map[string][]otlptest.Span{}
	for _, s := range spans {
		byTrace[string(s.TraceId)] = append(byTrace[string(s.TraceId)], s)
	}
	for _, tr := range byTrace {
		if err := otlptest.CheckNested(tr); err != nil {
			ts.Fatalf("%v\n%s", err, otlptest.Dump(spans))
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(otlptest.Dump(spans)), 0o644))
}

// otlpresource FILE
//
// Writes the resource attributes of the spans received so far to FILE,
// one line "k=v;k=v" (sorted) per distinct resource.
func cmdOTLPResource(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: otlpresource FILE")
	}
	v, ok := receivers.Load(ts)
	if !ok {
		ts.Fatalf("otlpresource: no receiver (run otlprecv first)")
	}
	seen := map[string]bool{}
	var out strings.Builder
	for _, s := range v.(*otlptest.Receiver).Spans() {
		keys := slices.Sorted(maps.Keys(s.Resource))
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = k + "=" + s.Resource[k]
		}
		line := strings.Join(kv, ";")
		if !seen[line] {
			seen[line] = true
			out.WriteString(line + "\n")
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(out.String()), 0o644))
}

// otlptrace ROOT CHILD...
//
// Checks that the receiver got one span named ROOT and, for each CHILD, a
// span of that name in ROOT's trace whose parent is ROOT, with an event
// (the LAG and ANR spans of a dispatch under its span).
func cmdOTLPTrace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: otlptrace ROOT CHILD...")
	}
	v, ok := receivers.Load(ts)
	if !ok {
		ts.Fatalf("otlptrace: no receiver (run otlprecv first)")
	}
	spans := v.(*otlptest.Receiver).Spans()
	byName := map[string][]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(byName[args[0]]) != 1 {
		ts.Fatalf("%d spans named %q, want 1:\n%s", len(byName[args[0]]), args[0], otlptest.Dump(spans))
	}
	root := byName[args[0]][0]
	for _, name := range args[1:] {
		if len(byName[name]) != 1 {
			ts.Fatalf("%d spans named %q, want 1:\n%s", len(byName[name]), name, otlptest.Dump(spans))
		}
		c := byName[name][0]
		if string(c.TraceId) != string(root.TraceId) || string(c.ParentSpanId) != string(root.SpanId) {
			ts.Fatalf("%q is not a child of %q in its trace:\n%s", name, args[0], otlptest.Dump(spans))
		}
		if len(c.Events) == 0 {
			ts.Fatalf("%q has no event", name)
		}
	}
}

// otlpcalled NAME N
//
// Checks that N of the SERVER spans named NAME the receiver got (those of
// a called service) are children of a CLIENT span it got, in the same
// trace (the call that passed its trace context on), each in a trace of
// its own; spans named NAME without a parent are not counted. CONSUMER
// spans (a message's) are children of a PRODUCER span (its publish).
func cmdOTLPCalled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: otlpcalled NAME N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	v, ok := receivers.Load(ts)
	if !ok {
		ts.Fatalf("otlpcalled: no receiver (run otlprecv first)")
	}
	spans := v.(*otlptest.Receiver).Spans()
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[string(s.TraceId)+string(s.SpanId)] = s
	}
	traces := map[string]bool{}
	for _, s := range spans {
		caller := tracepb.Span_SPAN_KIND_CLIENT
		switch {
		case s.Name != args[0]:
			continue
		case s.Kind == tracepb.Span_SPAN_KIND_CONSUMER:
			caller = tracepb.Span_SPAN_KIND_PRODUCER
		case s.Kind != tracepb.Span_SPAN_KIND_SERVER:
			continue // a gRPC call's CLIENT span has the name of its SERVER span
		}
		if len(s.ParentSpanId) == 0 {
			continue
		}
		p, ok := byID[string(s.TraceId)+string(s.ParentSpanId)]
		if !ok || p.Kind != caller {
			ts.Fatalf("span %q (trace %x, parent %x) has no %s parent:\n%s", s.Name, s.TraceId, s.ParentSpanId, caller, otlptest.Dump(spans))
		}
		traces[string(s.TraceId)] = true
	}
	if len(traces) != n {
		ts.Fatalf("%d traces with a span %q under a CLIENT span, want %d:\n%s", len(traces), args[0], n, otlptest.Dump(spans))
	}
}
