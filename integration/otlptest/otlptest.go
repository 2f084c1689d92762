// Package otlptest is an OTLP trace receiver for tests, over HTTP (Start)
// or gRPC (StartGRPC, google.golang.org/grpc's server with the collector's
// official TraceService): it listens on 127.0.0.1, decodes every request
// with the collector's official ExportTraceServiceRequest type and keeps
// the spans.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // gzip-compressed gRPC requests
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Span is a received span with its resource's attributes and its scope.
type Span struct {
	*tracepb.Span
	// Resource holds the resource's attributes as strings.
	Resource map[string]string
	// Scope is the span's instrumentation scope; SchemaURL the scope
	// spans' schema URL.
	Scope     *commonpb.InstrumentationScope
	SchemaURL string
}

// Attr returns the span attribute k as a string ("" when absent).
func (s Span) Attr(k string) string { return attrs(s.Attributes)[k] }

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT): traces go
	// to URL + "/v1/traces".
	URL string

	srv  *http.Server
	gsrv *grpc.Server
	ln   net.Listener

	mu       sync.Mutex
	spans    []Span
	requests int
	headers  []http.Header
	fail     []int // status codes of the next requests
	errs     []string
}

// Start starts a receiver on a free 127.0.0.1 port.
func Start() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlptest: listen: %w", err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.serve)
	r.srv = &http.Server{Handler: mux}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// StartGRPC starts an OTLP/gRPC receiver on a free 127.0.0.1 port; its URL
// is the endpoint (http://127.0.0.1:port, plain text).
func StartGRPC() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlptest: listen: %w", err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), ln: ln, gsrv: grpc.NewServer()}
	collectortrace.RegisterTraceServiceServer(r.gsrv, traceService{r: r})
	go func() { _ = r.gsrv.Serve(ln) }()
	return r, nil
}

type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	h := http.Header{}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, vs := range md {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
	}
	r.headers = append(r.headers, h)
	if len(r.fail) > 0 {
		code := r.fail[0]
		r.fail = r.fail[1:]
		c := codes.InvalidArgument
		switch code {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			c = codes.Unavailable
		}
		return nil, status.Error(c, "failing as asked")
	}
	r.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// add keeps the spans of msg; r.mu is held.
func (r *Receiver) add(msg *collectortrace.ExportTraceServiceRequest) {
	for _, rs := range msg.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{Span: s, Resource: res, Scope: ss.GetScope(), SchemaURL: ss.GetSchemaUrl()})
			}
		}
	}
}

// Close stops the receiver.
func (r *Receiver) Close() error {
	if r.gsrv != nil {
		r.gsrv.Stop()
		return nil
	}
	return r.srv.Close()
}

// FailNext makes the next len(codes) requests answer with these status
// codes (without keeping their spans).
func (r *Receiver) FailNext(codes ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = append(r.fail, codes...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	if len(r.fail) > 0 {
		code := r.fail[0]
		r.fail = r.fail[1:]
		http.Error(w, "failing as asked", code)
		return
	}
	if err != nil {
		r.errs = append(r.errs, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.errs = append(r.errs, "content type "+ct)
		http.Error(w, "want application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(strings.NewReader(string(body)))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			r.errs = append(r.errs, "gzip: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		r.errs = append(r.errs, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&msg)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests returns the number of requests received, failed ones included.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Headers returns the headers of every request received.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Errors returns the problems found in bodies (not protobuf, wrong
// content type).
func (r *Receiver) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// Dump renders spans one per line, for scripts to grep:
//
//	trace=<hex> span=<hex> parent=<hex or -> start=<ns> end=<ns> kind=<kind> status=<code> name=<name> attrs=k=v;k=v
//
// kind is SERVER, INTERNAL, …; status UNSET, OK or ERROR.
func Dump(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		parent := "-"
		if len(s.ParentSpanId) > 0 {
			parent = hex.EncodeToString(s.ParentSpanId)
		}
		a := attrs(s.Attributes)
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = k + "=" + a[k]
		}
		kind := strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")
		status := strings.TrimPrefix(s.Status.GetCode().String(), "STATUS_CODE_")
		fmt.Fprintf(&b, "trace=%s span=%s parent=%s start=%d end=%d kind=%s status=%s name=%s attrs=%s\n",
			hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId), parent,
			s.StartTimeUnixNano, s.EndTimeUnixNano, kind, status, s.Name, strings.Join(kv, ";"))
	}
	return b.String()
}

// CheckNested reports an error unless every span lasts a positive time,
// every span whose parent is among spans lies within its parent's
// interval, and spans share one trace id.
func CheckNested(spans []Span) error {
	byID := map[string]Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
	}
	for _, s := range spans {
		if string(s.TraceId) != string(spans[0].TraceId) {
			return fmt.Errorf("span %q has trace %x, span %q has %x", s.Name, s.TraceId, spans[0].Name, spans[0].TraceId)
		}
		if s.EndTimeUnixNano <= s.StartTimeUnixNano {
			return fmt.Errorf("span %q [%d, %d] does not end after it starts", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
		p, ok := byID[string(s.ParentSpanId)]
		if !ok {
			continue
		}
		if s.StartTimeUnixNano < p.StartTimeUnixNano || s.EndTimeUnixNano > p.EndTimeUnixNano {
			return fmt.Errorf("span %q [%d, %d] is not within its parent %q [%d, %d]",
				s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano, p.Name, p.StartTimeUnixNano, p.EndTimeUnixNano)
		}
	}
	return nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}
