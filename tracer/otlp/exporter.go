package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
)

// Exporter sends issues as traces to an OTLP endpoint, over HTTP
// (protobuf) or gRPC. It is a tracer.Listener. Issues wait in a bounded
// queue for the exporter's goroutine, which sends up to MaxBatch of them
// per request and retries a failed request (network error, HTTP 429, 502,
// 503, 504, or the retryable gRPC codes) up to MaxAttempts times with
// exponential backoff. An issue that finds the
// queue full, or whose request finally fails, is dropped and counted
// (Dropped): a collector that is down or slow never blocks the program.
type Exporter struct {
	cfg Config
	// client sends the requests: an h1 for OTLP/HTTP, an h2 for gRPC.
	client interface {
		do(*http.Request) (*http.Response, error)
		close()
	}
	ch chan *ResourceSpans

	accepted   atomic.Uint64 // issues queued
	progress   chan struct{} // signalled when issues were sent or lost
	queueDrops atomic.Uint64
	failed     atomic.Uint64
	unknown    atomic.Uint64 // in flight when Close's deadline ran out
	sent       atomic.Uint64
	timedOut   atomic.Bool // Close's deadline ran out
	firstErr   atomic.Pointer[error]
	// OnFirstError, if set before the first issue, is called once, on the
	// exporter's goroutine, with the first error that lost issues.
	OnFirstError func(error)

	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	closed atomic.Bool
}

