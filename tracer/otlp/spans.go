package otlp

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/tracecontext"
	"github.com/matrixgo/matrix/tracer"
)

// ScopeName is the instrumentation scope of the exported spans.
const ScopeName = "github.com/matrixgo/matrix/tracer/otlp"

// dispatchID is the DISPATCH pseudo-function's id in reports.
const dispatchID = abi.DispatchID

// maxMs bounds the costs and starts read from a report (the largest time
// a record holds), so that they convert to ns without overflow.
const maxMs = abi.TimeMask

// Report is one issue as export reads it: the fields every issue carries
// (tracer.NewIssue) and the report itself, tracer.EvilReport, the one
// definition of a slow call's, LAG's, ANR's or slow start-up's fields. The
// sink takes both from the issue the tracer hands it (ReportOf), with no
// encoding in between; the export command decodes a report line into it.
type Report struct {
	Tag       string `json:"tag"`
	ID        string `json:"id"`
	Time      string `json:"time"`
	Process   string `json:"process"`
	PID       int64  `json:"pid"`
	HostName  string `json:"hostName"`
	GoVersion string `json:"goVersion"`
	// Evil is the report's own fields; nil for a line that has none.
	Evil *tracer.EvilReport `json:",inline"`
}

// Exported reports whether export sends the report: a slow call, LAG, ANR
// or slow start-up (tag Trace_EvilMethod). Frame-rate and start-up phase
// reports (Trace_FPS, Trace_StartUp) are not issues of one dispatch.
func (r *Report) Exported() bool { return r.Tag == tracer.TagEvilMethod }

// ReportOf returns the report of an issue of the tracer: its typed report
// (Issue.Report, shared, not copied) with the fields every issue carries.
// It fails for an issue that carries no *tracer.EvilReport (one made by
// tracer.NewIssue).
func ReportOf(is tracer.Issue) (*Report, error) {
	ev, ok := is.Report.(*tracer.EvilReport)
	if !ok || ev == nil {
		return nil, fmt.Errorf("issue %s (%s) carries no report of a slow call", is.ID, is.Tag)
	}
	r := &Report{Tag: is.Tag, ID: is.ID, Evil: ev}
	c := is.Content
	r.Time, _ = c[tracer.KeyTime].(string)
	r.Process, _ = c[tracer.KeyProcess].(string)
	switch pid := c[tracer.KeyPID].(type) {
	case int:
		r.PID = int64(pid)
	case int64:
		r.PID = pid
	}
	r.HostName, _ = c[tracer.KeyHostName].(string)
	r.GoVersion, _ = c[tracer.KeyGoVersion].(string)
	return r, nil
}

// Span is one OTLP span (opentelemetry.proto.trace.v1.Span), with the
// fields the exporter sets.
type Span struct {
	TraceID      [16]byte
	SpanID       [8]byte
	ParentSpanID [8]byte
	HasParent    bool
	// TraceState is the W3C tracestate of the trace, the caller's.
	TraceState string
	Name       string
	Kind       int32 // SpanKindInternal, SpanKindServer, SpanKindClient, SpanKindProducer, SpanKindConsumer
	Flags      uint32
	// Start and End are in ns since the Unix epoch.
	Start, End uint64
	Attributes []KeyValue
	Events     []Event
	// StatusCode is StatusUnset or StatusError.
	StatusCode int32
}

// Event is an OTLP span event (Span.Event).
type Event struct {
	// Time is in ns since the Unix epoch.
	Time       uint64
	Name       string
	Attributes []KeyValue
}

// KeyValue is an OTLP attribute.
type KeyValue struct {
	Key   string
	Value Value
}

// Value is an OTLP AnyValue: a string, bool, int64 or double.
type Value struct {
	kind valueKind
	s    string
	n    int64
	f    float64
}

type valueKind uint8

const (
	valueNone valueKind = iota
	valueString
	valueBool
	valueInt
	valueDouble
)

// String returns a string attribute value.
func String(s string) Value { return Value{kind: valueString, s: s} }

// Int returns an integer attribute value.
func Int(n int64) Value { return Value{kind: valueInt, n: n} }

// Double returns a floating-point attribute value.
func Double(f float64) Value { return Value{kind: valueDouble, f: f} }

// Bool returns a boolean attribute value.
func Bool(b bool) Value {
	v := Value{kind: valueBool}
	if b {
		v.n = 1
	}
	return v
}

