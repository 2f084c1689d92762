package beat

import (
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/tracecontext"
)

type fakeSQLiteDriver struct{}

func TestHookBound(t *testing.T) {
	for _, tc := range []struct {
		kind    int
		a, b, c string
		v       any
		want    string
	}{
		{abi.BoundDB, "SELECT * FROM t WHERE pw = 'hunter2' AND id = 7", "", "", nil, "\tSELECT * FROM t WHERE pw = ? AND id = ?"},
		{abi.BoundDB, "BEGIN", "", "", &fakeSQLiteDriver{}, "\tBEGIN"},
		{abi.BoundHTTP, "", "https", "api.example.com:8443", nil, "GET\thttps\tapi.example.com:8443"},
		{abi.BoundHTTP, "POST", "http", "h\tost", nil, "POST\thttp\th ost"},
		{abi.BoundHTTP, "GET", "http", "api:80", true, "GET\thttp\tapi:80"}, // no dispatch: nothing to pass on
		{abi.BoundRPC, "/shop.Orders/Get", "dns:///orders.internal:443", "", nil, "/shop.Orders/Get\torders.internal:443"},
		{abi.BoundRPC, "/shop.Orders/Get", "passthrough:///127.0.0.1:5?x=1", "", nil, "/shop.Orders/Get\t127.0.0.1:5"},
		{abi.BoundRPC, "/a.B/C", "localhost:50051", "", nil, "/a.B/C\tlocalhost:50051"},
		{abi.BoundRPC, "/a.B/C", "localhost:50051", "", true, "/a.B/C\tlocalhost:50051"}, // no dispatch
		{abi.BoundPublish, "nats", "127.0.0.1:4222", "", nil, "nats\t127.0.0.1:4222"},
		{abi.BoundPublish, "nats", "nats.internal:4222", "", true, "nats\tnats.internal:4222"}, // no dispatch
		{99, "x", "", "", nil, ""},
	} {
		var buf boundBuf
		n, out := hookBound(tc.kind, tc.a, tc.b, tc.c, tc.v, &buf)
		if out != "" {
			t.Errorf("hookBound(%d, %q, %q, %q) passes %q on while the recorder is stopped", tc.kind, tc.a, tc.b, tc.c, out)
		}
		if got := string(buf[:n]); got != tc.want {
			t.Errorf("hookBound(%d, %q, %q, %q) = %q, want %q", tc.kind, tc.a, tc.b, tc.c, got, tc.want)
		}
	}
	// A long statement of multi-byte characters is cut on a character's
	// boundary to fit the record.
	var buf boundBuf
	n, _ := hookBound(abi.BoundDB, "SELECT "+strings.Repeat("é", 300), "", "", nil, &buf)
	if n > len(buf) || n < len(buf)-1 || strings.ToValidUTF8(string(buf[:n]), "!") != string(buf[:n]) {
		t.Errorf("long statement: %d bytes %q", n, buf[:n])
	}
	if got := abi.UnpackBoundText(abi.PackBoundText(string(buf[:n]))); got != string(buf[:n]) {
		t.Errorf("pack/unpack: %q", got)
	}
}

// A client call that passes a trace context on ends its text with the id
// of its span, which the traceparent it returns names, and a long host
// gives way to it.
func TestAppendLastPropagates(t *testing.T) {
	tc := tracecontext.Context{
		TraceID: [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  [8]byte{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		Flags:   1,
	}
	var buf boundBuf
	text, out := appendLast(append(buf[:0], "GET\thttps\t"...), len(buf), "api:8443", tc)
	if string(text) != "GET\thttps\tapi:8443\t00f067aa0ba902b7" {
		t.Errorf("text %q", text)
	}
	if out != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("traceparent %q", out)
	}
	long := strings.Repeat("h", 300)
	text, out = appendLast(append(buf[:0], "GET\thttp\t"...), len(buf), long, tc)
	if len(text) > len(buf) || !strings.HasSuffix(string(text), "h\t00f067aa0ba902b7") || out == "" {
		t.Errorf("long host: %d bytes %q, traceparent %q", len(text), text, out)
	}
	// No trace: the text of a call that passes nothing on.
	text, out = appendLast(append(buf[:0], "GET\thttp\t"...), len(buf), "api", tracecontext.Context{})
	if string(text) != "GET\thttp\tapi" || out != "" {
		t.Errorf("no trace: %q, %q", text, out)
	}
}

// A dispatch's trace is the caller's when its request brought a valid
// traceparent, else one of its own, fixed by the first to ask.
func TestDispatchTrace(t *testing.T) {
	d := &Dispatch{}
	d.SetTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	if got := d.TraceID(); got != "" {
		t.Errorf("TraceID of a dispatch in its caller's trace = %q", got)
	}
	if tr := d.trace(); tr.flags != 0 || tr.id[0] != 0x4b || tr.own {
		t.Errorf("caller's trace %+v", tr)
	}
	own := &Dispatch{}
	own.SetTraceParent("00-00000000000000000000000000000000-00f067aa0ba902b7-01") // invalid
	id := own.TraceID()
	if _, ok := tracecontext.ParseTraceID(id); !ok {
		t.Fatalf("own trace id %q", id)
	}
	if again := own.TraceID(); again != id {
		t.Errorf("trace id changed: %q, then %q", id, again)
	}
	if tr := own.trace(); tr.flags != tracecontext.FlagSampled {
		t.Errorf("own trace flags %x", tr.flags)
	}
	if other := (&Dispatch{}).TraceID(); other == id {
		t.Errorf("two dispatches share trace id %q", id)
	}
}

func TestDBSystem(t *testing.T) {
	if got := dbSystem(&fakeSQLiteDriver{}); got != "" {
		t.Errorf("dbSystem of a test type = %q", got)
	}
	if got := dbSystem(nil); got != "" {
		t.Errorf("dbSystem(nil) = %q", got)
	}
}