// NewExporter returns a running exporter sending to cfg.URL. Close it to
// send what is still queued and stop its goroutine.
func NewExporter(cfg Config) (*Exporter, error) {
	cfg = cfg.withDefaults()
	if err := checkURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("otlp: endpoint %q: %w", cfg.URL, err)
	}
	switch cfg.Protocol {
	case "", ProtocolHTTPProtobuf:
		cfg.Protocol = ProtocolHTTPProtobuf
	case ProtocolGRPC:
		// gRPC over HTTP/2 (h2): plain text (h2c with prior knowledge)
		// for http://, TLS for https://.
		u, _ := url.Parse(cfg.URL)
		cfg.URL = u.Scheme + "://" + u.Host + grpcExportPath
	default:
		return nil, fmt.Errorf("otlp: protocol %q: want %s or %s", cfg.Protocol, ProtocolHTTPProtobuf, ProtocolGRPC)
	}
	if cfg.Compression != "" && cfg.Compression != CompressionGzip {
		return nil, fmt.Errorf("otlp: compression %q: want gzip or none", cfg.Compression)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Exporter{
		cfg:      cfg,
		client:   newH1(cfg.TLS),
		ch:       make(chan *ResourceSpans, cfg.QueueSize),
		progress: make(chan struct{}, 1),
		ctx:      ctx,
		cancel:   cancel,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if cfg.Protocol == ProtocolGRPC {
		e.client = newH2(cfg.TLS)
	}
	beat.Go(e.run)
	return e, nil
}

// URL returns the traces endpoint the exporter sends to (for gRPC, the
// URL of the Export method).
func (e *Exporter) URL() string { return e.cfg.URL }

// Protocol returns ProtocolHTTPProtobuf or ProtocolGRPC.
func (e *Exporter) Protocol() string { return e.cfg.Protocol }

// OnReportIssue turns an issue of tag Trace_EvilMethod into spans and
// queues them; other issues are ignored. It never blocks.
func (e *Exporter) OnReportIssue(is tracer.Issue) {
	if is.Tag != tracer.TagEvilMethod {
		return
	}
	r, err := ReportOf(is)
	if err != nil {
		e.lose(&e.failed, 1, fmt.Errorf("otlp: issue: %w", err))
		return
	}
	spans, err := Spans(r)
	if err != nil {
		e.lose(&e.failed, 1, fmt.Errorf("otlp: issue: %w", err))
		return
	}
	e.Enqueue(NewResourceSpans(r, e.cfg.Resource, spans))
}

// Enqueue queues the spans of one issue. It never blocks: it returns
// false, and counts the issue as dropped, when the queue is full or the
// exporter is closed.
func (e *Exporter) Enqueue(rs *ResourceSpans) bool {
	if e.closed.Load() {
		e.queueDrops.Add(1)
		return false
	}
	select {
	case e.ch <- rs:
		e.accepted.Add(1)
		return true
	default:
		e.lose(&e.queueDrops, 1, errors.New("otlp: queue full"))
		return false
	}
}

// Sent returns the number of issues the endpoint accepted.
func (e *Exporter) Sent() uint64 { return e.sent.Load() }

// Dropped returns the number of issues not confirmed by the endpoint:
// dropped because the queue was full (or the exporter closed), not accepted
// after the last attempt, or of unknown fate (Unknown).
func (e *Exporter) Dropped() uint64 { return e.queueDrops.Load() + e.failed.Load() }

// Unknown returns the issues, counted in Failed, whose request was in
// flight when Close's deadline ran out: the endpoint may have got them.
func (e *Exporter) Unknown() uint64 { return e.unknown.Load() }

// TimedOut reports whether Close's deadline ran out before everything
// queued was sent or lost.
func (e *Exporter) TimedOut() bool { return e.timedOut.Load() }

// QueueDrops returns the issues dropped because the queue was full or
// the exporter closed.
func (e *Exporter) QueueDrops() uint64 { return e.queueDrops.Load() }

// Failed returns the issues queued but not sent: their request failed
// after every attempt, or Close gave up on them.
func (e *Exporter) Failed() uint64 { return e.failed.Load() }

// Err returns the first error that lost issues, or nil.
func (e *Exporter) Err() error {
	if p := e.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Flush waits until every issue queued so far has been sent or lost
// (retries included), at most timeout. It reports whether they all were.
func (e *Exporter) Flush(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for e.sent.Load()+e.failed.Load() < e.accepted.Load() {
		select {
		case <-e.progress:
		case <-t.C:
			return false
		}
	}
	return true
}

// Close stops accepting issues, sends those still queued, each batch
// once, without retries (waiting at most timeout, then abandoning the
// request in progress and dropping the rest), and stops the exporter's
// goroutine. A batch waiting to be retried is dropped. Closing twice does
// nothing.
func (e *Exporter) Close(timeout time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Swap(true) {
		return
	}
	close(e.stop)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
		e.timedOut.Store(true)
		e.cancel()
		<-e.done
	}
	e.cancel()
}

// notify wakes a Flush waiting for progress.
func (e *Exporter) notify() {
	select {
	case e.progress <- struct{}{}:
	default:
	}
}

func (e *Exporter) lose(counter *atomic.Uint64, n int, err error) {
	counter.Add(uint64(n))
	e.notify()
	if e.firstErr.CompareAndSwap(nil, &err) && e.OnFirstError != nil {
		e.OnFirstError(err)
	}
}

func (e *Exporter) run() {
	defer close(e.done)
	defer e.client.close()
	batch := make([]*ResourceSpans, 0, e.cfg.MaxBatch)
	fill := func() {
		for len(batch) < e.cfg.MaxBatch {
			select {
			case rs := <-e.ch:
				batch = append(batch, rs)
			default:
				return
			}
		}
	}
	for {
		select {
		case rs := <-e.ch:
			batch = append(batch[:0], rs)
			fill()
			e.send(batch)
		case <-e.stop:
			for {
				batch = batch[:0]
				fill()
				if len(batch) == 0 {
					return
				}
				if e.ctx.Err() != nil {
					e.failed.Add(uint64(len(batch)))
					e.notify()
					continue
				}
				e.send(batch)
			}
		}
	}
}

// send posts one batch, retrying as configured; a batch that finally
// fails is counted in failed.
func (e *Exporter) send(batch []*ResourceSpans) {
	body := Encode(batch)
	wait := e.cfg.Backoff
	for attempt := 1; ; attempt++ {
		retry, after, err := e.post(body)
		if err == nil {
			e.sent.Add(uint64(len(batch)))
			e.notify()
			return
		}
		if e.timedOut.Load() && e.ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Abandoned in flight at Close's deadline: the endpoint
			// may have got it.
			e.unknown.Add(uint64(len(batch)))
			e.lose(&e.failed, len(batch), fmt.Errorf("otlp: the exit deadline ran out while a request was in flight: %w", err))
			return
		}
		if !retry || attempt >= e.cfg.MaxAttempts || e.ctx.Err() != nil || e.closed.Load() {
			// Once closing, a batch gets no retry: the program is
			// exiting and must not wait for a collector that is down.
			e.lose(&e.failed, len(batch), err)
			return
		}
		d := wait
		if after > 0 {
			d = after
		}
		d = min(d, e.cfg.MaxBackoff)
		wait = min(2*wait, e.cfg.MaxBackoff)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-e.stop:
			t.Stop()
			e.lose(&e.failed, len(batch), err)
			return
		}
	}
}

