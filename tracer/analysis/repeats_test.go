package analysis

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

// loop writes the records of n calls of child by a loop in which each
// call of child calls grandchild (so that the calls do not fold into one
// item), each call lasting ms, from t0; it returns the time after them.
func loop(b *strings.Builder, child, grandchild uint32, n int, ms, t0 int) int {
	c, g := strconv.Itoa(int(child)), strconv.Itoa(int(grandchild))
	for range n {
		b.WriteString("i(" + c + "@" + strconv.Itoa(t0) + ") i(" + g + "@" + strconv.Itoa(t0) + ") o(" + g + "@" + strconv.Itoa(t0+ms) + ") o(" + c + "@" + strconv.Itoa(t0+ms) + ") ")
		t0 += ms
	}
	return t0
}

func TestRepeats(t *testing.T) {
	rule := RepeatRule{MinCalls: 10, MinPercent: 20}
	// D calls 1, which calls 5 48 times (each 10 ms, each calling 6) and 7
	// 12 times (1 ms each: under 20 %), then 8 9 times (300 ms: too few).
	var b strings.Builder
	b.WriteString("i(D@0) i(1@0) ")
	t0 := loop(&b, 5, 6, 48, 10, 0)
	t0 = loop(&b, 7, 6, 12, 1, t0)
	t0 = loop(&b, 8, 6, 9, 34, t0)
	end := strconv.Itoa(t0 + 10)
	b.WriteString("o(1@" + end + ") o(D@" + end + ")")
	r := AnalyzeRepeats(recs(t, b.String()), Strict, 0, 0, rule)
	if r.Cost != int64(t0+10) {
		t.Fatalf("cost %d, want %d", r.Cost, t0+10)
	}
	// 6 is called 48 times by 5, once by each call: not an N+1.
	want := []Repeat{{Parent: 1, ID: 5, Calls: 48, Cost: 480}}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("repeats %+v, want %+v", r.Repeats, want)
	}
	// The tree is trimmed to MaxStackLines, the repeats are found in all
	// of it.
	if len(r.Items) > MaxStackLines {
		t.Errorf("%d items", len(r.Items))
	}
	// Analyze finds none; a rule of 9 calls and 10 % finds 8 too.
	if r := Analyze(recs(t, b.String()), Strict, 0, 0); r.Repeats != nil {
		t.Errorf("Analyze: repeats %+v", r.Repeats)
	}
	r = AnalyzeRepeats(recs(t, b.String()), Strict, 0, 0, RepeatRule{MinCalls: 9, MinPercent: 10})
	want = []Repeat{{Parent: 1, ID: 5, Calls: 48, Cost: 480}, {Parent: 1, ID: 8, Calls: 9, Cost: 306}}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("9 calls, 10 %%: repeats %+v, want %+v", r.Repeats, want)
	}
}

func TestRepeatsPerParentCall(t *testing.T) {
	// 1 is called 5 times by D, and calls 5 twice each time: 10 calls of
	// 5 by 1 in the dispatch, but 2 by each call of 1; nothing is
	// flagged. A leaf called in a row folds into one item with its count.
	var b strings.Builder
	b.WriteString("i(D@0) ")
	t0 := 0
	for range 5 {
		b.WriteString("i(1@" + strconv.Itoa(t0) + ") i(5@" + strconv.Itoa(t0) + ") o(5@" + strconv.Itoa(t0+20) + ") i(5@" + strconv.Itoa(t0+20) + ") o(5@" + strconv.Itoa(t0+40) + ") o(1@" + strconv.Itoa(t0+40) + ") ")
		t0 += 40
	}
	b.WriteString("o(D@" + strconv.Itoa(t0) + ")")
	r := AnalyzeRepeats(recs(t, b.String()), Strict, 0, 0, RepeatRule{MinCalls: 10, MinPercent: 20})
	if len(r.Repeats) != 0 {
		t.Errorf("10 calls: repeats %+v", r.Repeats)
	}
	r = AnalyzeRepeats(recs(t, b.String()), Strict, 0, 0, RepeatRule{MinCalls: 5, MinPercent: 20})
	want := []Repeat{{Parent: Dispatch, ID: 1, Calls: 5, Cost: 200}}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("5 calls: repeats %+v, want %+v", r.Repeats, want)
	}
}