// ResourceSpans is the spans of one resource (the process) under one
// instrumentation scope: opentelemetry.proto.trace.v1.ResourceSpans.
type ResourceSpans struct {
	Resource     []KeyValue
	Scope        string
	ScopeVersion string
	// SchemaURL is the semantic conventions' schema the attributes follow
	// (of the resource and the scope).
	SchemaURL string
	Spans     []Span
}

// Spans turns one issue report into its spans, following the OpenTelemetry
// semantic conventions where they name the data and putting what only
// Matrix has under matrix.*:
//
//   - A slow call (detail NORMAL) is the dispatch's span: for an HTTP
//     dispatch a SERVER span named "<method> <route>" ("GET /orders/{id}")
//     with http.request.method, http.route, http.response.status_code,
//     server.address, server.port and url.scheme (never the path or query),
//     status Error on a 5xx response; for a test the test's name; else the
//     scene.
//   - A LAG or ANR report is a span "<detail> <scene>" under the dispatch's
//     span (the final report's, when it comes), with an event holding the
//     goroutine's stack.
//   - A slow start-up is a span "STARTUP <scene>".
//
// Each call-tree node is a child span named after its function, nested as
// in the tree, with code.function.name, code.file.path and
// code.line.number.
//
// Times: a report that carries its dispatch's begin time spans from it to
// the report's time, at the clock's resolution (ns); an older report ends
// at its time and lasts its cost. A node starts at its start offset (ms,
// the recorder's resolution) after the dispatch's begin and lasts its cost
// plus that 1 ms tick, since a node of cost c ms ran for less than c+1 ms;
// so no span has a zero length. A node is kept inside its parent (moved
// earlier, or shortened to the parent's length, when the ticks overshoot
// it).
//
// Trace and span ids are derived from the report, so exporting the same
// report twice yields the same spans. The trace id is the one of the
// report's traceparent (the dispatch's span is then a child of the caller's
// span); else, when the report carries its dispatch id, it is derived from
// the process, pid, dispatch id and begin time, so that the LAG, ANR and
// final reports of one dispatch form one trace; else from the report's id.
func Spans(r *Report) ([]Span, error) {
	if !r.Exported() {
		return nil, fmt.Errorf("tag %q is not an issue (want %s)", r.Tag, tracer.TagEvilMethod)
	}
	ev := r.Evil
	if ev == nil {
		return nil, errors.New("report has no fields of a slow call")
	}
	// The groups a report may lack, as zero values.
	d, tree, wd, anr := valueOf(ev.Dispatch), valueOf(ev.Tree), valueOf(ev.Watchdog), valueOf(ev.ANR)
	if r.Time == "" {
		return nil, errors.New("report has no time")
	}
	end, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		return nil, fmt.Errorf("report time: %w", err)
	}
	if ev.Cost < 0 || ev.Cost > maxMs {
		return nil, fmt.Errorf("report cost %d ms is out of range 0..%d", ev.Cost, int64(maxMs))
	}
	if r.ID == "" {
		return nil, errors.New("report has no id")
	}
	rootStart := end.Add(-time.Duration(ev.Cost) * time.Millisecond)
	if d.Begin != "" {
		b, err := time.Parse(time.RFC3339Nano, d.Begin)
		if err != nil {
			return nil, fmt.Errorf("report begin: %w", err)
		}
		if b.After(end) {
			return nil, fmt.Errorf("report begins at %s, after its time %s", d.Begin, r.Time)
		}
		rootStart = b
	}
	// The root lasts at least the recorder's resolution.
	end = later(end, rootStart.Add(time.Millisecond))

	seed := r.ID
	var dispatchKey string
	if d.ID != 0 {
		dispatchKey = fmt.Sprintf("%s/%d/%d/%s", r.Process, r.PID, d.ID, d.Begin)
	}
	var traceID [16]byte
	var parent [8]byte
	// Bits 0-7 are the W3C trace flags (sampled, by default); bits 8
	// and 9 say whether the parent is remote.
	local := uint32(FlagHasIsRemote) | 1
	flags := local
	hasParent := false
	state := "" // the caller's tracestate, which every span of its trace keeps
	if tc, ok := tracer.ParseTraceParent(ev.TraceParent); ok {
		traceID, parent, hasParent, state = tc.TraceID, tc.SpanID, true, ev.TraceState
		local = FlagHasIsRemote | uint32(tc.Flags)
		flags = local | FlagIsRemote
	} else if id, ok := tracecontext.ParseTraceID(ev.TraceID); ok {
		// The trace the dispatch made, and passed on to the services it
		// called.
		traceID = id
	} else {
		h := sha256.Sum256([]byte("trace/" + seed))
		if dispatchKey != "" {
			h = sha256.Sum256([]byte("trace/dispatch/" + dispatchKey))
		}
		copy(traceID[:], h[:16])
	}
	scene := ev.Scene
	if scene == "" {
		scene = d.Name
	}
	rootID := spanID(seed, -1)
	lagOrANR := ev.Detail == tracer.DetailLag || ev.Detail == tracer.DetailANR
	if dispatchKey != "" {
		dispatchSpan := spanID("dispatch/"+dispatchKey, -1)
		if lagOrANR {
			// Under the dispatch's span, which the final report
			// brings.
			parent, hasParent, flags = dispatchSpan, true, local
		} else {
			rootID = dispatchSpan
		}
	}
	spans := make([]Span, 1, 1+len(tree.Frames))
	spans[0] = Span{
		TraceID:      traceID,
		SpanID:       rootID,
		ParentSpanID: parent,
		HasParent:    hasParent,
		TraceState:   state,
		Flags:        flags,
		Kind:         SpanKindInternal,
		Start:        unixNano(rootStart),
		End:          unixNano(end),
	}
	root := &spans[0]
	keyFunc := ""
	if fn, _, ok := tracer.ParseWaitKey(tree.StackKey); ok {
		keyFunc = fn
	} else if id, ok := strings.CutSuffix(tree.StackKey, "|"); ok {
		for _, f := range tree.Frames {
			if strconv.FormatUint(uint64(f.ID), 10) == id {
				keyFunc = f.Func
				break
			}
		}
	}
	switch {
	case ev.Detail == tracer.DetailNormal && d.Kind == "http":
		httpServer(root, &d, scene)
	case ev.Detail == tracer.DetailNormal && d.Kind == "rpc":
		rpcServer(root, scene)
	case ev.Detail == tracer.DetailNormal && d.Kind == "message":
		messageConsumer(root, d.Name, scene)
	case ev.Detail == tracer.DetailNormal && (d.Kind == "test" || d.Kind == "benchmark") && d.Name != "":
		root.Name = d.Name
		root.Attributes = append(root.Attributes, str("test.case.name", d.Name))
	case ev.Detail == tracer.DetailNormal:
		root.Name = scene
	default:
		root.Name = strings.TrimSpace(ev.Detail + " " + scene)
	}
	root.Attributes = appendAttrs(root.Attributes,
		str("matrix.tag", r.Tag), str("matrix.detail", ev.Detail), str("matrix.scene", scene),
		str("matrix.name", d.Name), str("matrix.kind", d.Kind), str("matrix.stackKey", tree.StackKey),
		str("matrix.stackKey.function", keyFunc), str("matrix.issue.id", r.ID), str("matrix.note", ev.Note),
		str("matrix.why", ev.Why), integer("matrix.heldBack", int64(ev.HeldBack)),
		integer("matrix.goroutine", int64(d.Goroutine)), integer("matrix.dispatch.id", int64(d.ID)),
	)
	root.Attributes = append(root.Attributes, KeyValue{"matrix.cost_ms", Int(ev.Cost)})
	if ev.Tree != nil {
		root.Attributes = append(root.Attributes, boolean("matrix.recorded", tree.Recorded))
	}
	if ev.CPU != nil {
		root.Attributes = append(root.Attributes, KeyValue{"matrix.cpu_ms", Int(*ev.CPU)})
	}
	root.Attributes = appendAttrs(root.Attributes, str("matrix.cpu.usage", ev.Usage),
		integer("matrix.alloc.bytes", int64(min(ev.AllocBytes, math.MaxInt64))), integer("matrix.alloc.objects", int64(min(ev.AllocCount, math.MaxInt64))),
		str("matrix.alloc.function", ev.AllocFunc), integer("matrix.alloc.function.bytes", int64(min(ev.AllocFuncBytes, math.MaxInt64))))
	if lagOrANR {
		root.Attributes = appendAttrs(root.Attributes,
			integer("matrix.goroutines", int64(wd.Goroutines)), integer("matrix.running", int64(wd.Running)),
			integer("matrix.served", int64(wd.Served)))
		event := Event{Time: unixNano(end), Name: ev.Detail}
		event.Attributes = appendAttrs(nil, str("matrix.goroutine.stack", wd.ThreadStack), str("matrix.note", ev.Note))
		if ev.Detail == tracer.DetailANR {
			keys := make([]string, 0, len(anr.Memory))
			for k := range anr.Memory {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				root.Attributes = append(root.Attributes, KeyValue{"matrix.memory." + k, Int(int64(min(anr.Memory[k], math.MaxInt64)))})
			}
			root.Attributes = append(root.Attributes, KeyValue{"matrix.gc.pause_ms", Double(anr.GCPauseMs)}, KeyValue{"matrix.gc.cycles", Int(int64(min(anr.GCCycles, math.MaxInt64)))})
		}
		root.Events = append(root.Events, event)
	}
	if rp := ev.Repeat; rp != nil {
		root.Attributes = appendAttrs(root.Attributes, str("matrix.repeat", rp.String()), str("matrix.repeat.key", rp.Key()),
			integer("matrix.repeat.calls", int64(rp.Calls)), integer("matrix.repeat.cost_ms", rp.Cost))
	}

	// interval is a span's place in time, in ns after rootStart.
	type interval struct {
		id            [8]byte
		start, end    int64
		depthInReport int
		fn            string // the function of the frame, if any
	}
	rootEnd := end.Sub(rootStart).Nanoseconds()
	stack := []interval{{id: root.SpanID, start: 0, end: rootEnd, depthInReport: -1}}
	frames := tree.Frames
	if len(frames) > 0 && frames[0].ID == dispatchID && frames[0].Depth == 0 {
		// The dispatch's own node is the root span; its children are
		// the root's. Later depth-0 nodes (a tree of package
		// initialisation has several) are children of the root too.
		stack[0].depthInReport = 0
		frames = frames[1:]
	}
	const tick = int64(time.Millisecond)
	for i, f := range frames {
		for len(stack) > 1 && stack[len(stack)-1].depthInReport >= f.Depth {
			stack = stack[:len(stack)-1]
		}
		p := &stack[len(stack)-1]
		// The node ran for less than cost+1 ticks: it began in the tick
		// of its start and ended in the tick of its end.
		length := min(min(max(f.Cost, 0), maxMs)*tick+tick, p.end-p.start)
		start := min(max(min(max(f.Start, 0), maxMs)*tick, p.start), p.end-length)
		stop := start + length
		fn := f.Func
		if f.Bound != nil {
			fn = "" // a boundary's name is no function's (its attributes say what it is)
		}
		// A goroutine's or a boundary's position is in the function
		// that started it or made the call.
		fileFunc := f.Func
		if f.Bound != nil || f.Kind == tracer.FrameGoroutine {
			fileFunc = p.fn
		}
		s := Span{
			TraceID:      traceID,
			SpanID:       spanID(seed, i),
			ParentSpanID: p.id,
			HasParent:    true,
			TraceState:   state,
			Flags:        local,
			Name:         frameName(f),
			Kind:         SpanKindInternal,
			Start:        unixNano(rootStart.Add(time.Duration(start))),
			End:          unixNano(rootStart.Add(time.Duration(stop))),
			Attributes: appendAttrs(nil,
				str("code.function.name", fn), str("code.file.path", codeFilePath(fileFunc, f.File)), integer("code.line.number", int64(f.Line)),
				integer("matrix.id", int64(f.ID)), integer("matrix.count", int64(f.Count)),
				KeyValue{"matrix.cost_ms", Int(f.Cost)}, str("matrix.frame.kind", f.Kind), str("matrix.wait.reason", f.Reason), str("matrix.wait.for", f.For),
			),
		}
		if w := f.WokenBy; w != nil {
			s.Attributes = appendAttrs(s.Attributes, integer("matrix.woken_by.goroutine", int64(w.Goroutine)),
				str("matrix.woken_by.function", w.Func), str("matrix.woken_by.file.path", codeFilePath(w.Func, w.File)), integer("matrix.woken_by.line.number", int64(w.Line)))
		}
		if f.Handoff {
			s.Attributes = appendAttrs(s.Attributes, KeyValue{"matrix.handoff", Bool(true)})
		}
		// A sampled frame is a span too: its time is its share of its
		// parent's own time, by samples, placed after its parent's
		// other children.
		s.Attributes = appendAttrs(s.Attributes, integer("matrix.samples", int64(f.Samples)), integer("matrix.alloc.bytes", int64(min(f.AllocBytes, math.MaxInt64))))
		if f.Bound != nil {
			client(&s, f)
			// The span a call passed on to the service it called has the
			// id it named; a LAG or ANR report's copy of the call keeps a
			// derived one, so that the final report's is the only span
			// with that id.
			if id, ok := tracecontext.ParseSpanID(f.Bound.SpanID); ok && !lagOrANR {
				s.SpanID = id
			}
		}
		spans = append(spans, s)
		stack = append(stack, interval{id: s.SpanID, start: start, end: stop, depthInReport: f.Depth, fn: fn})
	}
	return spans, nil
}

