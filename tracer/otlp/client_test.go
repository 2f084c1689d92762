package otlp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// collector is an OTLP/HTTP or OTLP/gRPC stand-in on net/http's server:
// it keeps each request's body and headers and the connections it came on.
type collector struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	conns   map[string]bool
	proto   []string
	// grpcStatus, if set, is the grpc-status trailer of each answer.
	grpcStatus string
	closeEach  bool // answer with Connection: close
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.headers = append(c.headers, r.Header.Clone())
	if c.conns == nil {
		c.conns = map[string]bool{}
	}
	c.conns[r.RemoteAddr] = true
	c.proto = append(c.proto, r.Proto)
	st, closeEach := c.grpcStatus, c.closeEach
	c.mu.Unlock()
	if closeEach {
		w.Header().Set("Connection", "close")
	}
	if st != "" {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		w.WriteHeader(http.StatusOK)
		// An empty ExportTraceServiceResponse: one uncompressed message
		// of no bytes.
		w.Write([]byte{0, 0, 0, 0, 0})
		w.Header().Set("Grpc-Status", st)
		w.Header().Set("Grpc-Message", "done%20here")
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write([]byte{})
}

func (c *collector) requests() (n, conns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bodies), len(c.conns)
}

// export sends n batches of one issue each through a new exporter and
// closes it.
func export(t *testing.T, cfg Config, n int) *Exporter {
	t.Helper()
	cfg.MaxBatch = 1
	e, err := NewExporter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		e.OnReportIssue(issue(t, slowReport()))
		if !e.Flush(20 * time.Second) {
			t.Fatal("Flush gave up")
		}
	}
	e.Close(10 * time.Second)
	return e
}

// OTLP/HTTP: several requests go over one kept-alive HTTP/1.1 connection,
// bodies intact.
func TestH1KeepsTheConnection(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	e := export(t, Config{URL: srv.URL + "/v1/traces"}, 3)
	n, conns := c.requests()
	if e.Sent() != 3 || n != 3 || conns != 1 {
		t.Fatalf("sent %d; the collector got %d requests on %d connections, want 3 on 1 (err %v)", e.Sent(), n, conns, e.Err())
	}
	for i, b := range c.bodies {
		if len(b) == 0 || c.headers[i].Get("Content-Type") != "application/x-protobuf" || c.proto[i] != "HTTP/1.1" {
			t.Errorf("request %d: %d bytes, headers %v, %s", i, len(b), c.headers[i], c.proto[i])
		}
	}
}

// A server that closes each connection after its answer: each request
// dials again and none is lost.
func TestH1ServerClosesConnections(t *testing.T) {
	c := &collector{closeEach: true}
	srv := httptest.NewServer(c)
	defer srv.Close()
	e := export(t, Config{URL: srv.URL + "/v1/traces", MaxAttempts: 1}, 3)
	if n, conns := c.requests(); e.Sent() != 3 || n != 3 || conns != 3 {
		t.Fatalf("sent %d; %d requests on %d connections, want 3 on 3 (err %v)", e.Sent(), n, conns, e.Err())
	}
}

