package otlp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
)

// Exporter sends issues as traces to an OTLP/HTTP endpoint. It is a
// tracer.Listener. Issues wait in a bounded queue for the exporter's
// goroutine, which sends up to MaxBatch of them per request and retries a
// failed request (network error, HTTP 429, 502, 503, 504) up to
// MaxAttempts times with exponential backoff. An issue that finds the
// queue full, or whose request finally fails, is dropped and counted
// (Dropped): a collector that is down or slow never blocks the program.
type Exporter struct {
	cfg    Config
	client *http.Client
	ch     chan *ResourceSpans

	accepted   atomic.Uint64 // issues queued
	progress   chan struct{} // signalled when issues were sent or lost
	queueDrops atomic.Uint64
	failed     atomic.Uint64
	sent       atomic.Uint64
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

// NewExporter returns a running exporter posting to cfg.URL. Close it to
// send what is still queued and stop its goroutine.
func NewExporter(cfg Config) (*Exporter, error) {
	cfg = cfg.withDefaults()
	if err := checkURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("otlp: endpoint %q: %w", cfg.URL, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2
	ctx, cancel := context.WithCancel(context.Background())
	e := &Exporter{
		cfg:      cfg,
		client:   &http.Client{Timeout: cfg.Timeout, Transport: tr},
		ch:       make(chan *ResourceSpans, cfg.QueueSize),
		progress: make(chan struct{}, 1),
		ctx:      ctx,
		cancel:   cancel,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	beat.Go(e.run)
	return e, nil
}

// URL returns the traces endpoint the exporter posts to.
func (e *Exporter) URL() string { return e.cfg.URL }

// OnReportIssue turns an issue of tag Trace_EvilMethod into spans and
// queues them; other issues are ignored. It never blocks.
func (e *Exporter) OnReportIssue(is tracer.Issue) {
	if is.Tag != tracer.TagEvilMethod {
		return
	}
	b, err := json.Marshal(is.Content)
	if err != nil {
		e.lose(&e.failed, 1, fmt.Errorf("otlp: encode issue: %w", err))
		return
	}
	r, err := ParseReport(b)
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

// Dropped returns the number of issues lost: dropped because the queue
// was full (or the exporter closed), or not accepted by the endpoint after
// the last attempt.
func (e *Exporter) Dropped() uint64 { return e.queueDrops.Load() + e.failed.Load() }

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
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("otlp: request: %w", err)
	}
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return true, 0, fmt.Errorf("otlp: post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp: post %s: %s", e.cfg.URL, resp.Status)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}
