package otlp

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer"
)

// ScopeName is the instrumentation scope of the exported spans.
const ScopeName = "github.com/matrixgo/matrix/tracer/otlp"

// dispatchID is the DISPATCH pseudo-function's id in reports.
const dispatchID = abi.DispatchID

// maxMs bounds the costs and starts read from a report (the largest time
// a record holds), so that they convert to ns without overflow.
const maxMs = abi.TimeMask

// Report is the part of a JSON report line that export reads. Fields
// absent from the line stay zero; Frame.Start is nil in reports written
// before frames carried their start.
type Report struct {
	Tag         string  `json:"tag"`
	ID          string  `json:"id"`
	Time        string  `json:"time"`
	Process     string  `json:"process"`
	PID         int64   `json:"pid"`
	Detail      string  `json:"detail"`
	Cost        int64   `json:"cost"`
	Stack       string  `json:"stack"`
	StackKey    string  `json:"stackKey"`
	Scene       string  `json:"scene"`
	Name        string  `json:"name"`
	Kind        string  `json:"kind"`
	Goroutine   uint64  `json:"goroutine"`
	Recorded    *bool   `json:"recorded"`
	Note        string  `json:"note"`
	TraceParent string  `json:"traceparent"`
	Frames      []Frame `json:"frames"`
	// Repeat is the N+1 pattern of a slow call, when it has one.
	Repeat *tracer.RepeatFields `json:"repeat"`
}

