package tracer

import (
	"strings"
	"testing"
)

func TestParseTraceParent(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tc, ok := ParseTraceParent(good)
	if !ok {
		t.Fatalf("ParseTraceParent(%q) failed", good)
	}
	wantTrace := [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	wantSpan := [8]byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	if tc.TraceID != wantTrace || tc.SpanID != wantSpan || tc.Flags != 1 {
		t.Errorf("parsed %+v", tc)
	}
	if validTraceParent(good) != good {
		t.Error("validTraceParent dropped a valid header")
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // other version
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // forbidden version
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero span id
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",   // misplaced dash
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   // bad flags
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // trailing data
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e47z6-00f067aa0ba902b7-01",
	} {
		if _, ok := ParseTraceParent(bad); ok {
			t.Errorf("ParseTraceParent(%q) accepted", bad)
		}
		if validTraceParent(bad) != "" {
			t.Errorf("validTraceParent(%q) kept it", bad)
		}
	}
}

func TestReportTraceState(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	long := strings.Repeat("a", 300) + "=1," + strings.Repeat("b", 200) + "=2," + strings.Repeat("c", 100) + "=3"
	for _, c := range []struct{ tp, state, want string }{
		{tp, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"},
		{tp, "", ""},
		{"00-zz-00f067aa0ba902b7-01", "congo=t61rcWkgMzE", ""}, // its traceparent is invalid
		{"", "congo=t61rcWkgMzE", ""},
		{tp, long, strings.Repeat("a", 300) + "=1," + strings.Repeat("b", 200) + "=2"}, // members past 512 bytes left out
		{tp, strings.Repeat("x", 600), ""},
	} {
		if got := reportTraceState(c.tp, c.state); got != c.want {
			t.Errorf("reportTraceState(%q, %.40q) = %.40q, want %.40q", c.tp, c.state, got, c.want)
		}
	}
}
