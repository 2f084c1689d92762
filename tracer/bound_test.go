package tracer

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
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
		{interval(abi.BoundPublish, "nats\t127.0.0.1:4222\t00f067aa0ba902b7"),
			Frame{Kind: FramePublish, Func: "publish nats 127.0.0.1:4222", Bound: &Bound{System: "nats", Host: "127.0.0.1:4222", SpanID: "00f067aa0ba902b7"}}},
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

// A slow call whose function runs the same statement again and again names
// it as its N+1 pattern (repeat), as show names the statement's frame, with
// its kind and text; the statement's arguments are nowhere.
func TestEvilIssueRepeatBound(t *testing.T) {
	const D = beat.DispatchID
	const stmt = "sqlite\tSELECT price FROM items WHERE id = ?"
	// D calls A, which runs the statement 48 times (5 ms each, with a
	// wait inside), then waits 60 ms.
	recs := []analysis.Record{analysis.MakeRecord(true, D, 1000), analysis.MakeRecord(true, idA, 1000)}
	at := uint64(1000)
	for range 48 {
		recs = append(recs, analysis.BoundStart(abi.BoundDB, at, stmt)...)
		recs = append(recs, analysis.ExtStart(analysis.ExtWait, 3, at, 0x10)...)
		recs = append(recs, analysis.ExtEnd(at+5), analysis.ExtEnd(at+5))
		at += 5
	}
	recs = append(recs, analysis.MakeRecord(false, idA, at+60), analysis.MakeRecord(false, D, at+60))
	raw := make([]uint64, len(recs))
	for i, r := range recs {
		raw[i] = uint64(r)
	}
	j := &evilJob{recs: raw, rec: recDispatch, name: "job", kind: beat.KindHTTP,
		cost: time.Duration(at+60-1000) * time.Millisecond, endMs: at + 60,
		repeats: analysis.RepeatRule{MinCalls: 10, MinPercent: 20}}
	is := evilIssue(j, nil)
	rp, ok := is.Content["repeat"].(RepeatFields)
	if !ok {
		t.Fatalf("no repeat in %v", is.Content)
	}
	b := RepeatBound{Kind: FrameDB, Text: "SELECT price FROM items WHERE id = ?", System: "sqlite"}
	if rp.Bound == nil || *rp.Bound != b {
		t.Fatalf("bound %+v, want %+v", rp.Bound, b)
	}
	want := RepeatFields{Func: "db SELECT price FROM items WHERE id = ?", ID: analysis.Ext, ParentID: idA, Calls: 48, Cost: 240, Percent: 80, Bound: rp.Bound}
	if rp != want {
		t.Errorf("repeat %+v, want %+v", rp, want)
	}
	if s := rp.String(); s != "N+1: db SELECT price FROM items WHERE id = ? ×48 under id 1040001, 240 ms (80 %)" {
		t.Errorf("String() = %q", s)
	}
	if k := rp.Key(); k != "db SELECT price FROM items WHERE id = ? under id 1040001" {
		t.Errorf("Key() = %q", k)
	}
	// 48 statements are too few for a rule of 49.
	if rp, ok := evilIssue(&evilJob{recs: raw, rec: recDispatch, name: "job", cost: j.cost, endMs: j.endMs,
		repeats: analysis.RepeatRule{MinCalls: 49, MinPercent: 20}}, nil).Content["repeat"]; ok {
		t.Errorf("49 calls: repeat %+v", rp)
	}
}

