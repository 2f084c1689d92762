package tracer

import (
	"testing"
	"time"
)

// floodDispatch is one dispatch of a flood, kept by the bound.
type floodDispatch struct {
	n    int
	cost time.Duration
}

// TestBoundFlood: 1,200 slow dispatches of one scene in a minute, however
// costly, give at most 6 reports: the first 3 at once, then the costliest
// of each third of the rest of the minute when that third ends; each
// report counts the dispatches held back before it, and every dispatch is
// either reported or counted. Another scene has its own budget.
func TestBoundFlood(t *testing.T) {
	b := newReportBound(6)
	start := int64(1e6 * time.Second)
	type got struct {
		n        int
		heldBack uint64
		at       int64
	}
	var reports []got
	emit := func(now int64) func(any, uint64) {
		return func(k any, heldBack uint64) {
			reports = append(reports, got{k.(floodDispatch).n, heldBack, now})
		}
	}
	costOf := func(i int) time.Duration {
		// 750 ms and up, with a peak in each 20 s: i%400 == 123.
		return 750*time.Millisecond + time.Duration((i*37)%100)*time.Millisecond + time.Duration(map[bool]int{true: 900}[i%400 == 123])*time.Millisecond
	}
	for i := range 1200 {
		now := start + int64(time.Duration(i)*50*time.Millisecond) // 60 s
		if i%20 == 0 {
			b.due(now, false, emit(now))
		}
		cost := costOf(i)
		act, heldBack, dropped := b.admit("GET /slow", cost, now, func() any { return floodDispatch{i, cost} })
		if dropped != nil && dropped.(floodDispatch).cost >= cost {
			t.Fatalf("dispatch %d replaced a costlier kept one %+v", i, dropped)
		}
		if act == boundReport {
			reports = append(reports, got{i, heldBack, now})
		}
	}
	end := start + int64(time.Minute)
	b.due(end, false, emit(end))
	if len(reports) != 6 {
		t.Fatalf("%d reports in a minute of 1,200 slow dispatches, want 6: %+v", len(reports), reports)
	}
	for k, want := range []int{0, 1, 2, 123, 523, 923} {
		if reports[k].n != want {
			t.Errorf("report %d is of dispatch %d, want %d (the first three, then the costliest of each 20 s)", k, reports[k].n, want)
		}
	}
	var held uint64
	for k, r := range reports {
		held += r.heldBack
		if k >= 3 {
			if due := start + int64(time.Duration(k-2)*20*time.Second); r.at < due {
				t.Errorf("report %d made at %v, before its interval ended at %v", k, time.Duration(r.at-start), time.Duration(due-start))
			}
		}
	}
	if held+uint64(len(reports)) != 1200 {
		t.Errorf("%d reported and %d held back, want every one of the 1,200 counted", len(reports), held)
	}
	if act, _, _ := b.admit("GET /other", time.Second, end-1, func() any { return floodDispatch{} }); act != boundReport {
		t.Errorf("another scene was held back: %v", act)
	}
	// A minute later, the scene starts a new minute with a report at once.
	act, heldBack, _ := b.admit("GET /slow", time.Second, end+int64(time.Second), func() any { return floodDispatch{} })
	if act != boundReport || heldBack != 0 {
		t.Errorf("the next minute: %v with %d held back, want a report", act, heldBack)
	}
}

// TestBoundSnapshots: without a kept dispatch (LAG and ANR reports), each
// interval after the first reports has its first dispatch reported at
// once.
func TestBoundSnapshots(t *testing.T) {
	b := newReportBound(6)
	start := int64(1e6 * time.Second)
	var made []int
	var held uint64
	for i := range 600 {
		now := start + int64(time.Duration(i)*100*time.Millisecond) // 60 s
		act, heldBack, _ := b.admit("GET /stuck", 2*time.Second, now, nil)
		if act == boundKeep {
			t.Fatal("a snapshot was kept")
		}
		if act == boundReport {
			made = append(made, i)
			held += heldBack
		}
	}
	want := []int{0, 1, 2, 3, 200, 400}
	if len(made) != len(want) {
		t.Fatalf("reports of dispatches %v, want %v", made, want)
	}
	for k := range want {
		if made[k] != want[k] {
			t.Fatalf("reports of dispatches %v, want %v", made, want)
		}
	}
	if held != 600-6-(600-401) {
		t.Errorf("%d counted as held back by the reports, want %d", held, 600-6-(600-401))
	}
}

// TestBoundStopReportsKept: when the tracer stops, the kept dispatches are
// reported whatever the time.
func TestBoundStopReportsKept(t *testing.T) {
	b := newReportBound(2)
	now := int64(time.Hour)
	for i := range 5 {
		b.admit("s", time.Second+time.Duration(i), now+int64(i), func() any { return floodDispatch{n: i} })
	}
	var got []int
	b.due(now+10, true, func(k any, heldBack uint64) {
		got = append(got, k.(floodDispatch).n)
		if heldBack != 3 {
			t.Errorf("held back %d, want 3", heldBack)
		}
	})
	if len(got) != 1 || got[0] != 4 {
		t.Errorf("kept reported at stop: %v, want the costliest, 4", got)
	}
}