// rpcServer makes root the SERVER span of a gRPC call, whose scene is its
// full method ("/shop.Orders/Get"), as the RPC semantic conventions name
// it: "shop.Orders/Get", with rpc.system, rpc.service and rpc.method.
func rpcServer(root *Span, fullMethod string) {
	root.Kind = SpanKindServer
	name := strings.TrimPrefix(fullMethod, "/")
	root.Name = name
	root.Attributes = append(root.Attributes, str("rpc.system", "grpc"))
	if service, method, ok := strings.Cut(name, "/"); ok && service != "" && method != "" {
		root.Attributes = append(root.Attributes, str("rpc.service", service), str("rpc.method", method))
	}
}

// messageConsumer makes root the CONSUMER span of a message that a
// subscription of messaging system system (the dispatch's name, "nats")
// handed to its handler, whose scene is the subscription's subject, as
// the messaging semantic conventions name it: "process <subject>", with
// messaging.system, messaging.operation.name and .type, and the
// subscription's subject as messaging.destination.subscription.name (a
// pattern when it has wildcards, not the message's own subject).
func messageConsumer(root *Span, system, subject string) {
	root.Kind = SpanKindConsumer
	root.Name = "process " + subject
	root.Attributes = appendAttrs(root.Attributes, str("messaging.system", system),
		str("messaging.operation.name", "process"), str("messaging.operation.type", "process"),
		str("messaging.destination.subscription.name", subject))
}

