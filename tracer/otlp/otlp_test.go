package otlp

import (
	"errors"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/tracer"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		url     string
		headers map[string]string
		timeout time.Duration
		err     string
	}{
		{name: "default", env: nil, url: "http://localhost:4318/v1/traces"},
		{name: "generic endpoint gets the path", env: map[string]string{EnvEndpoint: "http://c:4318"}, url: "http://c:4318/v1/traces"},
		{name: "generic endpoint with a slash", env: map[string]string{EnvEndpoint: "https://c:4318/"}, url: "https://c:4318/v1/traces"},
		{name: "generic endpoint with a path", env: map[string]string{EnvEndpoint: "http://c/otlp"}, url: "http://c/otlp/v1/traces"},
		{name: "traces endpoint as is", env: map[string]string{EnvEndpoint: "http://c:4318", EnvTracesEndpoint: "http://t:9/custom"}, url: "http://t:9/custom"},
		{
			name:    "headers decoded",
			env:     map[string]string{EnvHeaders: " api-key = a%20b%2Cc , X-Tenant=t1,"},
			url:     "http://localhost:4318/v1/traces",
			headers: map[string]string{"api-key": "a b,c", "X-Tenant": "t1"},
		},
		{
			name:    "traces headers win",
			env:     map[string]string{EnvHeaders: "a=1", EnvTracesHeaders: "b=2"},
			url:     "http://localhost:4318/v1/traces",
			headers: map[string]string{"b": "2"},
		},
		{name: "timeout", env: map[string]string{EnvTimeout: "1500"}, url: "http://localhost:4318/v1/traces", timeout: 1500 * time.Millisecond},
		{name: "traces timeout wins", env: map[string]string{EnvTimeout: "1500", EnvTracesTimeout: "20"}, url: "http://localhost:4318/v1/traces", timeout: 20 * time.Millisecond},
		{name: "protocol", env: map[string]string{EnvProtocol: "http/protobuf"}, url: "http://localhost:4318/v1/traces"},
		{name: "bad endpoint", env: map[string]string{EnvEndpoint: "c:4318"}, err: EnvEndpoint},
		{name: "bad traces endpoint", env: map[string]string{EnvTracesEndpoint: "ftp://c/x"}, err: EnvTracesEndpoint},
		{name: "bad header", env: map[string]string{EnvHeaders: "novalue"}, err: "want key=value"},
		{name: "bad escape", env: map[string]string{EnvHeaders: "k=%zz"}, err: EnvHeaders},
		{name: "bad timeout", env: map[string]string{EnvTimeout: "soon"}, err: EnvTimeout},
		{name: "grpc default endpoint", env: map[string]string{EnvProtocol: "grpc"}, url: "http://localhost:4317"},
		{name: "grpc endpoint without path", env: map[string]string{EnvTracesProtocol: "grpc", EnvEndpoint: "http://c:4317"}, url: "http://c:4317"},
		{name: "traces protocol wins", env: map[string]string{EnvProtocol: "grpc", EnvTracesProtocol: "http/protobuf"}, url: "http://localhost:4318/v1/traces"},
		{name: "http/json", env: map[string]string{EnvProtocol: "http/json"}, err: EnvProtocol + `="http/json": want http/protobuf or grpc`},
		{name: "grpc host:port is TLS", env: map[string]string{EnvProtocol: "grpc", EnvEndpoint: "c:4317"}, url: "https://c:4317"},
		{name: "grpc host:port insecure", env: map[string]string{EnvProtocol: "grpc", EnvTracesEndpoint: "c:4317", EnvTracesInsecure: "true"}, url: "http://c:4317"},
		{name: "http host:port", env: map[string]string{EnvEndpoint: "c:4318", EnvInsecure: "true"}, err: "want an http:// or https:// URL"},
		{name: "gzip", env: map[string]string{EnvCompression: "gzip"}, url: "http://localhost:4318/v1/traces"},
		{name: "bad compression", env: map[string]string{EnvTracesCompression: "zstd"}, err: EnvTracesCompression},
		{name: "insecure with https", env: map[string]string{EnvInsecure: "true", EnvEndpoint: "https://c:4318"}, err: EnvInsecure},
		{name: "bad insecure", env: map[string]string{EnvInsecure: "yes please"}, err: EnvInsecure},
		{name: "missing CA file", env: map[string]string{EnvCertificate: "/nonexistent/ca.pem"}, err: EnvCertificate},
		{name: "client cert without key", env: map[string]string{EnvClientCertificate: "/x/c.pem"}, err: EnvClientKey},
		{name: "bad resource attributes", env: map[string]string{EnvResourceAttributes: "a"}, err: EnvResourceAttributes},
		{name: "bad sdk disabled", env: map[string]string{EnvSDKDisabled: "maybe"}, err: EnvSDKDisabled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ConfigFromEnv(env(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.URL != c.url {
				t.Errorf("URL = %q, want %q", cfg.URL, c.url)
			}
			if c.headers != nil && !maps.Equal(cfg.Headers, c.headers) {
				t.Errorf("headers = %v, want %v", cfg.Headers, c.headers)
			}
			if cfg.Timeout != c.timeout {
				t.Errorf("timeout = %v, want %v", cfg.Timeout, c.timeout)
			}
		})
	}
	cfg, err := ConfigFromEnv(env(map[string]string{EnvServiceName: "shop"}))
	if err != nil || cfg.Resource.ServiceName != "shop" {
		t.Errorf("service name: %+v, %v", cfg.Resource, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{EnvProtocol: "grpc", EnvCompression: "gzip"}))
	if err != nil || cfg.Protocol != ProtocolGRPC || cfg.Compression != CompressionGzip {
		t.Errorf("grpc, gzip: %+v, %v", cfg, err)
	}
	if _, err := ConfigFromEnv(env(map[string]string{EnvSDKDisabled: "true", EnvProtocol: "bad"})); !errors.Is(err, ErrDisabled) {
		t.Errorf("%s=true: err %v, want ErrDisabled", EnvSDKDisabled, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{EnvResourceAttributes: "service.version=1.2.3, deployment.environment.name=prod%2Ceu"}))
	if err != nil || len(cfg.Resource.Attributes) != 2 || cfg.Resource.Attributes[1].Value.s != "prod,eu" {
		t.Errorf("resource attributes: %+v, %v", cfg.Resource.Attributes, err)
	}
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

func slowReport() *Report {
	return &Report{
		Tag: tracer.TagEvilMethod, ID: "5b1f0c1e-8d57-4b4e-9d8f-3f7f0a4f5e21", Time: "2026-01-02T03:04:05.5Z",
		Process: "shop", PID: 42,
		Evil: &tracer.EvilReport{
			Detail: "NORMAL", Cost: 900, Scene: "GET /slow",
			Dispatch:    &tracer.DispatchFields{Name: "http", Kind: "http"},
			TraceParent: "00-" + callerTrace + "-" + callerSpan + "-01",
			TraceState:  "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
			Tree: &tracer.TreeFields{StackKey: "7|", Recorded: true, Frames: []tracer.Frame{
				{Depth: 0, ID: dispatchID, Count: 1, Cost: 900, Func: "DISPATCH", Start: 0},
				{Depth: 1, ID: 5, Count: 1, Cost: 880, Func: "example.com/shop.handler", File: "/src/shop/main.go", Line: 10, Start: 10},
				{Depth: 2, ID: 6, Count: 3, Cost: 30, Func: "example.com/shop.fast", File: "/src/shop/main.go", Line: 20, Start: 12},
				{Depth: 2, ID: 7, Count: 1, Cost: 800, Func: "example.com/shop.slow", File: "/src/shop/main.go", Line: 30, Start: 60},
				{Depth: 3, ID: 8, Count: 1, Cost: 790, Kind: "wait", Reason: "sync.Mutex.Lock", Start: 65},
			}},
		},
	}
}

func TestSpansBadReports(t *testing.T) {
	for name, mod := range map[string]func(*Report){
		"not an issue": func(r *Report) { r.Tag = tracer.TagFPS },
		"no fields":    func(r *Report) { r.Evil = nil },
		"no time":      func(r *Report) { r.Time = "" },
		"bad time":     func(r *Report) { r.Time = "yesterday" },
		"no id":        func(r *Report) { r.ID = "" },
		"negative":     func(r *Report) { r.Evil.Cost = -1 },
		"huge":         func(r *Report) { r.Evil.Cost = 1 << 62 },
	} {
		r := slowReport()
		mod(r)
		if _, err := Spans(r); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// issue returns the issue the tracer would hand the sink for r: its typed
// report, with the fields every issue carries.
func issue(t testing.TB, r *Report) tracer.Issue {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		t.Fatal(err)
	}
	is := tracer.NewIssue(r.Tag, r.Evil.Tree.StackKey, at, nil)
	is.Report = r.Evil
	return is
}

// TestReportOf: the sink reads an issue's typed report and the fields
// every issue carries, and refuses an issue without a typed report.
func TestReportOf(t *testing.T) {
	want := slowReport()
	is := issue(t, want)
	r, err := ReportOf(is)
	if err != nil {
		t.Fatal(err)
	}
	if r.Evil != want.Evil || r.Tag != tracer.TagEvilMethod || r.ID != is.ID || r.Time != "2026-01-02T03:04:05.5Z" ||
		r.Process == "" || r.PID != int64(os.Getpid()) || r.GoVersion != runtime.Version() {
		t.Errorf("ReportOf = %+v", r)
	}
	spans, err := Spans(r)
	if err != nil || len(spans) != 5 || spans[0].Name != "GET /slow" {
		t.Errorf("spans of the issue: %d, %v (%+v)", len(spans), err, spans)
	}
	if _, err := ReportOf(tracer.NewIssue(tracer.TagEvilMethod, "", time.Time{}, nil)); err == nil {
		t.Error("ReportOf accepted an issue without a typed report")
	}
}

func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String() + "/v1/traces"
	ln.Close()
	return u
}

func TestExporterCollectorDown(t *testing.T) {
	e, err := NewExporter(Config{URL: closedURL(t), Backoff: time.Millisecond, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	var first error
	got := make(chan struct{})
	e.OnFirstError = func(err error) { first = err; close(got) }
	for range 3 {
		e.OnReportIssue(issue(t, slowReport()))
	}
	if !e.Flush(20 * time.Second) {
		t.Error("Flush gave up")
	}
	e.Close(10 * time.Second)
	<-got
	if e.Sent() != 0 || e.Dropped() != 3 {
		t.Errorf("sent %d dropped %d, want 0 and 3", e.Sent(), e.Dropped())
	}
	if first == nil || !strings.Contains(first.Error(), "connection refused") {
		t.Errorf("first error %v", first)
	}
}

func TestExporterQueueDrops(t *testing.T) {
	// A receiver that holds every request until released: the exporter's
	// goroutine is stuck in its first request, so the queue fills.
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	e, err := NewExporter(Config{URL: "http://" + ln.Addr().String() + "/v1/traces", QueueSize: 2, MaxBatch: 1, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	rs := &ResourceSpans{}
	if !e.Enqueue(rs) {
		t.Fatal("first issue dropped")
	}
	// Wait until the goroutine took it: then exactly QueueSize fit.
	for deadline := time.Now().Add(10 * time.Second); len(e.ch) != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the exporter never took the first issue")
		}
		time.Sleep(time.Millisecond)
	}
	accepted := 0
	for range 10 {
		if e.Enqueue(rs) {
			accepted++
		}
	}
	if accepted != 2 || e.QueueDrops() != 8 {
		t.Errorf("accepted %d, dropped %d; want 2 and 8", accepted, e.QueueDrops())
	}
	close(release)
	e.Close(10 * time.Second)
	if e.Enqueue(rs) || e.QueueDrops() != 9 {
		t.Errorf("enqueue after Close: drops %d", e.QueueDrops())
	}
}

func TestExporterCloseAbandons(t *testing.T) {
	// A collector that never answers: Close gives up after its timeout
	// and counts what it could not send.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	e, err := NewExporter(Config{URL: "http://" + ln.Addr().String() + "/v1/traces", MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.Enqueue(&ResourceSpans{})
	}
	e.Close(50 * time.Millisecond)
	if e.Sent() != 0 || e.Dropped() != 3 {
		t.Errorf("sent %d dropped %d, want 0 and 3", e.Sent(), e.Dropped())
	}
}

func TestExporterCloseDoesNotRetry(t *testing.T) {
	// Closing (the program exits) sends what is queued once: a collector
	// that is down is not retried for seconds.
	e, err := NewExporter(Config{URL: closedURL(t), Backoff: time.Hour, MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	e.OnReportIssue(issue(t, slowReport()))
	e.Close(time.Hour) // returns after one attempt, not after an hour
	if e.Failed() != 1 || e.Sent() != 0 {
		t.Errorf("sent %d failed %d", e.Sent(), e.Failed())
	}
}
