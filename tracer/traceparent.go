package tracer

// KeyTraceParent is the content key of the W3C trace context (traceparent
// header) of the request a dispatch served. A report carries it only when
// the request had a valid one; it is the only request data a report holds,
// so that an exported report joins the caller's distributed trace.
const KeyTraceParent = "traceparent"

// TraceContext is a parsed W3C traceparent: the caller's trace id and the
// id of the caller's span (the parent of the spans Matrix exports).
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// ParseTraceParent parses a W3C traceparent header of version 00:
// "00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>", lower-case
// hex, exactly 55 characters. It returns false for anything else,
// including an all-zero trace or span id (invalid per the W3C Trace
// Context recommendation).
func ParseTraceParent(s string) (TraceContext, bool) {
	var tc TraceContext
	if len(s) != 55 || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return tc, false
	}
	if !hexInto(tc.TraceID[:], s[3:35]) || !hexInto(tc.SpanID[:], s[36:52]) {
		return tc, false
	}
	var fl [1]byte
	if !hexInto(fl[:], s[53:55]) {
		return tc, false
	}
	tc.Flags = fl[0]
	if tc.TraceID == ([16]byte{}) || tc.SpanID == ([8]byte{}) {
		return tc, false
	}
	return tc, true
}

// validTraceParent returns tp if it is a valid traceparent, else "".
func validTraceParent(tp string) string {
	if _, ok := ParseTraceParent(tp); ok {
		return tp
	}
	return ""
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