// client makes s the CLIENT span of a boundary frame, named and with the
// attributes the semantic conventions give a database call
// (db.system.name, db.query.text), an HTTP client request
// (http.request.method, url.scheme, server.address, server.port) or a
// gRPC call (rpc.system, rpc.service, rpc.method, server.address); or the
// PRODUCER span of a published message, "publish" (messaging.system,
// messaging.operation.name and .type, server.address: the subject, which
// may hold data, is not kept).
func client(s *Span, f tracer.Frame) {
	b := f.Bound
	s.Kind = SpanKindClient
	switch f.Kind {
	case tracer.FrameDB:
		system := b.System
		if system == "" {
			system = "other_sql"
		}
		s.Name = system
		if op, _, _ := strings.Cut(b.Statement, " "); op != "" && op != "?" {
			s.Name = strings.ToUpper(op)
		}
		s.Attributes = appendAttrs(s.Attributes, str("db.system.name", system), str("db.query.text", b.Statement))
	case tracer.FrameHTTP:
		m := b.Method
		s.Name = "HTTP"
		if !httpMethods[m] {
			m = "_OTHER"
			s.Attributes = appendAttrs(s.Attributes, str("http.request.method_original", b.Method))
		} else {
			s.Name = m
		}
		s.Attributes = appendAttrs(s.Attributes, str("http.request.method", m), str("url.scheme", b.Scheme))
		s.Attributes = serverAddress(s.Attributes, b.Host, b.Scheme)
	case tracer.FrameRPC:
		name := strings.TrimPrefix(b.Method, "/")
		s.Name = name
		s.Attributes = append(s.Attributes, str("rpc.system", "grpc"))
		if service, method, ok := strings.Cut(name, "/"); ok && service != "" && method != "" {
			s.Attributes = append(s.Attributes, str("rpc.service", service), str("rpc.method", method))
		}
		s.Attributes = serverAddress(s.Attributes, b.Host, "")
	case tracer.FramePublish:
		s.Kind, s.Name = SpanKindProducer, "publish"
		s.Attributes = appendAttrs(s.Attributes, str("messaging.system", b.System),
			str("messaging.operation.name", "publish"), str("messaging.operation.type", "send"))
		s.Attributes = serverAddress(s.Attributes, b.Host, "")
	}
}

