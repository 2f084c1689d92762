// Package httptrace makes each request a net/http server handles a beat
// dispatch, so that slow requests are reported by the tracers with their
// call trees, under the request's route pattern as the scene.
//
// In a binary not built with -toolexec=matrixexec, or while the recorder is
// stopped, the middleware only calls the next handler.
package httptrace

import (
	"net/http"
	"strings"

	"github.com/matrixgo/matrix/beat"
)

// DispatchName is the name of the dispatches the middleware begins.
const DispatchName = "http"

// TraceParentHeader is the W3C Trace Context header the middleware reads.
const TraceParentHeader = "Traceparent"

// Middleware runs each request as a dispatch (kind beat.KindHTTP, name
// "http"). When next returns, the dispatch's scene becomes the route
// pattern the request matched (Request.Pattern, which net/http's ServeMux
// sets, Go 1.23+), or the request method alone when there is none, unless
// the handler named the scene itself (Scene). The scene never holds the
// raw path or query: reports carry no request data.
//
// A request already inside a dispatch (nested middleware, or the automatic
// net/http hook of an instrumented standard library) joins it.
//
// The request's W3C trace context (its traceparent, tracestate and baggage
// headers) is handed to the dispatch (Dispatch.SetTraceContext), so that
// reports exported over OTLP join the caller's trace and the dispatch's
// client calls carry it on, and so are its method, host and scheme
// (Dispatch.SetRequest), never its path or query.
//
// Routers that set the pattern on a request of their own (chi's copy, or a
// ServeMux reached through another middleware that replaced the request
// with WithContext) are read after routing: matrixexec hooks the match of
// net/http's ServeMux, gin, echo v4, chi v5, gorilla/mux and httprouter,
// which name the scene ("GET /users/{id}", or "GET unmatched") as soon as
// they have matched, and the middleware keeps a scene named while next ran.
// Only a router it does not hook leaves the method as the scene.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := beat.Current(); d != nil {
			// Inside a dispatch already (the patched net/http server
			// began one for this request): join it, naming its scene.
			if d.TraceParent() == "" {
				setTraceContext(d, r)
			}
			setRequest(d, r)
			before := d.Scene()
			defer nameScene(d, r, before)
			next.ServeHTTP(w, r)
			return
		}
		d := beat.Begin(beat.KindHTTP, DispatchName)
		if d == nil {
			next.ServeHTTP(w, r)
			return
		}
		setTraceContext(d, r)
		setRequest(d, r)
		before := d.Scene()
		defer end(d, r, before)
		next.ServeHTTP(w, r)
	})
}

// setTraceContext hands the W3C trace context headers of r to d; the lines
// of tracestate and baggage are joined as one list each.
func setTraceContext(d *beat.Dispatch, r *http.Request) {
	d.SetTraceContext(r.Header.Get(TraceParentHeader),
		strings.Join(r.Header.Values("Tracestate"), ","),
		strings.Join(r.Header.Values("Baggage"), ","))
}

// setRequest hands the request's method, host and scheme to the dispatch,
// unless it has them already.
func setRequest(d *beat.Dispatch, r *http.Request) {
	if _, ok := d.Request(); ok {
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	d.SetRequest(beat.Request{Method: r.Method, Host: r.Host, Scheme: scheme})
}

// end names the scene, unless it changed while the handler ran, and ends
// the dispatch (also when the handler panicked).
func end(d *beat.Dispatch, r *http.Request, before string) {
	nameScene(d, r, before)
	d.End()
}

// nameScene names the scene from the request's route pattern (or method),
// unless it changed while the handler ran.
func nameScene(d *beat.Dispatch, r *http.Request, before string) {
	if d.Scene() == before {
		if r.Pattern != "" {
			d.SetScene(r.Pattern)
		} else {
			d.SetScene(r.Method)
		}
	}
}

// Scene names the scene of the request r that the calling goroutine is
// serving, instead of the route pattern (for example "checkout" for a
// handler that serves several routes). It must be called on the goroutine
// that serves r, inside the middleware; elsewhere it does nothing. Do not
// put request data (ids, paths, queries) in a scene.
func Scene(r *http.Request, name string) {
	_ = r // the dispatch is the goroutine's; r documents which request
	beat.Current().SetScene(name)
}
