package tracer

import (
	"reflect"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// TestBoundFrame checks that a boundary's record names its frame and
// fills its attributes, whatever the text holds.
func TestBoundFrame(t *testing.T) {
	interval := func(kind uint8, text string) *analysis.Interval {
		return &analysis.Interval{Kind: analysis.ExtBound, Reason: kind, PCs: abi.PackBoundText(text)}
	}
	for _, tc := range []struct {
		x    *analysis.Interval
		want Frame
	}{
		{interval(abi.BoundDB, "sqlite\tSELECT * FROM t WHERE id = ?"),
			Frame{Kind: FrameDB, Func: "db SELECT * FROM t WHERE id = ?", Bound: &Bound{System: "sqlite", Statement: "SELECT * FROM t WHERE id = ?"}}},
		{interval(abi.BoundDB, "\tBEGIN"),
			Frame{Kind: FrameDB, Func: "db BEGIN", Bound: &Bound{Statement: "BEGIN"}}},
		{interval(abi.BoundHTTP, "GET\thttps\tapi.example.com:8443"),
			Frame{Kind: FrameHTTP, Func: "http GET https://api.example.com:8443", Bound: &Bound{Method: "GET", Scheme: "https", Host: "api.example.com:8443"}}},
		{interval(abi.BoundRPC, "/shop.Orders/Get\torders:50051"),
			Frame{Kind: FrameRPC, Func: "rpc /shop.Orders/Get orders:50051", Bound: &Bound{Method: "/shop.Orders/Get", Host: "orders:50051"}}},
		// Cut short (a copy that ended inside the payload): what there is.
		{interval(abi.BoundHTTP, "GET"),
			Frame{Kind: FrameHTTP, Func: "http GET ://", Bound: &Bound{Method: "GET"}}},
		// A kind this version does not know is a wait of no known reason.
		{interval(9, "x"), Frame{Kind: FrameWait, Func: "bound", Reason: "bound 9"}},
	} {
		if got := boundFrame(tc.x); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("boundFrame(%d, %q) = %+v (bound %+v), want %+v", tc.x.Reason, tc.x.Text(), got, got.Bound, tc.want)
		}
	}
}