// serverAddress appends server.address and server.port of a host
// ("host:port", or the host alone, whose port the scheme implies).
func serverAddress(attrs []KeyValue, hostport, scheme string) []KeyValue {
	if hostport == "" {
		return attrs
	}
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	} else if scheme == "http" {
		port = "80"
	} else if scheme == "https" {
		port = "443"
	}
	attrs = appendAttrs(attrs, str("server.address", host))
	if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 {
		attrs = append(attrs, KeyValue{"server.port", Int(int64(n))})
	}
	return attrs
}

// httpMethods are the methods the HTTP semantic conventions know; others
// are "_OTHER", with the method in http.request.method_original.
var httpMethods = map[string]bool{
	"CONNECT": true, "DELETE": true, "GET": true, "HEAD": true, "OPTIONS": true,
	"PATCH": true, "POST": true, "PUT": true, "TRACE": true, "QUERY": true,
}

// httpServer makes root the SERVER span of an HTTP dispatch whose scene is
// a net/http route pattern ("[METHOD ][HOST]/PATH") or a name the handler
// gave it.
func httpServer(root *Span, r *tracer.DispatchFields, scene string) {
	root.Kind = SpanKindServer
	method := r.Method
	route := ""
	rest := scene
	if m, after, ok := strings.Cut(scene, " "); ok && m != "" && strings.ToUpper(m) == m {
		if method == "" {
			method = m
		}
		rest = strings.TrimLeft(after, " ")
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 && !strings.ContainsAny(rest, " \t") {
		route = rest[i:]
	}
	name := "HTTP"
	if method != "" {
		m := method
		if !httpMethods[m] {
			m = "_OTHER"
			root.Attributes = append(root.Attributes, str("http.request.method_original", method))
		}
		root.Attributes = append(root.Attributes, str("http.request.method", m))
		if m != "_OTHER" {
			name = m
		}
	}
	if route != "" {
		name += " " + route
		root.Attributes = append(root.Attributes, str("http.route", route))
	}
	root.Name = name
	root.Attributes = appendAttrs(root.Attributes, integer("http.response.status_code", int64(r.Status)), str("url.scheme", r.Scheme))
	root.Attributes = serverAddress(root.Attributes, r.Host, r.Scheme)
	if r.Status >= 500 && r.Status <= 599 {
		root.StatusCode = StatusError
	}
}

// valueOf returns *p, or T's zero value when p is nil.
func valueOf[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// frameName is a node's span name: the function, "[reason]" for a wait
// ("[sync.Mutex.Lock]"), or "id <id>" when the report does not name it.
func frameName(f tracer.Frame) string {
	if f.Kind == tracer.FrameWait {
		if f.Reason != "" {
			return "[" + f.Reason + "]"
		}
		return "[wait]"
	}
	name := f.Func
	if name == "" {
		name = "id " + strconv.FormatUint(uint64(f.ID), 10)
	}
	if f.Kind == tracer.FrameGoroutine {
		if f.Handoff {
			return "[handoff] " + name
		}
		return "[goroutine] " + name
	}
	return name
}

// spanID derives a span id from the report id and the node's index (-1
// for the root); never all zero.
func spanID(seed string, i int) [8]byte {
	h := sha256.Sum256([]byte("span/" + seed + "/" + strconv.Itoa(i)))
	id := [8]byte(h[:8])
	if id == ([8]byte{}) {
		id[7] = 1
	}
	return id
}

func unixNano(t time.Time) uint64 {
	if n := t.UnixNano(); n > 0 {
		return uint64(n)
	}
	return 0
}

// appendAttrs appends the attributes that are set (non-empty strings,
// non-zero numbers).
func appendAttrs(dst []KeyValue, kvs ...KeyValue) []KeyValue {
	for _, kv := range kvs {
		if kv.Value.kind != valueNone {
			dst = append(dst, kv)
		}
	}
	return dst
}

func str(k, v string) KeyValue {
	if v == "" {
		return KeyValue{}
	}
	return KeyValue{Key: k, Value: String(v)}
}

func integer(k string, v int64) KeyValue {
	if v == 0 {
		return KeyValue{}
	}
	return KeyValue{Key: k, Value: Int(v)}
}

func boolean(k string, v bool) KeyValue { return KeyValue{Key: k, Value: Bool(v)} }
