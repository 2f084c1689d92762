package analysis

import (
	"slices"
	"strconv"
	"strings"
	"testing"
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