// A kept-alive connection the server closed while idle: the next request
// fails on it before any answer and is sent again on a new connection,
// without using up an attempt.
func TestH1IdleConnectionClosed(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	e, err := NewExporter(Config{URL: srv.URL + "/v1/traces", MaxAttempts: 1, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(time.Second)
	e.OnReportIssue(issue(t, slowReport()))
	e.Flush(20 * time.Second)
	srv.CloseClientConnections()
	e.OnReportIssue(issue(t, slowReport()))
	e.Flush(20 * time.Second)
	if n, conns := c.requests(); e.Sent() != 2 || n != 2 || conns != 2 {
		t.Fatalf("sent %d; %d requests on %d connections, want 2 on 2 (err %v)", e.Sent(), n, conns, e.Err())
	}
}

// https: the endpoint's certificate is checked against the configured
// roots; a client without them fails.
func TestH1TLS(t *testing.T) {
	c := &collector{}
	srv := httptest.NewTLSServer(c)
	defer srv.Close()
	e := export(t, Config{URL: srv.URL + "/v1/traces", TLS: rootsOf(srv)}, 2)
	if n, conns := c.requests(); e.Sent() != 2 || n != 2 || conns != 1 {
		t.Fatalf("sent %d; %d requests on %d connections (err %v)", e.Sent(), n, conns, e.Err())
	}
	e = export(t, Config{URL: srv.URL + "/v1/traces", MaxAttempts: 1}, 1)
	if e.Sent() != 0 || e.Err() == nil || !strings.Contains(e.Err().Error(), "certificate") {
		t.Fatalf("without the roots: sent %d, err %v", e.Sent(), e.Err())
	}
}

func rootsOf(srv *httptest.Server) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

// proxy is an HTTP proxy that forwards requests in absolute form and
// tunnels CONNECT, and keeps what it was asked.
type proxy struct {
	mu    sync.Mutex
	asked []string // "GET http://…" or "CONNECT host:port"
	auth  []string
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.asked = append(p.asked, r.Method+" "+r.RequestURI)
	p.auth = append(p.auth, r.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if r.Method == http.MethodConnect {
		back, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			back.Close()
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(back, brw); back.Close() }()
		io.Copy(conn, back)
		conn.Close()
		return
	}
	r.RequestURI = ""
	r.Header.Del("Proxy-Authorization")
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// Through a proxy: an http:// endpoint is asked in absolute form, an
// https:// one through a CONNECT tunnel, each with the proxy's
// credentials.
func TestH1Proxy(t *testing.T) {
	p := &proxy{}
	ps := httptest.NewServer(p)
	defer ps.Close()
	pu, _ := url.Parse(ps.URL)
	pu.User = url.UserPassword("me", "pw")
	for _, tlsEndpoint := range []bool{false, true} {
		c := &collector{}
		var srv *httptest.Server
		var cfg Config
		if tlsEndpoint {
			srv = httptest.NewTLSServer(c)
			cfg.TLS = rootsOf(srv)
		} else {
			srv = httptest.NewServer(c)
		}
		cfg.URL = srv.URL + "/v1/traces"
		cfg.MaxBatch, cfg.MaxAttempts = 1, 1
		e, err := NewExporter(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// (net/http's proxy settings never proxy a loopback address.)
		e.client.(*h1).proxy = func(*http.Request) (*url.URL, error) { return pu, nil }
		for range 2 {
			e.OnReportIssue(issue(t, slowReport()))
			e.Flush(20 * time.Second)
		}
		e.Close(time.Second)
		srv.Close()
		if n, _ := c.requests(); e.Sent() != 2 || n != 2 {
			t.Fatalf("tls %v: sent %d, the collector got %d (err %v)", tlsEndpoint, e.Sent(), n, e.Err())
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.asked) != 3 || !strings.HasPrefix(p.asked[0], "POST http://127.0.0.1:") || !strings.HasPrefix(p.asked[1], "POST http://127.0.0.1:") || !strings.HasPrefix(p.asked[2], "CONNECT 127.0.0.1:") {
		t.Errorf("the proxy was asked %q; want two POSTs in absolute form and one CONNECT", p.asked)
	}
	for i, a := range p.auth {
		if a != "Basic bWU6cHc=" {
			t.Errorf("request %d to the proxy: Proxy-Authorization %q", i, a)
		}
	}
}

// grpcServer starts net/http's HTTP/2 server on c: h2c with prior
// knowledge, or TLS with ALPN.
func grpcServer(t *testing.T, c *collector, useTLS bool) (*httptest.Server, Config) {
	t.Helper()
	srv := httptest.NewUnstartedServer(c)
	// Small windows, so that a large body has to wait for the server's
	// WINDOW_UPDATEs.
	srv.Config.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerConnection: 1 << 16, MaxReceiveBufferPerStream: 1 << 16}
	var p http.Protocols
	if useTLS {
		p.SetHTTP2(true)
		srv.Config.Protocols = &p
		srv.EnableHTTP2 = true
		srv.StartTLS()
		return srv, Config{Protocol: ProtocolGRPC, URL: srv.URL, TLS: rootsOf(srv)}
	}
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	return srv, Config{Protocol: ProtocolGRPC, URL: srv.URL}
}

// OTLP/gRPC over HTTP/2, h2c and TLS: calls share one connection, a body
// larger than every flow-control window arrives whole, gzip is flagged,
// headers go as metadata, and the status is read from the trailers.
func TestH2(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		c := &collector{grpcStatus: "0"}
		srv, cfg := grpcServer(t, c, useTLS)
		cfg.Headers = map[string]string{"Api-Key": "secret"}
		e := export(t, cfg, 2)
		if n, conns := c.requests(); e.Sent() != 2 || n != 2 || conns != 1 {
			t.Fatalf("tls %v: sent %d; %d calls on %d connections, want 2 on 1 (err %v)", useTLS, e.Sent(), n, conns, e.Err())
		}
		h := c.headers[0]
		if c.proto[0] != "HTTP/2.0" || h.Get("Content-Type") != "application/grpc" || h.Get("Te") != "trailers" || h.Get("Api-Key") != "secret" || h.Get("Grpc-Timeout") == "" {
			t.Errorf("tls %v: %s, headers %v", useTLS, c.proto[0], h)
		}
		if b := c.bodies[0]; len(b) < 6 || b[0] != 0 || int(b[1])<<24|int(b[2])<<16|int(b[3])<<8|int(b[4]) != len(b)-5 {
			t.Errorf("tls %v: not one gRPC message: % x", useTLS, b[:min(len(b), 8)])
		}

		// 3 MiB, far above the server's windows: the client waits for
		// its WINDOW_UPDATEs.
		big := make([]byte, 3<<20)
		for i := range big {
			big[i] = byte(i * 7)
		}
		cl := newH2(cfg.TLS)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+grpcExportPath, bytes.NewReader(big))
		resp, err := cl.do(req)
		if err != nil {
			t.Fatalf("tls %v: 3 MiB: %v", useTLS, err)
		}
		if got := c.bodies[len(c.bodies)-1]; !bytes.Equal(got, big) || resp.Trailer.Get("Grpc-Status") != "0" || resp.Trailer.Get("Grpc-Message") != "done%20here" {
			t.Errorf("tls %v: 3 MiB arrived as %d bytes; trailers %v", useTLS, len(got), resp.Trailer)
		}
		cl.close()

		// gzip: the message says it is compressed.
		c.mu.Lock()
		c.bodies = nil
		c.mu.Unlock()
		cfg.Compression = CompressionGzip
		export(t, cfg, 1)
		if b := c.bodies[0]; len(b) < 7 || b[0] != 1 || b[5] != 0x1f || b[6] != 0x8b {
			t.Errorf("tls %v: gzip: % x", useTLS, b[:min(len(b), 8)])
		}
		srv.Close()
	}
}

// A gRPC error status in the trailers is the call's error, retried when
// the code says so.
func TestH2Status(t *testing.T) {
	c := &collector{grpcStatus: "14"} // UNAVAILABLE
	srv, cfg := grpcServer(t, c, false)
	defer srv.Close()
	cfg.MaxAttempts, cfg.Backoff = 2, time.Millisecond
	e := export(t, cfg, 1)
	if n, _ := c.requests(); e.Sent() != 0 || n != 2 || e.Err() == nil || !strings.Contains(e.Err().Error(), "gRPC status 14: done here") {
		t.Fatalf("sent %d after %d calls, err %v; want two calls and status 14", e.Sent(), n, e.Err())
	}
}

// The gRPC client to an HTTP/1-only port says so.
func TestH2ToHTTP1(t *testing.T) {
	srv := httptest.NewServer(&collector{})
	defer srv.Close()
	e := export(t, Config{Protocol: ProtocolGRPC, URL: srv.URL, MaxAttempts: 1}, 1)
	if e.Sent() != 0 || e.Err() == nil || !strings.Contains(e.Err().Error(), "HTTP/1") || !strings.Contains(e.Err().Error(), "4318") {
		t.Fatalf("sent %d, err %v", e.Sent(), e.Err())
	}
}

// A server that answers the preface with settings, pings, a window update
// and GOAWAY for a stream it did not take: the client acknowledges, and
// the call fails as not taken.
func TestH2GoAway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var acks atomic.Int32
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		preface := make([]byte, len(h2Preface))
		if _, err := io.ReadFull(br, preface); err != nil || string(preface) != h2Preface {
			return
		}
		frame := func(typ, flags byte, stream uint32, p []byte) {
			hdr := []byte{byte(len(p) >> 16), byte(len(p) >> 8), byte(len(p)), typ, flags, byte(stream >> 24), byte(stream >> 16), byte(stream >> 8), byte(stream)}
			conn.Write(append(hdr, p...))
		}
		frame(h2Settings, 0, 0, []byte{0, h2SettingInitialWindowSize, 0, 0, 0x10, 0})
		frame(h2Ping, 0, 0, []byte("12345678"))
		frame(h2GoAway, 0, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0})
		for {
			var hdr [9]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return
			}
			p := make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
			io.ReadFull(br, p)
			if hdr[4]&h2FlagAck != 0 && (hdr[3] == h2Settings || hdr[3] == h2Ping && string(p) == "12345678") {
				acks.Add(1)
			}
		}
	}()
	cl := newH2(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+grpcExportPath, strings.NewReader("x"))
	_, err = cl.do(req)
	if err == nil || !strings.Contains(err.Error(), "GOAWAY") {
		t.Fatalf("err %v, want the GOAWAY", err)
	}
	for deadline := time.Now().Add(10 * time.Second); acks.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if acks.Load() != 2 {
		t.Errorf("%d acknowledgements, want the SETTINGS and the PING acknowledged", acks.Load())
	}
}

// The sink links no HTTP client of net/http (its Transport, with HTTP/2)
// and nothing of google.golang.org/protobuf, whose initialisation reads
// the program's executable: a program importing it has none of their
// symbols.
func TestSinkLinksNoHTTPTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	dir := t.TempDir()
	src := "package main\n\nimport \"github.com/matrixgo/matrix/tracer/otlp\"\n\nfunc main() { e, _ := otlp.NewExporter(otlp.Config{}); e.Close(0) }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sink")
	build := exec.Command("go", "build", "-o", exe, filepath.Join(dir, "main.go"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "tool", "nm", exe).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	if !bytes.Contains(out, []byte("tracer/otlp.(*h1).do")) {
		t.Fatal("the program does not link the sink's client: this test checks nothing")
	}
	for _, s := range []string{"net/http.(*Transport).roundTrip", "net/http.(*http2Transport)", "google.golang.org/protobuf"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("the sink links %s", s)
		}
	}
}
