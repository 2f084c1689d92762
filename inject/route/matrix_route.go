//go:build matrixexec_inject

// This file is added to the routers, HTTP servers and RPC servers that
// matrixexec hooks (gin, echo v4 and v5, chi, gorilla/mux, httprouter,
// go-zero, fiber, fasthttp, hertz, connect v1 and v2, grpc-gateway, gRPC,
// NATS; see rewrite.PatchRoutes).
// It is Go 1.7's (no generics, no any): httprouter's module declares no
// Go version, and so compiles with -lang=go1.7.
// matrixexec renders it with the package clause of the package it joins and
// drops the build tag; the statements it inserts into the package's
// functions call the declarations below. Every name starts with
// __matrix_rt_, so that it cannot clash with the package's own names or
// with the hooks file of an instrumented package.

package route

import __matrix_rt_unsafe "unsafe"

//go:linkname __matrix_rt_flag runtime.matrixFlag
func __matrix_rt_flag() *uint32

// __matrix_rt_on points at the recording flag: the package's hooks file,
// when it is instrumented, declares the flag itself, and one package
// cannot declare it twice.
var __matrix_rt_on = __matrix_rt_flag()

//go:linkname __matrix_rt_bound runtime.matrixBound
func __matrix_rt_bound(kind int, a, b, c string, v interface{}) bool

//go:linkname __matrix_rt_unbound runtime.matrixUnbound
func __matrix_rt_unbound()

//go:linkname __matrix_rt_bound_out runtime.matrixBoundOut
func __matrix_rt_bound_out(kind int, a, b, c string, v interface{}) (bool, string)

//go:linkname __matrix_rt_trace_state runtime.matrixTraceState
func __matrix_rt_trace_state() (string, string)

//go:linkname __matrix_rt_trace_context runtime.matrixDispatchTraceContext
func __matrix_rt_trace_context(d __matrix_rt_unsafe.Pointer, tp, state, baggage string)

//go:linkname __matrix_rt_current runtime.matrixCurrent
func __matrix_rt_current() __matrix_rt_unsafe.Pointer

//go:linkname __matrix_rt_scene runtime.matrixDispatchScene
func __matrix_rt_scene(scene string)

//go:linkname __matrix_rt_route_scene runtime.matrixDispatchRoute
func __matrix_rt_route_scene(method, route string)

//go:linkname __matrix_rt_begin runtime.matrixDispatchBegin
func __matrix_rt_begin(kind int, name string) __matrix_rt_unsafe.Pointer

//go:linkname __matrix_rt_end runtime.matrixDispatchEnd
func __matrix_rt_end(d __matrix_rt_unsafe.Pointer, scene string)

//go:linkname __matrix_rt_begin_request runtime.matrixDispatchBeginRequest
func __matrix_rt_begin_request(kind int, name, method, host string, tls bool) __matrix_rt_unsafe.Pointer

//go:linkname __matrix_rt_traceparent runtime.matrixDispatchTraceParent
func __matrix_rt_traceparent(d __matrix_rt_unsafe.Pointer, tp string)

//go:linkname __matrix_rt_status runtime.matrixDispatchStatus
func __matrix_rt_status(code int)

//go:linkname __matrix_rt_serving runtime.matrixServing
func __matrix_rt_serving()

// __matrix_rt_active reports whether the goroutine serves a dispatch that
// is being recorded: a scene computed at some cost is computed only then.
func __matrix_rt_active() bool { return __matrix_rt_current() != nil }

// __matrix_rt_route names the scene of the goroutine's dispatch after the
// route template a request matched ("GET /users/:id"), or "GET unmatched"
// when route is empty: never after the request's path, whose values are
// unbounded and may be private.
func __matrix_rt_route(method, route string) {
	if __matrix_rt_current() == nil {
		return
	}
	if route != "" {
		__matrix_rt_route_scene(method, route)
		return
	}
	__matrix_rt_scene(__matrix_rt_name(method, route))
}

// __matrix_rt_name returns the scene of a request of method that matched
// route ("" for none).
func __matrix_rt_name(method, route string) string {
	if route != "" {
		return method + " " + route
	}
	switch method {
	case "GET":
		return "GET unmatched"
	case "POST":
		return "POST unmatched"
	case "PUT":
		return "PUT unmatched"
	case "DELETE":
		return "DELETE unmatched"
	case "HEAD":
		return "HEAD unmatched"
	case "PATCH":
		return "PATCH unmatched"
	case "OPTIONS":
		return "OPTIONS unmatched"
	case "":
		return "unmatched"
	}
	return method + " unmatched"
}

