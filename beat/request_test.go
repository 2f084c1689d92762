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
	// The server's own goroutine writes the status without a
	// compare-and-swap, with the same rule.
	own := &Dispatch{}
	for _, code := range []int{100, 103, 1000, 404, 200, 503} {
		own.setOwnStatus(code)
	}
	if own.Status() != 404 {
		t.Errorf("own status %d, want the first final one, 404", own.Status())
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

// validHost rejects exactly the hosts with a control, a space, a byte
// outside ASCII, or one of "<>\^`{|}.
func TestValidHost(t *testing.T) {
	bad := func(h string) bool {
		return strings.ContainsFunc(h, func(c rune) bool {
			return c <= ' ' || c >= 0x7f || strings.ContainsRune(`"<>\^`+"`"+`{|}`, c)
		})
	}
	hosts := []string{"", "shop:8080", "[::1]:8080", "xn--bcher-kva.example", "caf\u00e9.example", "\xff", "a\x7fb"}
	for c := 0; c < 256; c++ {
		hosts = append(hosts, "h"+string([]byte{byte(c)})+":80")
	}
	for _, h := range hosts {
		if got, want := validHost(h), !bad(h); got != want {
			t.Errorf("validHost(%q) = %v, want %v", h, got, want)
		}
	}
}
