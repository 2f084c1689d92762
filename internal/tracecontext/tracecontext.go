// Package tracecontext reads and writes W3C Trace Context traceparent
// headers (version 00): the one definition that the recorder, when it
// passes a dispatch's trace context on to a service the program calls, and
// the tracers and the OTLP export, when they place a report in a trace,
// share.
package tracecontext

import "encoding/hex"

// Len is the length of a version-00 traceparent:
// "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
const Len = 55

// FlagSampled is the trace flag "sampled": the caller may have recorded
// its part of the trace.
const FlagSampled = 0x01

// Context is a parsed traceparent: a trace id, the id of the span that is
// the parent of the receiver's spans, and the trace flags.
type Context struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// Parse parses a traceparent of version 00 in lower-case hex, exactly Len
// characters. It returns false for anything else, including an all-zero
// trace or span id (invalid per the W3C Trace Context recommendation).
func Parse(s string) (Context, bool) {
	var c Context
	if len(s) != Len || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return c, false
	}
	var fl [1]byte
	if !hexInto(c.TraceID[:], s[3:35]) || !hexInto(c.SpanID[:], s[36:52]) || !hexInto(fl[:], s[53:55]) {
		return c, false
	}
	c.Flags = fl[0]
	if c.TraceID == ([16]byte{}) || c.SpanID == ([8]byte{}) {
		return c, false
	}
	return c, true
}

// String formats c as a version-00 traceparent.
func (c Context) String() string {
	var b [Len]byte
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], c.TraceID[:])
	b[35] = '-'
	hex.Encode(b[36:52], c.SpanID[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{c.Flags})
	return string(b[:])
}

// ParseTraceID parses a trace id of 32 lower-case hex digits, not all zero.
func ParseTraceID(s string) ([16]byte, bool) {
	var id [16]byte
	ok := len(s) == 32 && hexInto(id[:], s) && id != [16]byte{}
	return id, ok
}

// ParseSpanID parses a span id of 16 lower-case hex digits, not all zero.
func ParseSpanID(s string) ([8]byte, bool) {
	var id [8]byte
	ok := len(s) == 16 && hexInto(id[:], s) && id != [8]byte{}
	return id, ok
}

// hexInto decodes lower-case hex s into dst (len(s) == 2*len(dst)).
func hexInto(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
