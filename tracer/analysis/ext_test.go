package analysis

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

// events parses the text notation (ParseEvents) or fails the test.
func events(t testing.TB, s string) []Record {
	t.Helper()
	rs, err := ParseEvents(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestWaitTree(t *testing.T) {
	// Function 7 sleeps 350 ms (reason 3), waits 2 ms for a CPU, and
	// makes a 100 ms call of function 8.
	rs := events(t, `
i D 0
i 7 0
w 3 100 0x10 0x20
e 450
r 450
e 452
i 8 452
o 8 552
o 7 552
o D 552
`)
	res := Analyze(rs, Strict, 0, 552)
	want := []Item{{0, Dispatch, 1, 552}, {1, 7, 1, 552}, {2, Ext, 1, 350}, {2, Ext, 1, 2}, {2, 8, 1, 100}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("items %v, want %v", res.Items, want)
	}
	wantExt := []*Interval{nil, nil, {Kind: ExtWait, Reason: 3, PCs: []uint64{0x10, 0x20}}, {Kind: ExtRunnable}, nil}
	if !reflect.DeepEqual(res.Exts, wantExt) {
		t.Fatalf("intervals %v, want %v", res.Exts, wantExt)
	}
	// The wait has the largest self time: the key names it under 7.
	if res.Key != "7|wait:3|" || res.KeyIndex != 2 {
		t.Errorf("key %q (index %d), want 7|wait:3| (2)", res.Key, res.KeyIndex)
	}
	if !strings.Contains(res.Stack, "2,1048575,1,350\n") {
		t.Errorf("stack %q lacks the wait line", res.Stack)
	}
}

func TestWaitFolding(t *testing.T) {
	// Three sleeps at the same place fold (the moments runnable in
	// between make no item); a sleep elsewhere does not.
	rs := events(t, `
i D 0
i 7 0
w 3 0 0x10
e 100
r 100
e 100
w 3 100 0x10
e 200
w 3 200 0x10
e 300
w 3 300 0x30
e 350
s 350
e 360
o 7 360
o D 360
`)
	items, exts := ItemsExt(rs, Strict, 0)
	want := []Item{{0, Dispatch, 1, 360}, {1, 7, 1, 360}, {2, Ext, 3, 300}, {2, Ext, 1, 50}, {2, Ext, 1, 10}}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("items %v, want %v", items, want)
	}
	if exts[3].PCs[0] != 0x30 || exts[4].Kind != ExtSyscall || exts[4].KindName() != "syscall" {
		t.Errorf("intervals %v %v", exts[3], exts[4])
	}
}

func TestWaitFoldingAcrossRunnable(t *testing.T) {
	// A loop that sleeps and is runnable for a moment after each wake-up:
	// one item for the sleeps, one for the runnable time.
	rs := events(t, `
i D 0
i 7 0
w 3 0 0x10
e 5
r 5
e 6
w 3 6 0x10
e 11
r 11
e 12
w 3 12 0x10
e 17
o 7 17
o D 17
`)
	items, exts := ItemsExt(rs, Strict, 0)
	want := []Item{{0, Dispatch, 1, 17}, {1, 7, 1, 17}, {2, Ext, 3, 15}, {2, Ext, 2, 2}}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("items %v, want %v", items, want)
	}
	if exts[2].Kind != ExtWait || exts[3].Kind != ExtRunnable {
		t.Errorf("intervals %v %v", exts[2], exts[3])
	}
}

func TestMomentaryWaitsMakeNoItem(t *testing.T) {
	// A GC assist of no measurable time before a long sleep: only the
	// sleep is an item. Two waits of a moment that fold to a millisecond
	// are one.
	rs := events(t, `
i D 0
i 7 0
w 9 0
e 0
w 3 0 0x10
e 800
w 4 800 0x20
e 800
w 4 800 0x20
e 801
o 7 801
o D 801
`)
	items, exts := ItemsExt(rs, Strict, 0)
	want := []Item{{0, Dispatch, 1, 801}, {1, 7, 1, 801}, {2, Ext, 1, 800}, {2, Ext, 2, 1}}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("items %v, want %v", items, want)
	}
	if exts[2].Reason != 3 || exts[3].Reason != 4 {
		t.Errorf("intervals %v %v", exts[2], exts[3])
	}
	// With only a momentary wait, the tree is the calls', keyed as
	// without waits.
	rs = events(t, `
i D 0
i 7 0
w 9 0
e 0
o 7 300
o D 300
`)
	if res := Analyze(rs, Strict, 0, 300); len(res.Items) != 2 || res.Exts != nil || res.Key != "7|" {
		t.Errorf("items %v intervals %v key %q", res.Items, res.Exts, res.Key)
	}
}

