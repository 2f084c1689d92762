package beat

import "testing"

// A dispatch keeps the request it serves and the first final status code
// of its response (1xx codes and a second WriteHeader are not the status).
func TestDispatchRequestAndStatus(t *testing.T) {
	d := &Dispatch{}
	if _, ok := d.Request(); ok || d.Status() != 0 {
		t.Fatal("a new dispatch has a request or status")
	}
	d.SetRequest(Request{Method: "GET", Host: "shop:8080", Scheme: "http"})
	if r, ok := d.Request(); !ok || r != (Request{Method: "GET", Host: "shop:8080", Scheme: "http"}) {
		t.Errorf("request %+v %v", r, ok)
	}
	d.SetStatus(103)
	d.SetStatus(503)
	d.SetStatus(200)
	if d.Status() != 503 {
		t.Errorf("status %d, want the first final one, 503", d.Status())
	}
	var nilD *Dispatch
	nilD.SetRequest(Request{})
	nilD.SetStatus(200)
	if _, ok := nilD.Request(); ok || nilD.Status() != 0 {
		t.Error("a nil dispatch has a request or status")
	}
}
