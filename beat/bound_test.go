package beat

import (
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
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
		{abi.BoundRPC, "/shop.Orders/Get", "dns:///orders.internal:443", "", nil, "/shop.Orders/Get\torders.internal:443"},
		{abi.BoundRPC, "/shop.Orders/Get", "passthrough:///127.0.0.1:5?x=1", "", nil, "/shop.Orders/Get\t127.0.0.1:5"},
		{abi.BoundRPC, "/a.B/C", "localhost:50051", "", nil, "/a.B/C\tlocalhost:50051"},
		{99, "x", "", "", nil, ""},
	} {
		var buf boundBuf
		n := hookBound(tc.kind, tc.a, tc.b, tc.c, tc.v, &buf)
		if got := string(buf[:n]); got != tc.want {
			t.Errorf("hookBound(%d, %q, %q, %q) = %q, want %q", tc.kind, tc.a, tc.b, tc.c, got, tc.want)
		}
	}
	// A long statement of multi-byte characters is cut on a character's
	// boundary to fit the record.
	var buf boundBuf
	n := hookBound(abi.BoundDB, "SELECT "+strings.Repeat("é", 300), "", "", nil, &buf)
	if n > len(buf) || n < len(buf)-1 || strings.ToValidUTF8(string(buf[:n]), "!") != string(buf[:n]) {
		t.Errorf("long statement: %d bytes %q", n, buf[:n])
	}
	if got := abi.UnpackBoundText(abi.PackBoundText(string(buf[:n]))); got != string(buf[:n]) {
		t.Errorf("pack/unpack: %q", got)
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
