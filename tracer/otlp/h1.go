package otlp

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// h1 is the OTLP/HTTP sink's HTTP client: one request at a time over
// HTTP/1.1, on one connection kept alive between requests, through the
// proxy that HTTP_PROXY, HTTPS_PROXY and NO_PROXY name (http:// or https://
// proxies; CONNECT for an https:// endpoint).
//
// It is all the sink needs of an HTTP client. net/http's Client would
// bring its Transport, with a connection pool and the HTTP/2 client, into
// every program that links the sink: a seventh of a small service's binary
// and of its relink. Requests are still written, and answers read, by
// net/http's HTTP/1 code (Request.Write, Request.WriteProxy, ReadResponse),
// which a server links already. Redirects are not followed (an OTLP
// endpoint does not redirect; a 3xx is an error), and answers are not
// decompressed.
type h1 struct {
	tls   *tls.Config // for https:// endpoints and proxies
	proxy func(*http.Request) (*url.URL, error)
	// dial is net.Dialer.DialContext; tests replace it.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// The kept-alive connection, its reader, and the address (endpoint
	// or proxy) and endpoint it serves; nil between connections.
	conn     net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	connKey  string
	tunneled bool // conn is a CONNECT tunnel, or direct: requests in origin form
	// proxyAuth is the Proxy-Authorization of requests in absolute form.
	proxyAuth string
}

// aLongTimeAgo, as a deadline, makes a connection's blocked reads and
// writes return at once.
var aLongTimeAgo = time.Unix(1, 0)

// bindContext makes conn's reads and writes end at ctx's deadline, and at
// once when ctx is done, until stop is called; stop reports whether it
// came first.
func bindContext(ctx context.Context, conn net.Conn) (stop func() bool) {
	dl, _ := ctx.Deadline() // the zero time: none
	conn.SetDeadline(dl)
	return context.AfterFunc(ctx, func() { conn.SetDeadline(aLongTimeAgo) })
}

func newH1(cfg *tls.Config) *h1 {
	var d net.Dialer
	return &h1{tls: cfg, proxy: http.ProxyFromEnvironment, dial: d.DialContext}
}

// do sends req (whose context bounds the whole exchange) and returns the
// answer. The caller reads the body, up to where it likes, and closes it;
// the connection is kept for the next request when the body was read to
// its end and neither side asked to close it. A request that fails on a
// kept-alive connection before any byte of its answer came back (the
// server closed the idle connection) is sent once more on a new one.
func (c *h1) do(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		reused := c.conn != nil
		resp, started, err := c.try(req)
		if err == nil {
			return resp, nil
		}
		c.drop()
		if ctxErr := req.Context().Err(); ctxErr != nil {
			// What failed then is the connection the context cut.
			return nil, ctxErr
		}
		if !reused || started || attempt > 0 || req.GetBody == nil {
			return nil, err
		}
		if req.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
}

// try sends req once; started says whether any of the answer was read.
func (c *h1) try(req *http.Request) (resp *http.Response, started bool, err error) {
	ctx := req.Context()
	if err := c.connect(ctx, req); err != nil {
		return nil, false, err
	}
	conn := c.conn
	stop := bindContext(ctx, conn)
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if c.tunneled {
		err = req.Write(c.bw)
	} else {
		if c.proxyAuth != "" {
			req.Header.Set("Proxy-Authorization", c.proxyAuth)
		}
		err = req.WriteProxy(c.bw)
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		return nil, false, err
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, false, err
	}
	resp, err = http.ReadResponse(c.br, req)
	if err != nil {
		return nil, true, err
	}
	keep := !resp.Close && !req.Close
	resp.Body = &h1Body{ReadCloser: resp.Body, c: c, conn: conn, keep: keep, stop: stop}
	return resp, true, nil
}

