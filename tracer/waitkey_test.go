package tracer

import "testing"

func TestWaitKey(t *testing.T) {
	for _, tc := range []struct {
		fn, reason string
	}{
		{"example.com/app.(*db).query", "select"},
		{"example.com/app.F[...]", "sync.Mutex.Lock"},
		{"main.f", "chan receive (nil chan)"},
	} {
		key := WaitKey(tc.fn, tc.reason)
		fn, reason, ok := ParseWaitKey(key)
		if !ok || fn != tc.fn || reason != tc.reason {
			t.Errorf("ParseWaitKey(%q) = %q, %q, %v", key, fn, reason, ok)
		}
	}
	for _, key := range []string{"", "1040002|", "1040002|wait|", "[sleep]|", "f[sleep]"} {
		if fn, reason, ok := ParseWaitKey(key); ok {
			t.Errorf("ParseWaitKey(%q) = %q, %q: not a wait's key", key, fn, reason)
		}
	}
}
