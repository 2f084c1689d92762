package beat

import (
	"strings"
	"testing"
)

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
	// What the client controls is bounded.
	d.SetRequest(Request{Method: strings.Repeat("X", 33), Host: strings.Repeat("h", 300), Scheme: "http"})
	if r, _ := d.Request(); r.Method != "_OTHER" || r.Host != "" {
		t.Errorf("long method and host kept: %+v", r)
	}
	d.SetRequest(Request{Method: "GET", Host: "a b\n", Scheme: "http"})
	if r, _ := d.Request(); r.Host != "" {
		t.Errorf("host with spaces kept: %q", r.Host)
	}
	d.SetRequest(Request{Method: "GET", Host: "[::1]:8080", Scheme: "http"})
	if r, _ := d.Request(); r.Host != "[::1]:8080" {
		t.Errorf("IPv6 host dropped: %q", r.Host)
	}
	var nilD *Dispatch
	nilD.SetRequest(Request{})
	nilD.SetStatus(200)
	if _, ok := nilD.Request(); ok || nilD.Status() != 0 {
		t.Error("a nil dispatch has a request or status")
	}
}