// connect makes c.conn a connection that req can be written to: the one
// kept alive, if it serves the same endpoint the same way, or a new one.
func (c *h1) connect(ctx context.Context, req *http.Request) error {
	proxy, err := c.proxy(req)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	key := req.URL.Scheme + "://" + hostPort(req.URL)
	if proxy != nil {
		key = proxy.String() + " " + key
	}
	if c.conn != nil && c.connKey == key {
		return nil
	}
	c.drop()
	conn, tunneled, err := c.dialFor(ctx, req.URL, proxy)
	if err != nil {
		return err
	}
	c.conn, c.br, c.bw, c.connKey, c.tunneled = conn, bufio.NewReader(conn), bufio.NewWriterSize(conn, 32<<10), key, tunneled
	c.proxyAuth = ""
	if proxy != nil && !tunneled {
		c.proxyAuth = basicAuth(proxy.User)
	}
	return nil
}

// dialFor connects to target, directly or through proxy; tunneled is
// false when requests go to the proxy in absolute form (an http://
// endpoint behind a proxy).
func (c *h1) dialFor(ctx context.Context, target, proxy *url.URL) (conn net.Conn, tunneled bool, err error) {
	if proxy == nil {
		conn, err = c.dialTLS(ctx, target.Scheme, hostPort(target), target.Hostname())
		return conn, true, err
	}
	if proxy.Scheme != "http" && proxy.Scheme != "https" {
		return nil, false, fmt.Errorf("proxy %s: only http:// and https:// proxies are supported", proxy.Redacted())
	}
	conn, err = c.dialTLS(ctx, proxy.Scheme, hostPort(proxy), proxy.Hostname())
	if err != nil {
		return nil, false, fmt.Errorf("proxy %s: %w", proxy.Redacted(), err)
	}
	if target.Scheme == "http" {
		return conn, false, nil
	}
	if err := connectTunnel(ctx, conn, proxy, hostPort(target)); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("proxy %s: %w", proxy.Redacted(), err)
	}
	tc := tls.Client(conn, c.tlsFor(target.Hostname()))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, false, err
	}
	return tc, true, nil
}

// dialTLS dials addr, with TLS for an https scheme.
func (c *h1) dialTLS(ctx context.Context, scheme, addr, serverName string) (net.Conn, error) {
	conn, err := c.dial(ctx, "tcp", addr)
	if err != nil || scheme != "https" {
		return conn, err
	}
	tc := tls.Client(conn, c.tlsFor(serverName))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

func (c *h1) tlsFor(serverName string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tls != nil {
		cfg = c.tls.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = serverName
	}
	cfg.NextProtos = []string{"http/1.1"}
	return cfg
}

// connectTunnel asks the proxy on conn for a tunnel to addr.
func connectTunnel(ctx context.Context, conn net.Conn, proxy *url.URL, addr string) error {
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
	if auth := basicAuth(proxy.User); auth != "" {
		req.Header.Set("Proxy-Authorization", auth)
	}
	defer bindContext(ctx, conn)()
	if err := req.Write(conn); err != nil {
		return err
	}
	// The proxy sends nothing after its answer until the tunnel's first
	// bytes (the TLS hello) are sent, so the reader must hold nothing
	// beyond the answer once it is read.
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("CONNECT %s: %s", addr, resp.Status)
	}
	if br.Buffered() > 0 {
		return errors.New("CONNECT: the proxy sent data before the tunnel was used")
	}
	return nil
}

// basicAuth is the Basic authorization of a proxy URL's user, or "".
func basicAuth(u *url.Userinfo) string {
	if u == nil {
		return ""
	}
	pw, _ := u.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw))
}

// drop closes the kept-alive connection, if any.
func (c *h1) drop() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.br, c.bw = nil, nil, nil
	}
}

// close closes the client's connection.
func (c *h1) close() { c.drop() }

// hostPort is u's host with the scheme's port when it gives none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// h1Body is an answer's body: closing it keeps the connection for the
// next request if the body was read to its end, and closes it otherwise.
type h1Body struct {
	io.ReadCloser
	c    *h1
	conn net.Conn
	keep bool
	eof  bool
	done bool
	stop func() bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *h1Body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	err := b.ReadCloser.Close()
	// A context done while the body was read has cut the connection.
	cut := !b.stop()
	if b.c.conn == b.conn && (!b.keep || !b.eof || err != nil || cut) {
		b.c.drop()
	}
	return err
}