func TestRepeatsRecursion(t *testing.T) {
	// 1 calls itself 12 deep: not an N+1.
	var b strings.Builder
	b.WriteString("i(D@0) ")
	for i := range 12 {
		b.WriteString("i(1@" + strconv.Itoa(i) + ") ")
	}
	for i := 11; i >= 0; i-- {
		b.WriteString("o(1@" + strconv.Itoa(100-i) + ") ")
	}
	b.WriteString("o(D@100)")
	r := AnalyzeRepeats(recs(t, b.String()), Strict, 0, 0, RepeatRule{MinCalls: 10, MinPercent: 20})
	if len(r.Repeats) != 0 {
		t.Errorf("repeats %+v", r.Repeats)
	}
}

// bounds appends the records of n boundaries of kind with text, each
// lasting ms from t0 with a wait inside (so that they do not fold into one
// item), and returns them with the time after them.
func bounds(rs []Record, kind uint8, text string, n int, ms, t0 uint64) ([]Record, uint64) {
	for range n {
		rs = append(rs, BoundStart(kind, t0, text)...)
		rs = append(rs, ExtStart(ExtWait, 3, t0, 0x10)...)
		rs = append(rs, ExtEnd(t0+ms), ExtEnd(t0+ms))
		t0 += ms
	}
	return rs, t0
}

const (
	selPrice = "sqlite\tSELECT price FROM items WHERE id = ?"
	selName  = "sqlite\tSELECT name FROM items WHERE id = ?"
)

func TestRepeatsBounds(t *testing.T) {
	rule := RepeatRule{MinCalls: 10, MinPercent: 20}
	// D calls 1, which runs one statement 48 times (10 ms each), another
	// 12 times (1 ms each: under 20 %), then makes 9 HTTP requests to one
	// host (34 ms each: too few).
	rs := []Record{MakeRecord(true, Dispatch, 0), MakeRecord(true, 1, 0)}
	rs, t0 := bounds(rs, abi.BoundDB, selPrice, 48, 10, 0)
	rs, t0 = bounds(rs, abi.BoundDB, selName, 12, 1, t0)
	rs, t0 = bounds(rs, abi.BoundHTTP, "GET\thttp\tapi.example.com", 9, 34, t0)
	rs = append(rs, MakeRecord(false, 1, t0+10), MakeRecord(false, Dispatch, t0+10))
	r := AnalyzeRepeats(rs, Strict, 0, 0, rule)
	want := []Repeat{{Parent: 1, ID: Ext, Calls: 48, Cost: 480, Bound: abi.BoundDB, Text: selPrice}}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("repeats %+v, want %+v", r.Repeats, want)
	}
	// A rule of 9 calls and 10 % finds the requests too, costliest first.
	r = AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 9, MinPercent: 10})
	want = []Repeat{
		{Parent: 1, ID: Ext, Calls: 48, Cost: 480, Bound: abi.BoundDB, Text: selPrice},
		{Parent: 1, ID: Ext, Calls: 9, Cost: 306, Bound: abi.BoundHTTP, Text: "GET\thttp\tapi.example.com"},
	}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("9 calls, 10 %%: repeats %+v, want %+v", r.Repeats, want)
	}
	// Analyze finds none.
	if r := Analyze(rs, Strict, 0, 0); r.Repeats != nil {
		t.Errorf("Analyze: repeats %+v", r.Repeats)
	}
}

func TestRepeatsBoundsFewer(t *testing.T) {
	// 9 slow statements, all of the dispatch's time: too few.
	rs := []Record{MakeRecord(true, Dispatch, 0), MakeRecord(true, 1, 0)}
	rs, t0 := bounds(rs, abi.BoundDB, selPrice, 9, 100, 0)
	rs = append(rs, MakeRecord(false, 1, t0), MakeRecord(false, Dispatch, t0))
	if r := AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 10, MinPercent: 20}); len(r.Repeats) != 0 {
		t.Errorf("repeats %+v", r.Repeats)
	}
}

