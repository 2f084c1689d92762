package otlp_test

import (
	. "github.com/matrixgo/matrix/tracer/otlp"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/integration/otlptest"
)

// The exporter speaks OTLP/gRPC to the official gRPC server with the
// collector's TraceService: the spans, the resource and the scope arrive,
// with headers as metadata, gzip compression, and retries on UNAVAILABLE.
func TestExporterGRPC(t *testing.T) {
	rcv, err := otlptest.StartGRPC()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	rcv.FailNext(http.StatusServiceUnavailable) // UNAVAILABLE, then accepted
	cfg, err := ConfigFromEnv(env(map[string]string{
		EnvProtocol: "grpc", EnvEndpoint: rcv.URL, EnvCompression: "gzip", EnvHeaders: "api-key=secret",
		EnvServiceName: "shop", EnvResourceAttributes: "service.version=1.2.3,deployment.environment.name=test",
	}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backoff = time.Millisecond
	cfg.Resource.Detected = Detect()
	e, err := NewExporter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.Protocol() != ProtocolGRPC || !strings.HasSuffix(e.URL(), "/opentelemetry.proto.collector.trace.v1.TraceService/Export") {
		t.Errorf("protocol %s URL %s", e.Protocol(), e.URL())
	}
	r := slowReport()
	r.Process, r.PID = "shop", 42
	e.OnReportIssue(issue(t, r))
	if !e.Flush(20 * time.Second) {
		t.Error("Flush gave up")
	}
	e.Close(10 * time.Second)
	if e.Sent() != 1 || e.Dropped() != 0 || rcv.Requests() != 2 {
		t.Fatalf("sent %d dropped %d after %d requests (err %v)", e.Sent(), e.Dropped(), rcv.Requests(), e.Err())
	}
	spans := rcv.Spans()
	if len(spans) != 5 || len(rcv.Errors()) > 0 {
		t.Fatalf("received %d spans, errors %v:\n%s", len(spans), rcv.Errors(), otlptest.Dump(spans))
	}
	if spans[0].Name != "GET /slow" {
		t.Errorf("root %q", spans[0].Name)
	}
	res := spans[0].Resource
	for k, v := range map[string]string{
		"service.name": "shop", "service.version": "1.2.3", "deployment.environment.name": "test",
		"telemetry.sdk.name": SDKName, "telemetry.sdk.language": "go", "process.runtime.name": "go",
	} {
		if res[k] != v {
			t.Errorf("resource %s = %q, want %q", k, res[k], v)
		}
	}
	for _, k := range []string{"service.instance.id", "host.name", "telemetry.sdk.version", "process.pid"} {
		if res[k] == "" {
			t.Errorf("resource has no %s: %v", k, res)
		}
	}
	if sc := spans[0].Scope; sc.GetName() != ScopeName || sc.GetVersion() == "" || spans[0].SchemaURL != SchemaURL {
		t.Errorf("scope %v schema %q", sc, spans[0].SchemaURL)
	}
	// (The server decoded gzip-compressed messages: the exporter sets
	// the compressed flag of every message when asked for gzip.)
	if h := rcv.Headers()[1]; h.Get("api-key") != "secret" {
		t.Errorf("metadata %v, want api-key", h)
	}
}

// Pointing one protocol at the other's port fails with a hint.
func TestExporterWrongPortHints(t *testing.T) {
	grpcRcv, err := otlptest.StartGRPC()
	if err != nil {
		t.Fatal(err)
	}
	defer grpcRcv.Close()
	httpRcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer httpRcv.Close()
	for _, c := range []struct {
		cfg  Config
		hint string
	}{
		{Config{URL: grpcRcv.URL + "/v1/traces"}, "is this the OTLP/gRPC port"},
		{Config{Protocol: ProtocolGRPC, URL: httpRcv.URL}, "is this an OTLP/HTTP port"},
	} {
		c.cfg.MaxAttempts, c.cfg.Timeout = 1, 5*time.Second
		e, err := NewExporter(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.OnReportIssue(issue(t, slowReport()))
		e.Flush(20 * time.Second)
		e.Close(time.Second)
		if e.Failed() != 1 || e.Err() == nil || !strings.Contains(e.Err().Error(), c.hint) {
			t.Errorf("%s to %s: failed %d, err %v; want a hint %q", c.cfg.Protocol, c.cfg.URL, e.Failed(), e.Err(), c.hint)
		}
	}
}

// OTLP/HTTP with gzip: the body is compressed and says so.
func TestExporterHTTPGzip(t *testing.T) {
	rcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	e, err := NewExporter(Config{URL: rcv.URL + "/v1/traces", Compression: CompressionGzip})
	if err != nil {
		t.Fatal(err)
	}
	e.OnReportIssue(issue(t, slowReport()))
	e.Close(10 * time.Second)
	if e.Sent() != 1 || len(rcv.Spans()) != 5 || rcv.Headers()[0].Get("Content-Encoding") != "gzip" {
		t.Errorf("sent %d, %d spans, headers %v, err %v", e.Sent(), len(rcv.Spans()), rcv.Headers(), e.Err())
	}
}