// post sends one request. It says whether a failure may be retried, and
// after how long the server asked for (Retry-After), if it did.
func (e *Exporter) post(body []byte) (retry bool, after time.Duration, err error) {
	grpc := e.cfg.Protocol == ProtocolGRPC
	if grpc {
		// A gRPC message: compressed flag, length, message.
		flag := byte(0)
		if e.cfg.Compression == CompressionGzip {
			flag, body = 1, gzipped(body)
		}
		msg := make([]byte, 5, 5+len(body))
		msg[0] = flag
		binary.BigEndian.PutUint32(msg[1:], uint32(len(body)))
		body = append(msg, body...)
	} else if e.cfg.Compression == CompressionGzip {
		body = gzipped(body)
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("otlp: request: %w", err)
	}
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	if grpc {
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		if e.cfg.Compression == CompressionGzip {
			req.Header.Set("Grpc-Encoding", "gzip")
		}
		req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(e.cfg.Timeout.Milliseconds(), 1), 10)+"m")
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		if e.cfg.Compression == CompressionGzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
	}
	resp, err := e.client.do(req)
	if err != nil {
		return true, 0, fmt.Errorf("otlp: %s: %w%s", e.cfg.URL, err, e.hint(err))
	}
	_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if grpc && resp.StatusCode == http.StatusOK {
		return grpcResult(e.cfg.URL, resp, rerr)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp: %s: %s", e.cfg.URL, resp.Status)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

// grpcResult reads the status of a gRPC call from its trailers (or, for a
// trailers-only answer, its headers).
func grpcResult(u string, resp *http.Response, readErr error) (retry bool, after time.Duration, err error) {
	st := resp.Trailer.Get("Grpc-Status")
	msg := resp.Trailer.Get("Grpc-Message")
	if st == "" {
		st, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if st == "" {
		if readErr != nil {
			return true, 0, fmt.Errorf("otlp: %s: reading the answer: %w", u, readErr)
		}
		return false, 0, fmt.Errorf("otlp: %s: the answer has no grpc-status (is this an OTLP/gRPC endpoint?)", u)
	}
	code, perr := strconv.Atoi(st)
	if perr != nil {
		return false, 0, fmt.Errorf("otlp: %s: bad grpc-status %q", u, st)
	}
	if code == 0 {
		return false, 0, nil
	}
	if m, uerr := url.PathUnescape(msg); uerr == nil {
		msg = m
	}
	err = fmt.Errorf("otlp: %s: gRPC status %d: %s", u, code, msg)
	switch code {
	case 1, 4, 10, 11, 14, 15: // CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS
		return true, 0, err
	}
	return false, 0, err
}

// hint says what may be wrong when a request failed without an answer the
// protocol expects: the other protocol's port.
func (e *Exporter) hint(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	if e.cfg.Protocol == ProtocolGRPC {
		return " (is this an OTLP/HTTP port, usually 4318? OTLP/gRPC is usually on 4317; or set " + EnvProtocol + "=http/protobuf)"
	}
	// An HTTP/2-only server (a gRPC port) answers an HTTP/1 request with
	// its settings frame, which net/http's answer reader calls a
	// malformed response.
	if strings.Contains(err.Error(), "malformed HTTP response") {
		return " (the endpoint does not answer HTTP/1: is this the OTLP/gRPC port, usually 4317? Use the OTLP/HTTP port, usually 4318, or set " + EnvProtocol + "=grpc)"
	}
	return ""
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}
