package otlp

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkExportIssue is the time to export one slow-call issue (five
// spans) end to end: the listener call (issue → spans → protobuf) and the
// exporter's POST to a receiver on 127.0.0.1 that reads and discards the
// body, one issue per request.
func BenchmarkExportIssue(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	e, err := NewExporter(Config{URL: "http://" + ln.Addr().String() + "/v1/traces"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(time.Second)
	is := issue(b, slowReport())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.OnReportIssue(is)
		if !e.Flush(time.Minute) {
			b.Fatal("not sent")
		}
	}
	b.StopTimer()
	if e.Dropped() != 0 {
		b.Fatalf("%d dropped: %v", e.Dropped(), e.Err())
	}
}

// BenchmarkSpansEncode is the CPU part alone: one report's spans built and
// encoded.
func BenchmarkSpansEncode(b *testing.B) {
	r := slowReport()
	b.ReportAllocs()
	for range b.N {
		spans, err := Spans(r)
		if err != nil {
			b.Fatal(err)
		}
		_ = Encode([]*ResourceSpans{NewResourceSpans(r, Resource{}, spans)})
	}
}
