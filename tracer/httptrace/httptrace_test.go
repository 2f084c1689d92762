package httptrace

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/matrixgo/matrix/beat"
)

func requireLinked(t *testing.T) {
	t.Helper()
	if !beat.Linked() {
		t.Skip("needs a binary built with -toolexec=matrixexec, which TestMain runs the tests in unless MATRIX_TEST_LINKED=off")
	}
}

// ended records the dispatches that ended.
type ended struct {
	mu sync.Mutex
	ds []struct{ name, scene string }
}

func (e *ended) DispatchBegin(*beat.Dispatch) {}
func (e *ended) DispatchEnd(d *beat.Dispatch) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ds = append(e.ds, struct{ name, scene string }{d.Name(), d.Scene()})
}

func (e *ended) take() []struct{ name, scene string } {
	e.mu.Lock()
	defer e.mu.Unlock()
	ds := e.ds
	e.ds = nil
	return ds
}

func observe(t *testing.T) *ended {
	t.Helper()
	requireLinked(t)
	if err := beat.Start(beat.Config{}); err != nil {
		t.Fatal(err)
	}
	e := &ended{}
	beat.AddObserver(e)
	t.Cleanup(func() { beat.RemoveObserver(e); beat.Stop() })
	return e
}

func serve(h http.Handler, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	return rec
}

func ok(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }

func TestPlainBuildPassesThrough(t *testing.T) {
	if beat.Linked() {
		t.Skip("this binary is linked to the recorder; the no-op contract is checked by the plain go test run")
	}
	called := false
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		Scene(r, "ignored")
		if beat.Current() != nil {
			t.Error("a dispatch in a plain build")
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	if rec := serve(h, "/x"); !called || rec.Code != http.StatusTeapot {
		t.Fatalf("handler called=%v code=%d", called, rec.Code)
	}
}

func TestSceneIsTheRoutePattern(t *testing.T) {
	e := observe(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow/{id}", ok)
	// The middleware around the mux, and inside it around one route.
	inner := http.NewServeMux()
	inner.Handle("GET /items/{id}", Middleware(http.HandlerFunc(ok)))
	for _, tc := range []struct {
		h      http.Handler
		target string
		scene  string
	}{
		{Middleware(mux), "/slow/42?q=secret", "GET /slow/{id}"},
		{inner, "/items/7", "GET /items/{id}"},
		{Middleware(http.HandlerFunc(ok)), "/no/mux?q=secret", "GET"}, // no pattern: the method only
		{Middleware(mux), "/unknown/path", "GET"},                     // 404: no pattern matched
	} {
		if rec := serve(tc.h, tc.target); rec.Code != http.StatusOK && tc.target != "/unknown/path" {
			t.Errorf("%s: code %d", tc.target, rec.Code)
		}
		ds := e.take()
		if len(ds) != 1 || ds[0].name != "http" || ds[0].scene != tc.scene {
			t.Errorf("%s: dispatches %+v, want one named http with scene %q", tc.target, ds, tc.scene)
		}
	}
}

func TestHandlerNamesTheScene(t *testing.T) {
	e := observe(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cart/{id}", func(w http.ResponseWriter, r *http.Request) { Scene(r, "checkout") })
	rec := httptest.NewRecorder()
	Middleware(mux).ServeHTTP(rec, httptest.NewRequest("POST", "/cart/1", nil))
	if ds := e.take(); len(ds) != 1 || ds[0].scene != "checkout" {
		t.Errorf("dispatches %+v, want scene checkout", ds)
	}
}

func TestNestedJoinsOuterDispatch(t *testing.T) {
	e := observe(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a/{x}", ok)
	h := Middleware(Middleware(mux))
	beat.Run("outer", func() { serve(h, "/a/1") })
	if ds := e.take(); len(ds) != 1 || ds[0].name != "outer" || ds[0].scene != "GET /a/{x}" {
		t.Errorf("dispatches %+v, want the outer one with the route as scene", ds)
	}
}

func TestPanickingHandlerEndsDispatch(t *testing.T) {
	e := observe(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v", r)
			}
		}()
		serve(Middleware(mux), "/boom")
	}()
	if beat.Current() != nil {
		t.Error("the dispatch is still open after the panic")
	}
	if ds := e.take(); len(ds) != 1 || ds[0].scene != "GET /boom" {
		t.Errorf("dispatches %+v", ds)
	}
}

// traceCtx records the trace context of the dispatches that ended.
type traceCtx struct {
	mu  sync.Mutex
	got []string
}

func (c *traceCtx) DispatchBegin(*beat.Dispatch) {}
func (c *traceCtx) DispatchEnd(d *beat.Dispatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, d.TraceParent())
}

func TestTraceParentReachesTheDispatch(t *testing.T) {
	observe(t)
	c := &traceCtx{}
	beat.AddObserver(c)
	defer beat.RemoveObserver(c)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := Middleware(http.HandlerFunc(ok))
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("traceparent", tp)
	h.ServeHTTP(httptest.NewRecorder(), req)
	serve(h, "/y") // no header
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.got) != 2 || c.got[0] != tp || c.got[1] != "" {
		t.Errorf("trace contexts %q, want [%q, \"\"]", c.got, tp)
	}
}