// TestRepeatString checks how the N+1 line names a repeated boundary: as
// show names its frame, a long statement cut (on a space, marked "…") and
// whole in the key; and that a call's pattern reads as before.
func TestRepeatString(t *testing.T) {
	for _, tc := range []struct {
		r        RepeatFields
		str, key string
	}{
		{RepeatFields{Func: "example.com/app.(*orderRepo).loadItem", Parent: "example.com/app.(*orderService).checkout", Calls: 48, Cost: 420, Percent: 56},
			"N+1: (*orderRepo).loadItem ×48 under (*orderService).checkout, 420 ms (56 %)",
			"example.com/app.(*orderRepo).loadItem under example.com/app.(*orderService).checkout"},
		{RepeatFields{Func: "db SELECT price FROM items WHERE id = ?", ID: analysis.Ext, Parent: "example.com/app.(*orderRepo).load", Calls: 48, Cost: 420, Percent: 56,
			Bound: &RepeatBound{Kind: FrameDB, Text: "SELECT price FROM items WHERE id = ?", System: "sqlite"}},
			"N+1: db SELECT price FROM items WHERE id = ? ×48 under (*orderRepo).load, 420 ms (56 %)",
			"db SELECT price FROM items WHERE id = ? under example.com/app.(*orderRepo).load"},
		{RepeatFields{Func: "http GET http://127.0.0.1:8080", ID: analysis.Ext, Parent: "DISPATCH", Calls: 12, Cost: 300, Percent: 90,
			Bound: &RepeatBound{Kind: FrameHTTP, Text: "GET http://127.0.0.1:8080"}},
			"N+1: http GET http://127.0.0.1:8080 ×12 under DISPATCH, 300 ms (90 %)",
			"http GET http://127.0.0.1:8080 under DISPATCH"},
		{RepeatFields{ID: analysis.Ext, Parent: "example.com/app.load", Calls: 30, Cost: 300, Percent: 50,
			Bound: &RepeatBound{Kind: FrameDB, Text: "SELECT id, name, price, stock, created_at, updated_at FROM items WHERE category = ? AND price > ? ORDER BY name"}},
			"N+1: db SELECT id, name, price, stock, created_at, updated_at FROM items WHERE… ×30 under load, 300 ms (50 %)",
			"db SELECT id, name, price, stock, created_at, updated_at FROM items WHERE category = ? AND price > ? ORDER BY name under example.com/app.load"},
	} {
		if s := tc.r.String(); s != tc.str {
			t.Errorf("String() = %q, want %q", s, tc.str)
		}
		if k := tc.r.Key(); k != tc.key {
			t.Errorf("Key() = %q, want %q", k, tc.key)
		}
	}
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcdefghi…"},
		{"ab cdefghijk", 10, "ab…"},
		{"ééééééééééé", 5, "éééé…"},
	} {
		if got := cutText(tc.s, tc.n); got != tc.want {
			t.Errorf("cutText(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// Client calls that passed the trace context on each end their text with
// a span id of their own: calls of one host still fold into one frame (the
// first call's span id kept) and still make an N+1 pattern, named without
// the ids.
func TestBoundsWithSpanIDs(t *testing.T) {
	const D = beat.DispatchID
	span := func(i int) string { return fmt.Sprintf("%016x", 0xabc000+i) }
	// D calls A, which sends 12 requests of 5 ms, each with a wait inside
	// (an N+1), then B, which sends 3 of 2 ms with nothing inside (they
	// fold).
	recs := []analysis.Record{analysis.MakeRecord(true, D, 1000), analysis.MakeRecord(true, idA, 1000)}
	at := uint64(1000)
	for i := range 12 {
		recs = append(recs, analysis.BoundStart(abi.BoundHTTP, at, "GET\thttp\tstock:8080\t"+span(i))...)
		recs = append(recs, analysis.ExtStart(analysis.ExtWait, 3, at, 0x10)...)
		recs = append(recs, analysis.ExtEnd(at+5), analysis.ExtEnd(at+5))
		at += 5
	}
	recs = append(recs, analysis.MakeRecord(false, idA, at), analysis.MakeRecord(true, idB, at))
	for i := range 3 {
		recs = append(recs, analysis.BoundStart(abi.BoundRPC, at, "/shop.Stock/Get\tstock:50051\t"+span(100+i))...)
		recs = append(recs, analysis.ExtEnd(at+2))
		at += 2
	}
	recs = append(recs, analysis.MakeRecord(false, idB, at), analysis.MakeRecord(false, D, at))
	raw := make([]uint64, len(recs))
	for i, r := range recs {
		raw[i] = uint64(r)
	}
	j := &evilJob{recs: raw, rec: recDispatch, name: "job", kind: beat.KindHTTP,
		cost: time.Duration(at-1000) * time.Millisecond, endMs: at,
		repeats: analysis.RepeatRule{MinCalls: 10, MinPercent: 20}}
	r := evilIssue(j, nil).Report.(*EvilReport)
	if r.Repeat == nil || r.Repeat.Func != "http GET http://stock:8080" || r.Repeat.Calls != 12 {
		t.Errorf("repeat %+v, want 12 calls of http GET http://stock:8080", r.Repeat)
	}
	var rpc []Frame
	for _, f := range r.Tree.Frames {
		if f.Kind == FrameRPC {
			rpc = append(rpc, f)
		}
	}
	if len(rpc) != 1 || rpc[0].Count != 3 || rpc[0].Func != "rpc /shop.Stock/Get stock:50051" || rpc[0].Bound.SpanID != span(100) || rpc[0].Bound.Host != "stock:50051" {
		t.Errorf("RPC frames %+v, want one of 3 calls with the first one's span id", rpc)
	}
}