// __matrix_rt_template names the scene after a matched route's path
// template (gorilla/mux's routes); a route without one names the method
// alone.
func __matrix_rt_template(method string, r interface{ GetPathTemplate() (string, error) }) {
	if __matrix_rt_current() == nil {
		return
	}
	if t, err := r.GetPathTemplate(); err == nil && t != "" {
		__matrix_rt_route_scene(method, t)
		return
	}
	__matrix_rt_scene(method)
}

// __matrix_rt_named names the scene of the goroutine's dispatch, if it
// serves one: a handler wrapped where its route is registered (httprouter
// keeps no template past registration) runs it first.
func __matrix_rt_named(scene string) {
	if __matrix_rt_current() != nil {
		__matrix_rt_scene(scene)
	}
}

// __matrix_rt_call begins the dispatch of an RPC a server handles, or of
// a message a subscription's handler processes, of kind and named name
// (nested in the goroutine's dispatch if it serves one already: a gRPC
// server behind net/http), whose scene is method: the RPC's full method
// ("/shop.Orders/Get"), the subscription's subject. It returns the
// dispatch, nil while nothing records, for __matrix_rt_end.
func __matrix_rt_call(kind int, name, method string) __matrix_rt_unsafe.Pointer {
	d := __matrix_rt_begin(kind, name)
	if d != nil {
		__matrix_rt_scene(method)
	}
	return d
}

// A server that keeps a request's line and headers in byte slices it
// reuses (fasthttp) begins the request's dispatch with
// __matrix_rt_begin_request itself, in the frame that calls the handler,
// while the recording flag is set: the method and host are copied into
// strings only then. __matrix_rt_none gives the dispatch's variable its
// type when nothing records.
func __matrix_rt_none() __matrix_rt_unsafe.Pointer { return nil }

// __matrix_rt_method returns the request method m as a string, without
// copying the common ones: the dispatch keeps it past the request, and the
// server reuses m's bytes.
func __matrix_rt_method(m []byte) string {
	switch string(m) {
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "DELETE":
		return "DELETE"
	case "HEAD":
		return "HEAD"
	case "PATCH":
		return "PATCH"
	case "OPTIONS":
		return "OPTIONS"
	}
	return string(m)
}

// __matrix_rt_host returns the request's host as a string that the
// dispatch may keep, allocating nothing when it is the host of the request
// before. (The file imports nothing but unsafe: a package gets no other
// import than those its own files make.)
//
//go:linkname __matrix_rt_host runtime.matrixHost
func __matrix_rt_host(h []byte) string

// __matrix_rt_bytes returns b's bytes as a string, without copying them,
// for a boundary's text, which is copied before the call it names goes on.
func __matrix_rt_bytes(b []byte) string { return *(*string)(__matrix_rt_unsafe.Pointer(&b)) }

// __matrix_rt_scheme returns the scheme of a client's connections.
func __matrix_rt_scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}

// The canonical keys of the W3C trace context and baggage headers.
var (
	__matrix_rt_traceparent_key = []byte("Traceparent")
	__matrix_rt_tracestate_key  = []byte("Tracestate")
	__matrix_rt_baggage_key     = []byte("Baggage")
)

// __matrix_rt_trace_bytes gives the request's W3C trace context headers
// (traceparent, tracestate, baggage), copied, to its dispatch d.
func __matrix_rt_trace_bytes(d __matrix_rt_unsafe.Pointer, tp, state, baggage []byte) {
	if d != nil && (len(tp) != 0 || len(baggage) != 0) {
		__matrix_rt_trace_context(d, string(tp), string(state), string(baggage))
	}
}

// __matrix_rt_trace_map gives the W3C trace context headers of a message
// (traceparent, tracestate, baggage) to its dispatch d. Header keys are
// case-sensitive (NATS's): each is looked up as OpenTelemetry's propagator
// writes it, in lower case, then in canonical form.
func __matrix_rt_trace_map(d __matrix_rt_unsafe.Pointer, h map[string][]string) {
	tp, baggage := __matrix_rt_map_value(h, "traceparent", "Traceparent"), __matrix_rt_map_value(h, "baggage", "Baggage")
	if tp != "" || baggage != "" {
		__matrix_rt_trace_context(d, tp, __matrix_rt_map_value(h, "tracestate", "Tracestate"), baggage)
	}
}

// __matrix_rt_map_value returns the value of header key (or of its
// canonical form canon), its lines joined by commas.
func __matrix_rt_map_value(h map[string][]string, key, canon string) string {
	v := h[key]
	if len(v) == 0 {
		v = h[canon]
	}
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	s := v[0]
	for _, x := range v[1:] {
		s += "," + x
	}
	return s
}

