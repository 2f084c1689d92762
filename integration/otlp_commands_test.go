package integration

import (
	"net"
	"os"
	"sync"

	"github.com/matrixgo/matrix/tracer/otlp/otlptest"
	"github.com/rogpeppe/go-internal/testscript"
)

// receivers holds each script's OTLP receiver.
var receivers sync.Map // *testscript.TestScript → *otlptest.Receiver

// otlprecv
//
// Starts an OTLP/HTTP receiver on 127.0.0.1 for the rest of the script
// (it decodes bodies with the collector's ExportTraceServiceRequest) and
// points OTEL_EXPORTER_OTLP_ENDPOINT at it.
//
// otlprecv -down
//
// Points OTEL_EXPORTER_OTLP_ENDPOINT at a 127.0.0.1 port nothing listens on.
func cmdOTLPRecv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 || len(args) == 1 && args[0] != "-down" {
		ts.Fatalf("usage: otlprecv [-down]")
	}
	if len(args) == 1 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
		ts.Check(ln.Close())
		return
	}
	r, err := otlptest.Start()
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