// Frame is one call-tree node of a report (tracer.Frame as JSON), with the
// optional kind of node ("wait", "goroutine", "inline") and the reason of
// a wait, when the report has them.
type Frame struct {
	Depth  int    `json:"depth"`
	ID     uint32 `json:"id"`
	Count  int    `json:"count"`
	Cost   int64  `json:"cost"`
	Func   string `json:"func"`
	File   string `json:"file"`
	Line   int    `json:"line"`
	Start  *int64 `json:"start"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	For    string `json:"for"`
}

// Exported reports whether export sends the report: a slow call, LAG, ANR
// or slow start-up (tag Trace_EvilMethod). Frame-rate and start-up phase
// reports (Trace_FPS, Trace_StartUp) are not issues of one dispatch.
func (r *Report) Exported() bool { return r.Tag == tracer.TagEvilMethod }

// ParseReport decodes one JSON report line.
func ParseReport(line []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("not a JSON report: %w", err)
	}
	return &r, nil
}

// Span is one OTLP span (opentelemetry.proto.trace.v1.Span), with the
// fields the exporter sets.
type Span struct {
	TraceID      [16]byte
	SpanID       [8]byte
	ParentSpanID [8]byte
	HasParent    bool
	Name         string
	Kind         int32 // SpanKindInternal
	Flags        uint32
	// Start and End are in ns since the Unix epoch.
	Start, End uint64
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
	Spans        []Span
}

// Resource describes the process the spans come from.
type Resource struct {
	// ServiceName is the service.name attribute; empty means
	// "unknown_service:<process>" (the OpenTelemetry default).
	ServiceName string
}

// Spans turns one issue report into its spans: a root span for the
// dispatch (named "<detail> <scene>", for example "NORMAL GET /slow") and
// one child span per call-tree node, nested as in the tree.
//
// The root span ends at the report's time and lasts its cost. A node
// starts at the root's start plus its Start offset and lasts its Cost;
// in a report whose frames have no start, the children of a node are
// laid out one after the other from the node's start. Every span is
// clamped into its parent's interval, so the spans nest in time.
//
// The trace id is the one of the report's traceparent, the root's parent
// its parent span id: the spans join the caller's trace. Without one the
// trace id is derived from the report's id and the root has no parent.
// Span ids are derived from the report's id, so exporting the same report
// twice yields the same spans.
func Spans(r *Report) ([]Span, error) {
	if !r.Exported() {
		return nil, fmt.Errorf("tag %q is not an issue (want %s)", r.Tag, tracer.TagEvilMethod)
	}
	if r.Time == "" {
		return nil, errors.New("report has no time")
	}
	end, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		return nil, fmt.Errorf("report time: %w", err)
	}
	if r.Cost < 0 || r.Cost > maxMs {
		return nil, fmt.Errorf("report cost %d ms is out of range 0..%d", r.Cost, int64(maxMs))
	}
	if r.ID == "" {
		return nil, errors.New("report has no id")
	}
	seed := r.ID
	var traceID [16]byte
	var parent [8]byte
	// Bits 0-7 are the W3C trace flags (sampled, by default); bits 8
	// and 9 say whether the parent is remote.
	local := uint32(FlagHasIsRemote) | 1
	flags := local
	hasParent := false
	if tc, ok := tracer.ParseTraceParent(r.TraceParent); ok {
		traceID, parent, hasParent = tc.TraceID, tc.SpanID, true
		local = FlagHasIsRemote | uint32(tc.Flags)
		flags = local | FlagIsRemote
	} else {
		h := sha256.Sum256([]byte("trace/" + seed))
		copy(traceID[:], h[:16])
	}
	scene := r.Scene
	if scene == "" {
		scene = r.Name
	}
	rootStart := end.Add(-time.Duration(r.Cost) * time.Millisecond)
	spans := make([]Span, 1, 1+len(r.Frames))
	spans[0] = Span{
		TraceID:      traceID,
		SpanID:       spanID(seed, -1),
		ParentSpanID: parent,
		HasParent:    hasParent,
		Flags:        flags,
		Name:         strings.TrimSpace(r.Detail + " " + scene),
		Kind:         SpanKindInternal,
		Start:        unixNano(rootStart),
		End:          unixNano(end),
	}
	root := &spans[0]
	keyFunc := ""
	if fn, _, ok := tracer.ParseWaitKey(r.StackKey); ok {
		keyFunc = fn
	} else if id, ok := strings.CutSuffix(r.StackKey, "|"); ok {
		for _, f := range r.Frames {
			if strconv.FormatUint(uint64(f.ID), 10) == id {
				keyFunc = f.Func
				break
			}
		}
	}
	root.Attributes = appendAttrs(nil,
		str("matrix.tag", r.Tag), str("matrix.detail", r.Detail), str("matrix.scene", scene),
		str("matrix.name", r.Name), str("matrix.kind", r.Kind), str("matrix.stackKey", r.StackKey),
		str("matrix.stackKey.function", keyFunc), str("matrix.issue.id", r.ID), str("matrix.note", r.Note),
		integer("matrix.cost_ms", r.Cost), integer("matrix.goroutine", int64(r.Goroutine)),
	)
	if r.Recorded != nil {
		root.Attributes = append(root.Attributes, boolean("matrix.recorded", *r.Recorded))
	}
	if keyFunc != "" {
		root.Attributes = append(root.Attributes, str("code.function", keyFunc))
	}
	if rp := r.Repeat; rp != nil {
		root.Attributes = appendAttrs(root.Attributes, str("matrix.repeat", rp.String()), str("matrix.repeat.key", rp.Key()),
			integer("matrix.repeat.calls", int64(rp.Calls)), integer("matrix.repeat.cost_ms", rp.Cost))
	}

	// interval is a span's place in time, in ns after rootStart, and the
	// end of its last child laid out so far (reports without starts).
	type interval struct {
		id            [8]byte
		start, end    int64
		nextChild     int64
		depthInReport int
	}
	rootEnd := r.Cost * int64(time.Millisecond)
	stack := []interval{{id: root.SpanID, start: 0, end: rootEnd, depthInReport: -1}}
	frames := r.Frames
	if len(frames) > 0 && frames[0].ID == dispatchID && frames[0].Depth == 0 {
		// The dispatch's own node is the root span; its children are
		// the root's. Later depth-0 nodes (a tree of package
		// initialisation has several) are children of the root too.
		stack[0].depthInReport = 0
		frames = frames[1:]
	}
	for i, f := range frames {
		for len(stack) > 1 && stack[len(stack)-1].depthInReport >= f.Depth {
			stack = stack[:len(stack)-1]
		}
		p := &stack[len(stack)-1]
		cost := min(max(f.Cost, 0), maxMs) * int64(time.Millisecond)
		var start int64
		if f.Start != nil {
			start = min(max(*f.Start, 0), maxMs) * int64(time.Millisecond)
		} else {
			start = max(p.nextChild, p.start)
		}
		start = min(max(start, p.start), p.end)
		stop := start + min(cost, p.end-start)
		p.nextChild = stop
		s := Span{
			TraceID:      traceID,
			SpanID:       spanID(seed, i),
			ParentSpanID: p.id,
			HasParent:    true,
			Flags:        local,
			Name:         frameName(f),
			Kind:         SpanKindInternal,
			Start:        unixNano(rootStart.Add(time.Duration(start))),
			End:          unixNano(rootStart.Add(time.Duration(stop))),
			Attributes: appendAttrs(nil,
				str("code.function", f.Func), str("code.filepath", f.File), integer("code.lineno", int64(f.Line)),
				integer("matrix.id", int64(f.ID)), integer("matrix.count", int64(f.Count)),
				integer("matrix.cost_ms", f.Cost), str("matrix.frame.kind", f.Kind), str("matrix.wait.reason", f.Reason), str("matrix.wait.for", f.For),
			),
		}
		spans = append(spans, s)
		stack = append(stack, interval{id: s.SpanID, start: start, end: stop, nextChild: start, depthInReport: f.Depth})
	}
	return spans, nil
}

// frameName is a node's span name: the function, "[reason]" for a wait
// ("[sync.Mutex.Lock]"), or "id <id>" when the report does not name it.
func frameName(f Frame) string {
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
		return "[goroutine] " + name
	}
	return name
}

// ResourceSpans wraps spans with the resource of the process that wrote r.
func NewResourceSpans(r *Report, res Resource, spans []Span) *ResourceSpans {
	name := res.ServiceName
	if name == "" {
		name = "unknown_service"
		if r.Process != "" {
			name += ":" + r.Process
		}
	}
	attrs := appendAttrs(nil, str("service.name", name), str("process.executable.name", r.Process), integer("process.pid", r.PID))
	return &ResourceSpans{Resource: attrs, Scope: ScopeName, Spans: spans}
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