func TestOpenWaitClosedAtEnd(t *testing.T) {
	// An ANR snapshot: function 5 has been waiting on a lock (reason 9)
	// since 10 ms; the watchdog looks at 6010 ms.
	rs := events(t, "i D 0\ni 5 0\nw 9 10 0x40\n")
	res := Analyze(rs, Strict, 6010, 6010)
	want := []Item{{0, Dispatch, 1, 6010}, {1, 5, 1, 6010}, {2, Ext, 1, 6000}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("items %v, want %v", res.Items, want)
	}
	if res.Key != "5|wait:9|" {
		t.Errorf("key %q", res.Key)
	}
}

// TestTruncatedCopies analyses every prefix of a buffer with waits (a
// watchdog copies a prefix, possibly ending inside a payload): payload
// words never become items, and nothing is negative.
func TestTruncatedCopies(t *testing.T) {
	rs := events(t, `
i D 0
i 7 0
w 3 100 0xffffffffffffffff 0x8000000000000001 0x7ff0000000000010
e 450
r 450
e 452
s 460
e 470
o 7 480
o D 480
`)
	for n := range len(rs) + 1 {
		res := Analyze(rs[:n], Strict, 500, 0)
		for i, it := range res.Items {
			if it.ID != Dispatch && it.ID != 7 && it.ID != Ext || it.Cost < 0 {
				t.Fatalf("prefix %d: item %d is %v", n, i, it)
			}
			if it.ID == Ext && (res.Exts == nil || res.Exts[i] == nil) {
				t.Fatalf("prefix %d: item %d has no interval", n, i)
			}
		}
	}
}