func TestRepeatsBoundsDifferent(t *testing.T) {
	// 1 runs two statements 6 times each, alternating, and an HTTP
	// request whose text is a statement's, of another kind: 13 boundaries,
	// but no kind and text 10 times.
	rs := []Record{MakeRecord(true, Dispatch, 0), MakeRecord(true, 1, 0)}
	t0 := uint64(0)
	for range 6 {
		rs, t0 = bounds(rs, abi.BoundDB, selPrice, 1, 50, t0)
		rs, t0 = bounds(rs, abi.BoundDB, selName, 1, 50, t0)
	}
	rs, t0 = bounds(rs, abi.BoundHTTP, selPrice, 1, 50, t0)
	rs = append(rs, MakeRecord(false, 1, t0), MakeRecord(false, Dispatch, t0))
	if r := AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 10, MinPercent: 20}); len(r.Repeats) != 0 {
		t.Errorf("repeats %+v", r.Repeats)
	}
	// 6 of each are, with a rule of 6.
	r := AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 6, MinPercent: 20})
	want := []Repeat{
		{Parent: 1, ID: Ext, Calls: 6, Cost: 300, Bound: abi.BoundDB, Text: selPrice},
		{Parent: 1, ID: Ext, Calls: 6, Cost: 300, Bound: abi.BoundDB, Text: selName},
	}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("6 calls: repeats %+v, want %+v", r.Repeats, want)
	}
}

func TestRepeatsBoundsNested(t *testing.T) {
	// 1 makes 10 HTTP requests; inside each, the client runs 12
	// statements, 3 of them through function 8 (a driver's, say). The
	// requests are an N+1 (10 of them, not 10 + 120); the statements
	// inside them are part of them and no N+1 of their own.
	const req = "POST\thttp\tapi.example.com"
	rs := []Record{MakeRecord(true, Dispatch, 0), MakeRecord(true, 1, 0)}
	t0 := uint64(0)
	for range 10 {
		rs = append(rs, BoundStart(abi.BoundHTTP, t0, req)...)
		rs, t0 = bounds(rs, abi.BoundDB, selPrice, 9, 10, t0)
		rs = append(rs, MakeRecord(true, 8, t0))
		rs, t0 = bounds(rs, abi.BoundDB, selPrice, 3, 10, t0)
		rs = append(rs, MakeRecord(false, 8, t0), ExtEnd(t0))
	}
	rs = append(rs, MakeRecord(false, 1, t0), MakeRecord(false, Dispatch, t0))
	r := AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 3, MinPercent: 1})
	want := []Repeat{{Parent: 1, ID: Ext, Calls: 10, Cost: 1200, Bound: abi.BoundHTTP, Text: req}}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("repeats %+v, want %+v", r.Repeats, want)
	}
}

func TestRepeatsBoundsPerParentCall(t *testing.T) {
	// 1 calls 2 five times, which runs a statement twice each time: 10
	// statements by 2 in the dispatch, but 2 by each call. The dispatch
	// itself then runs 10 statements (leaves: they fold into one item):
	// its own N+1, under DISPATCH.
	rs := []Record{MakeRecord(true, Dispatch, 0), MakeRecord(true, 1, 0)}
	t0 := uint64(0)
	for range 5 {
		rs = append(rs, MakeRecord(true, 2, t0))
		rs, t0 = bounds(rs, abi.BoundDB, selPrice, 2, 20, t0)
		rs = append(rs, MakeRecord(false, 2, t0))
	}
	rs = append(rs, MakeRecord(false, 1, t0))
	for range 10 {
		rs = append(rs, BoundStart(abi.BoundDB, t0, selName)...)
		rs = append(rs, ExtEnd(t0+10))
		t0 += 10
	}
	rs = append(rs, MakeRecord(false, Dispatch, t0))
	r := AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 10, MinPercent: 20})
	want := []Repeat{{Parent: Dispatch, ID: Ext, Calls: 10, Cost: 100, Bound: abi.BoundDB, Text: selName}}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("repeats %+v, want %+v", r.Repeats, want)
	}
}

func TestRepeatsBoundsAndCalls(t *testing.T) {
	// 1 calls 5 12 times (10 ms each), and runs a statement 20 times (20
	// ms each): both are N+1 patterns, the statements' first.
	var b strings.Builder
	b.WriteString("i(D@0) i(1@0) ")
	t0 := loop(&b, 5, 6, 12, 10, 0)
	rs := recs(t, b.String())
	rs, end := bounds(rs, abi.BoundDB, selPrice, 20, 20, uint64(t0))
	rs = append(rs, MakeRecord(false, 1, end), MakeRecord(false, Dispatch, end))
	r := AnalyzeRepeats(rs, Strict, 0, 0, RepeatRule{MinCalls: 10, MinPercent: 20})
	want := []Repeat{
		{Parent: 1, ID: Ext, Calls: 20, Cost: 400, Bound: abi.BoundDB, Text: selPrice},
		{Parent: 1, ID: 5, Calls: 12, Cost: 120},
	}
	if !slices.Equal(r.Repeats, want) {
		t.Errorf("repeats %+v, want %+v", r.Repeats, want)
	}
}
