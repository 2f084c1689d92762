//go:build matrixexec_inject

// This file is added to net/http, besides the declarations of
// matrix_std.go: what its client's hook calls to pass the trace context of
// a recording goroutine's dispatch on to the service it calls. matrixexec
// renders it with the package clause of net/http and drops the build tag.

package std

import (
	__matrix_strings "strings"
	__matrix_unsafe "unsafe"
)

//go:linkname __matrix_bound_out runtime.matrixBoundOut
func __matrix_bound_out(kind int, a, b, c string, v any) (bool, string)

//go:linkname __matrix_trace_state runtime.matrixTraceState
func __matrix_trace_state() (string, string)

//go:linkname __matrix_trace_context runtime.matrixDispatchTraceContext
func __matrix_trace_context(d __matrix_unsafe.Pointer, tp, state, baggage string)

// __matrix_trace_in gives the W3C trace context of the request the server
// began the dispatch d for to the dispatch: its traceparent, tracestate
// and baggage headers, each with its lines joined as one list.
func __matrix_trace_in(d __matrix_unsafe.Pointer, h Header) {
	tp, baggage := h["Traceparent"], h["Baggage"]
	if len(tp) == 0 && len(baggage) == 0 {
		return
	}
	parent := ""
	if len(tp) != 0 {
		parent = tp[0]
	}
	__matrix_trace_context(d, parent, __matrix_list(h["Tracestate"]), __matrix_list(baggage))
}

// __matrix_list returns the lines of a header that is a comma-separated
// list as one value.
func __matrix_list(v []string) string {
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	return __matrix_strings.Join(v, ",")
}

// __matrix_propagate returns a copy of req whose header is a copy of
// req's (not nil) with the traceparent tp, and the tracestate and baggage
// of the dispatch's request unless req has its own: a RoundTripper must
// not change the request it is given, and the copy is what the transport
// sends.
func __matrix_propagate(req *Request, tp string) *Request {
	r := new(Request)
	*r = *req
	r.Header = req.Header.Clone()
	r.Header["Traceparent"] = []string{tp}
	state, baggage := __matrix_trace_state()
	if state != "" && r.Header["Tracestate"] == nil {
		r.Header["Tracestate"] = []string{state}
	}
	if baggage != "" && r.Header["Baggage"] == nil {
		r.Header["Baggage"] = []string{baggage}
	}
	return r
}