func TestParseExtEvents(t *testing.T) {
	rs := events(t, "w 3 100 0x10\ne 200\ns 300\ne 310\nr 310\ne 311\n")
	want := append(append(append(ExtStart(ExtWait, 3, 100, 0x10), ExtEnd(200)), ExtStart(ExtSyscall, 0, 300)...), ExtEnd(310))
	want = append(append(want, ExtStart(ExtRunnable, 0, 310)...), ExtEnd(311))
	if !reflect.DeepEqual(rs, want) {
		t.Fatalf("records %v, want %v", rs, want)
	}
	for _, bad := range []string{"w 3\n", "w 300 1\n", "s\n", "e 1 2\n", "w 1 2 16\n", "w 1 2 0x0\n", "r x\n"} {
		if _, err := ParseEvents(strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), "line 1: ") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestGoroutineTree(t *testing.T) {
	// Function 7 starts two goroutines and returns after 10 ms; the
	// dispatch waits for them (reason 9) until 320. Goroutine 1 runs
	// function 8 for 300 ms, goroutine 2 blocks for 200 ms in function 9
	// (its records as a reader splices them in, after the start's
	// payload).
	rs := events(t, `
i D 0
i 7 0
g 2 1 0x100
i 8 3
o 8 303
e 304
g 5 2 0x100
i 9 5
w 4 6 0x10
e 206
o 9 206
e 206
o 7 10
w 9 10
e 320
o D 320
`)
	res := Analyze(rs, Strict, 0, 320)
	want := []Item{{0, Dispatch, 1, 320}, {1, 7, 1, 10}, {2, Ext, 1, 302}, {3, 8, 1, 300}, {2, Ext, 1, 201}, {3, 9, 1, 201}, {4, Ext, 1, 200}, {1, Ext, 1, 310}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("items %v, want %v", res.Items, want)
	}
	g1 := &Interval{Kind: ExtGo, PCs: []uint64{0x100, 1}}
	if !reflect.DeepEqual(res.Exts[2], g1) || res.Exts[4].Kind != ExtGo || res.Exts[7].Kind != ExtWait {
		t.Fatalf("intervals %v", res.Exts)
	}
	if res.Starts[2] != 2 || res.Starts[4] != 5 {
		t.Errorf("goroutines start at %d and %d ms, want 2 and 5", res.Starts[2], res.Starts[4])
	}
	// The goroutines' time is not function 7's: the dispatch's wait has
	// the largest self time (310 ms), before goroutine 1's call of 8
	// (300 ms).
	if res.Key != "1048574|wait:9|" || res.KeyIndex != 7 {
		t.Errorf("key %q (index %d), want 1048574|wait:9| (7)", res.Key, res.KeyIndex)
	}
	// Even a goroutine's longer wait does not take the key from the
	// dispatch's own goroutine: here goroutine 1 sleeps 400 ms (reason 4)
	// while the dispatch waits 390 ms for it (reason 9).
	rs = events(t, `
i D 0
g 1 1 0x100
w 4 1 0x10
e 401
e 401
w 9 10
e 400
o D 400
`)
	res = Analyze(rs, Strict, 0, 400)
	if res.Key != "1048574|wait:9|" {
		t.Errorf("key %q, want the dispatch's own wait 1048574|wait:9|:\n%s", res.Key, res.Stack)
	}
	checkNesting(t, "goroutines", res.Items, res.Exts)
	// The g line is the runtime's record: a start, the kind, the
	// function's entry and the goroutine's number.
	if got, want := events(t, "g 2 7 0x100"), []Record{MakeRecord(true, Ext, 2), Record(abi.PackExt(ExtGo, 0, abi.ExtGoWords)), 0x100, 7}; !reflect.DeepEqual(got, want) {
		t.Errorf("g line: %v, want %v", got, want)
	}
	// Goroutines of the same function never fold, even with no records.
	rs = events(t, `
i D 0
i 7 0
g 1 1 0x100
e 50
g 1 2 0x100
e 60
o 7 70
o D 70
`)
	items := Items(rs, Strict, 0)
	if want := []Item{{0, Dispatch, 1, 70}, {1, 7, 1, 70}, {2, Ext, 1, 49}, {2, Ext, 1, 59}}; !reflect.DeepEqual(items, want) {
		t.Errorf("items %v, want %v", items, want)
	}
}

func TestRecoveryEndsUnwoundCalls(t *testing.T) {
	// Function 7 defers a recover and calls 8, which calls 9, which
	// panics at 10 ms; 7 recovers it, then sleeps 200 ms and returns. 8
	// and 9 record no exit.
	rs := events(t, `
i D 0
i 7 0
i 8 0
i 9 0
`)
	rs = append(rs, ExtStart(ExtRecover, 0, 10, 0x700, 0x600)...)
	rs = append(rs, ExtEnd(10))
	rs = append(rs, events(t, `
w 3 10 0x10
e 210
o 7 210
o D 210
`)...)
	funcOf := func(pc uint64) uint32 {
		if pc == 0x700 {
			return 7
		}
		return 0
	}
	res := AnalyzeFuncs(rs, Strict, 0, 210, funcOf)
	want := []Item{{0, Dispatch, 1, 210}, {1, 7, 1, 210}, {2, 8, 1, 10}, {3, 9, 1, 10}, {2, Ext, 1, 200}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("items %v, want %v", res.Items, want)
	}
	if res.Key != "7|wait:3|" {
		t.Errorf("key %q, want the recovering function's sleep", res.Key)
	}
	// Without the program's functions the record cannot be placed: the
	// calls it may have unwound end at their caller's exit, and hold the
	// sleep.
	res = Analyze(rs, Strict, 0, 210)
	want = []Item{{0, Dispatch, 1, 210}, {1, 7, 1, 210}, {2, 8, 1, 210}, {3, 9, 1, 210}, {4, Ext, 1, 200}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("without funcOf: items %v, want %v", res.Items, want)
	}
	// A recovery by a function that is not open (or not instrumented)
	// changes nothing.
	if res2 := AnalyzeFuncs(rs, Strict, 0, 210, func(uint64) uint32 { return 42 }); !reflect.DeepEqual(res2.Items, want) {
		t.Fatalf("unknown recoverer: items %v, want %v", res2.Items, want)
	}
}

func TestGoexitEndsOpenCalls(t *testing.T) {
	// goexit MS stands for the recovery record runtime.Goexit writes.
	records := func(text string) []Record {
		var rs []Record
		for _, part := range strings.Split(text, "goexit ") {
			if rs != nil {
				ms, rest, _ := strings.Cut(part, "\n")
				n, err := strconv.ParseUint(ms, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				rs = append(rs, ExtStart(ExtRecover, ExtRecoverGoexit, n)...)
				rs = append(rs, ExtEnd(n))
				part = rest
			}
			rs = append(rs, events(t, part)...)
		}
		return rs
	}
	for _, c := range []struct {
		name    string
		records string
		endMs   int64
		want    []Item
	}{{
		// Function 7 calls 8, which calls runtime.Goexit at 30 ms
		// (testing's FailNow): 7 and 8 record no exit; the deferred End
		// of the dispatch runs at 35 ms.
		name:    "on the dispatch's goroutine",
		records: "i D 0\ni 7 0\ni 8 10\ni 9 10\no 9 30\ngoexit 30\no D 35\n",
		endMs:   35,
		want:    []Item{{0, Dispatch, 1, 35}, {1, 7, 1, 30}, {2, 8, 1, 20}, {3, 9, 1, 20}},
	}, {
		// In a goroutine the dispatch started, Goexit ends the calls of
		// that goroutine only: its interval ends at its own end record.
		name:    "in a goroutine",
		records: "i D 0\ni 7 0\ng 1 1 0x100\ni 8 5\ngoexit 25\ne 26\no 7 40\no D 40\n",
		endMs:   40,
		want:    []Item{{0, Dispatch, 1, 40}, {1, 7, 1, 40}, {2, Ext, 1, 25}, {3, 8, 1, 20}},
	}, {
		// A goroutine's records cut while it ran (its interval's end
		// record written by the reader) keep its open calls, closed at
		// the cut.
		name:    "cut goroutine",
		records: "i D 0\ni 7 0\ng 1 1 0x100\ni 8 5\ne 26\no 7 40\no D 40\n",
		endMs:   40,
		want:    []Item{{0, Dispatch, 1, 40}, {1, 7, 1, 40}, {2, Ext, 1, 25}, {3, 8, 1, 21}},
	}, {
		// Without the record, the calls vanish at the dispatch's exit,
		// as in Matrix: 9 stays, under the dispatch.
		name:    "no record",
		records: "i D 0\ni 7 0\ni 8 10\ni 9 10\no 9 30\no D 35\n",
		endMs:   35,
		want:    []Item{{0, Dispatch, 1, 35}, {1, 9, 1, 20}},
	}} {
		if got := Analyze(records(c.records), Strict, 0, c.endMs).Items; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: items %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBoundTree(t *testing.T) {
	// Function 7 runs the same statement twice (each a boundary with a
	// wait inside), then another: each boundary is an item with the id
	// Ext, the wait inside it its child (like calls with children,
	// boundaries with children do not fold), the third a leaf.
	stmt := "sqlite\tSELECT * FROM t WHERE id = ?"
	var rs []Record
	rs = append(rs, MakeRecord(true, Dispatch, 0), MakeRecord(true, 7, 0))
	for _, at := range []uint64{0, 100} {
		rs = append(rs, BoundStart(abi.BoundDB, at, stmt)...)
		rs = append(rs, ExtStart(ExtWait, 3, at, 0x10)...)
		rs = append(rs, ExtEnd(at+90), ExtEnd(at+100))
	}
	rs = append(rs, BoundStart(abi.BoundDB, 200, "sqlite\tCOMMIT")...)
	rs = append(rs, ExtEnd(205), MakeRecord(false, 7, 210), MakeRecord(false, Dispatch, 210))
	res := Analyze(rs, Strict, 0, 210)
	want := []Item{{0, Dispatch, 1, 210}, {1, 7, 1, 210}, {2, Ext, 1, 100}, {3, Ext, 1, 90}, {2, Ext, 1, 100}, {3, Ext, 1, 90}, {2, Ext, 1, 5}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("items %v, want %v", res.Items, want)
	}
	if got := res.Exts[2].Text(); got != stmt {
		t.Errorf("text %q, want %q", got, stmt)
	}
	if got := res.Exts[6].Text(); got != "sqlite\tCOMMIT" {
		t.Errorf("text %q", got)
	}
	if res.Exts[2].KindName() != "bound" || res.Exts[3].Text() != "" || res.Exts[2].Concurrent() {
		t.Errorf("kind %q, wait text %q", res.Exts[2].KindName(), res.Exts[3].Text())
	}
	// The wait inside has the largest self time.
	if res.KeyIndex != 3 {
		t.Errorf("key index %d (%q), want 3", res.KeyIndex, res.Key)
	}
}

func TestWakerOfWait(t *testing.T) {
	// Function 7 waits on a channel (reason 7) from 0 to 300 ms, woken by
	// goroutine 42 at 0x500 (called from 0x600); then it sleeps, which
	// nothing but a timer ends; a wake point outside any wait (garbage)
	// names nothing.
	rs := events(t, `
i D 0
i 7 0
w 7 0 0x10
`)
	rs = append(rs, ExtStart(ExtWake, 0, 300, 42, 0x500, 0x600)...)
	rs = append(rs, ExtEnd(300))
	rs = append(rs, events(t, `
e 300
w 3 300 0x20
e 400
`)...)
	rs = append(rs, ExtStart(ExtWake, 0, 400, 43, 0x700)...)
	rs = append(rs, ExtEnd(400))
	rs = append(rs, events(t, `
o 7 400
o D 400
`)...)
	items, exts := ItemsExt(rs, Strict, 0)
	want := []Item{{0, Dispatch, 1, 400}, {1, 7, 1, 400}, {2, Ext, 1, 300}, {2, Ext, 1, 100}}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("items %v, want %v (a wake point is no item)", items, want)
	}
	if w := exts[2].Waker; w == nil || w.Goid != 42 || !reflect.DeepEqual(w.PCs, []uint64{0x500, 0x600}) {
		t.Errorf("channel wait's waker %+v, want goroutine 42 at 0x500, 0x600", w)
	}
	if exts[3].Waker != nil {
		t.Errorf("sleep's waker %+v, want none", exts[3].Waker)
	}
}

func TestWakerFolds(t *testing.T) {
	// Two receives at the same place fold; the first has no waker (a
	// close by the runtime, say), the second has one: the item keeps it.
	rs := events(t, `
i D 0
i 7 0
w 7 0 0x10
e 100
w 7 100 0x10
`)
	rs = append(rs, ExtStart(ExtWake, 0, 250, 9, 0x900)...)
	rs = append(rs, ExtEnd(250))
	rs = append(rs, events(t, `
e 250
o 7 250
o D 250
`)...)
	items, exts := ItemsExt(rs, Strict, 0)
	want := []Item{{0, Dispatch, 1, 250}, {1, 7, 1, 250}, {2, Ext, 2, 250}}
	if !reflect.DeepEqual(items, want) {
		t.Fatalf("items %v, want %v", items, want)
	}
	if w := exts[2].Waker; w == nil || w.Goid != 9 {
		t.Errorf("folded wait's waker %+v, want goroutine 9", w)
	}
}

func TestHandoffGoroutine(t *testing.T) {
	// The runtime marks a worker handed work with ExtGoHandoff; a reader
	// adds ExtGoRunning when it still ran at the copy.
	x := &Interval{Kind: ExtGo, Reason: abi.ExtGoHandoff | abi.ExtGoRunning}
	if !x.Handoff() || !x.Running() {
		t.Errorf("handoff %v running %v, want both", x.Handoff(), x.Running())
	}
	x = &Interval{Kind: ExtGo}
	if x.Handoff() || x.Running() {
		t.Errorf("a started goroutine that ended: handoff %v running %v", x.Handoff(), x.Running())
	}
	if (&Interval{Kind: ExtWait, Reason: abi.ExtGoHandoff}).Handoff() {
		t.Error("a wait is no handoff")
	}
}
