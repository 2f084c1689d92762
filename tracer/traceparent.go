package tracer

import (
	"strings"

	"github.com/matrixgo/matrix/internal/tracecontext"
)

// KeyTraceParent is the content key of the W3C trace context (traceparent
// header) of the request a dispatch served. A report carries it only when
// the request had a valid one; it is the only request data a report holds,
// so that an exported report joins the caller's distributed trace.
const KeyTraceParent = "traceparent"

// TraceContext is a parsed W3C traceparent: the caller's trace id and the
// id of the caller's span (the parent of the spans Matrix exports).
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// ParseTraceParent parses a W3C traceparent header of version 00:
// "00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>", lower-case
// hex, exactly 55 characters. It returns false for anything else,
// including an all-zero trace or span id (invalid per the W3C Trace
// Context recommendation).
func ParseTraceParent(s string) (TraceContext, bool) {
	c, ok := tracecontext.Parse(s)
	return TraceContext(c), ok
}

// validTraceParent returns tp if it is a valid traceparent, else "".
func validTraceParent(tp string) string {
	if _, ok := ParseTraceParent(tp); ok {
		return tp
	}
	return ""
}

// maxTraceState is how much of a tracestate a report keeps: the length
// the W3C recommendation asks every participant to pass on at least.
const maxTraceState = 512

// reportTraceState returns the tracestate a report keeps: state when tp is
// a valid traceparent (a tracestate belongs to its traceparent), without
// the list members past maxTraceState bytes; else "".
func reportTraceState(tp, state string) string {
	if state == "" || validTraceParent(tp) == "" {
		return ""
	}
	for len(state) > maxTraceState {
		i := strings.LastIndexByte(state, ',')
		if i < 0 {
			return ""
		}
		state = state[:i]
	}
	return strings.TrimSpace(state)
}
