package abi

import "testing"

// A client call's text splits into the text that names the call and the
// span id it passed on; other boundaries' texts are names whole.
func TestSplitBoundSpan(t *testing.T) {
	for _, tc := range []struct {
		kind             uint8
		text, name, span string
	}{
		{BoundHTTP, "GET\thttp\tstock:8080\t00f067aa0ba902b7", "GET\thttp\tstock:8080", "00f067aa0ba902b7"},
		{BoundHTTP, "GET\thttp\tstock:8080", "GET\thttp\tstock:8080", ""},
		{BoundHTTP, "GET", "GET", ""},
		{BoundRPC, "/shop.Stock/Get\tstock:50051\t00f067aa0ba902b7", "/shop.Stock/Get\tstock:50051", "00f067aa0ba902b7"},
		{BoundRPC, "/shop.Stock/Get\tstock:50051", "/shop.Stock/Get\tstock:50051", ""},
		{BoundPublish, "nats\t127.0.0.1:4222\t00f067aa0ba902b7", "nats\t127.0.0.1:4222", "00f067aa0ba902b7"},
		{BoundPublish, "nats\t127.0.0.1:4222", "nats\t127.0.0.1:4222", ""},
		{BoundDB, "sqlite\tSELECT a\tb", "sqlite\tSELECT a\tb", ""},
	} {
		name, span := SplitBoundSpan(tc.kind, tc.text)
		if name != tc.name || span != tc.span {
			t.Errorf("SplitBoundSpan(%d, %q) = %q, %q; want %q, %q", tc.kind, tc.text, name, span, tc.name, tc.span)
		}
	}
}
