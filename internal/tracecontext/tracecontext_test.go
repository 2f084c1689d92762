package tracecontext

import "testing"

func TestStringParses(t *testing.T) {
	c := Context{TraceID: [16]byte{0x4b, 0xf9, 15: 0x36}, SpanID: [8]byte{0, 0xf0, 7: 0xb7}, Flags: FlagSampled}
	s := c.String()
	if s != "00-4bf90000000000000000000000000036-00f00000000000b7-01" {
		t.Errorf("String() = %q", s)
	}
	if got, ok := Parse(s); !ok || got != c {
		t.Errorf("Parse(%q) = %+v, %v", s, got, ok)
	}
}

func TestParseIDs(t *testing.T) {
	if id, ok := ParseTraceID("4bf92f3577b34da6a3ce929d0e0e4736"); !ok || id[0] != 0x4b || id[15] != 0x36 {
		t.Errorf("ParseTraceID: %x %v", id, ok)
	}
	if id, ok := ParseSpanID("00f067aa0ba902b7"); !ok || id[1] != 0xf0 {
		t.Errorf("ParseSpanID: %x %v", id, ok)
	}
	for _, bad := range []string{"", "00000000000000000000000000000000", "4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f3577b34da6a3ce929d0e0e473"} {
		if _, ok := ParseTraceID(bad); ok {
			t.Errorf("ParseTraceID(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "0000000000000000", "00f067aa0ba902b", "00f067aa0ba902bz"} {
		if _, ok := ParseSpanID(bad); ok {
			t.Errorf("ParseSpanID(%q) accepted", bad)
		}
	}
}