// __matrix_rt_header is a client request's header that a call passes the
// trace context on in (fasthttp's and hertz's RequestHeader).
type __matrix_rt_header interface {
	Peek(key string) []byte
	Set(key, value string)
	Del(key string)
}

// __matrix_rt_pass_on sets the traceparent tp on the header h of a
// request the client sends, with the tracestate and baggage of the
// dispatch's request unless h has its own, and returns what it set, for
// __matrix_rt_unset once the call returns: the program's request is left
// as it made it.
func __matrix_rt_pass_on(h __matrix_rt_header, tp string) (set uint8) {
	h.Set("Traceparent", tp)
	state, baggage := __matrix_rt_trace_state()
	if state != "" && h.Peek("Tracestate") == nil {
		h.Set("Tracestate", state)
		set |= 1
	}
	if baggage != "" && h.Peek("Baggage") == nil {
		h.Set("Baggage", baggage)
		set |= 2
	}
	return set
}

// __matrix_rt_unset removes what __matrix_rt_pass_on set.
func __matrix_rt_unset(h __matrix_rt_header, set uint8) {
	h.Del("Traceparent")
	if set&1 != 0 {
		h.Del("Tracestate")
	}
	if set&2 != 0 {
		h.Del("Baggage")
	}
}

// __matrix_rt_served ends the dispatch d of a request the handler has
// answered with the status code code, on the goroutine that began it.
func __matrix_rt_served(d __matrix_rt_unsafe.Pointer, code int) {
	if code >= 200 {
		__matrix_rt_status(code)
	}
	__matrix_rt_end(d, "")
}

// __matrix_rt_nats_pass reports whether a NATS message published to subj
// with the header bytes hdr may carry the dispatch's trace context on: the
// server takes headers (headers), the subject is not a system one (a
// leading "$": JetStream's API and acknowledgements, the system account),
// and the message has no traceparent of its own.
func __matrix_rt_nats_pass(headers bool, subj string, hdr []byte) bool {
	return headers && (subj == "" || subj[0] != '$') && !__matrix_rt_nats_has(hdr, "traceparent")
}

// __matrix_rt_nats_header returns the header bytes of a NATS message
// (hdr: "NATS/1.0\r\n", a "Key: value\r\n" line for each value, and
// "\r\n"; empty for a message without headers) with the traceparent tp,
// and the tracestate and baggage of the dispatch's request unless the
// message has its own, in lower case as OpenTelemetry's propagator writes
// them: a new slice, the program's message left as it made it. A message
// that would grow past max bytes with data bytes of payload, or whose
// header bytes are not in that form, is sent as it was.
func __matrix_rt_nats_header(hdr []byte, tp string, data int, max int64) []byte {
	const status, end = "NATS/1.0\r\n", "\r\n"
	var b []byte
	switch {
	case len(hdr) == 0:
		b = append(b, status...)
	case len(hdr) >= len(status)+len(end) && string(hdr[len(hdr)-2*len(end):]) == end+end:
		b = append(b, hdr[:len(hdr)-len(end)]...)
	default:
		return hdr
	}
	b = __matrix_rt_nats_line(b, "traceparent", tp)
	state, baggage := __matrix_rt_trace_state()
	if state != "" && !__matrix_rt_nats_has(hdr, "tracestate") {
		b = __matrix_rt_nats_line(b, "tracestate", state)
	}
	if baggage != "" && !__matrix_rt_nats_has(hdr, "baggage") {
		b = __matrix_rt_nats_line(b, "baggage", baggage)
	}
	b = append(b, end...)
	if int64(len(b)+data) > max {
		return hdr
	}
	return b
}

// __matrix_rt_nats_line appends the header line "key: value\r\n" (a value
// with a line break is left out).
func __matrix_rt_nats_line(b []byte, key, value string) []byte {
	for i := 0; i < len(value); i++ {
		if value[i] == '\r' || value[i] == '\n' {
			return b
		}
	}
	b = append(b, key...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}

// __matrix_rt_nats_has reports whether a NATS message's header bytes have
// the key (lower case) or its canonical form: header keys are
// case-sensitive, and a program or its propagator writes either.
func __matrix_rt_nats_has(hdr []byte, key string) bool {
	canon := string(key[0]-'a'+'A') + key[1:]
	for i := 0; i+2 < len(hdr); i++ {
		if hdr[i] != '\r' || hdr[i+1] != '\n' {
			continue
		}
		line := hdr[i+2:]
		for _, k := range [2]string{key, canon} {
			if len(line) > len(k) && string(line[:len(k)]) == k && line[len(k)] == ':' {
				return true
			}
		}
	}
	return false
}
