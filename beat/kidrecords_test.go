package beat

import (
	"testing"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// ringOf returns a child ring holding recs.
func ringOf(recs []uint64) *abi.Ring {
	buf := make([]uint64, 64)
	copy(buf, recs)
	return &abi.Ring{Buf: unsafe.Pointer(&buf[0]), Mask: uint64(len(buf) - 1), N: uint64(len(recs))}
}

// skipOn32Bit skips a test of the ring's layout or of its atomic reads on a
// 32-bit target: only the patched runtime writes a ring, and matrixexec
// builds 32-bit targets without it (rewrite.CheckArch), where abi.Ring's
// 64-bit words need not be 8-byte aligned.
func skipOn32Bit(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		t.Skip("no ring on a 32-bit target: matrixexec builds it without the recorder")
	}
}

func TestKidRecordsOpenAcrossWakePoint(t *testing.T) {
	skipOn32Bit(t)
	wait := []uint64{abi.Pack(true, 5, 10), abi.Pack(true, abi.ExtID, 20), abi.PackExt(abi.ExtWait, 7, 1), 0x10}
	wake := []uint64{abi.Pack(true, abi.ExtID, 90), abi.PackExt(abi.ExtWake, 0, 2), 42, 0x500, abi.Pack(false, abi.ExtID, 90)}
	for _, tc := range []struct {
		name string
		recs []uint64
		n    int // records kept
		open bool
	}{
		{"in the wait", wait, len(wait), true},
		// The waker wrote its point; the wait's end is yet to come.
		{"woken", append(append([]uint64{}, wait...), wake...), len(wait) + len(wake), true},
		// The point without its end record: cut off before it.
		{"point cut", append(append([]uint64{}, wait...), wake[:4]...), len(wait), true},
		{"ended", append(append(append([]uint64{}, wait...), wake...), abi.Pack(false, abi.ExtID, 90)), len(wait) + len(wake) + 1, false},
	} {
		recs, open, last := kidRecords(ringOf(tc.recs))
		if len(recs) != tc.n || open != tc.open {
			t.Errorf("%s: %d records, open %v; want %d, %v", tc.name, len(recs), open, tc.n, tc.open)
		}
		if tc.n > len(wait) && last != 90 {
			t.Errorf("%s: last %d, want 90", tc.name, last)
		}
	}
}

// A goroutine started inside a boundary that runs past the call's end (a
// connection's reader, started by a client's dial) is cut at the call's
// end and marked outlived, its goroutines with it; one that ends inside
// the call, or one started outside any, is spliced whole (marked running
// if it still runs).
func TestSpliceKidsCutAtTheBoundaryEnd(t *testing.T) {
	skipOn32Bit(t)
	text := abi.PackBoundText("GET\thttp\tstock:8080")
	goStart := func(at uint64, seq uint64) []uint64 {
		return []uint64{abi.Pack(true, abi.ExtID, at), abi.PackExt(abi.ExtGo, 0, abi.ExtGoWords), 0x100, seq, abi.Pack(false, abi.ExtID, at)}
	}
	var own []uint64
	own = append(own, abi.Pack(true, 5, 0))
	own = append(own, abi.Pack(true, abi.ExtID, 10), abi.PackExt(abi.ExtBound, abi.BoundHTTP, len(text)))
	own = append(own, text...)
	own = append(own, goStart(12, 1)...) // the dial: outlives the call
	own = append(own, goStart(14, 2)...) // ends inside the call
	own = append(own, abi.Pack(false, abi.ExtID, 50))
	own = append(own, goStart(70, 3)...) // outside any call, still running
	own = append(own, abi.Pack(false, 5, 100))

	wait := func(at uint64) []uint64 {
		return []uint64{abi.Pack(true, abi.ExtID, at), abi.PackExt(abi.ExtWait, 7, 1), 0x10}
	}
	dial := append(append([]uint64{abi.Pack(true, 7, 12)}, goStart(13, 4)...), wait(13)...)
	dial = append(dial, abi.Pack(false, abi.ExtID, 60), abi.Pack(true, 8, 61)) // after the call: cut
	reader := append([]uint64{abi.Pack(true, 9, 13)}, wait(14)...)             // the connection's reader, still running
	short := []uint64{abi.Pack(true, 11, 14), abi.Pack(false, 11, 30)}
	late := append([]uint64{abi.Pack(true, 12, 70)}, wait(71)...)
	kids := []*abi.Ring{nil, ringOf(dial), ringOf(short), ringOf(late), ringOf(reader)}
	for i, k := range kids[1:] {
		k.Seq = uint32(i + 1)
	}
	kids[1].End, kids[2].End, kids[1].Begin, kids[4].Begin = 80, 30, 12, 13

	got := spliceKids(nil, own, kids, 0, 200, 0)

	var want []uint64
	want = append(want, own[:3+len(text)]...)
	outlived := func(at, seq uint64) []uint64 {
		return []uint64{abi.Pack(true, abi.ExtID, at), abi.PackExt(abi.ExtGo, abi.ExtGoOutlived, abi.ExtGoWords), 0x100, seq}
	}
	want = append(want, outlived(12, 1)...)
	want = append(want, abi.Pack(true, 7, 12))
	want = append(want, outlived(13, 4)...)
	want = append(want, reader...)
	want = append(want, abi.Pack(false, abi.ExtID, 50), abi.Pack(false, abi.ExtID, 50)) // the reader's wait, and its end
	want = append(want, wait(13)...)
	want = append(want, abi.Pack(false, abi.ExtID, 50), abi.Pack(false, abi.ExtID, 50)) // the dial's wait, and its end
	want = append(want, goStart(14, 2)[:4]...)
	want = append(want, short...)
	want = append(want, abi.Pack(false, abi.ExtID, 30))
	want = append(want, abi.Pack(false, abi.ExtID, 50))
	want = append(want, abi.Pack(true, abi.ExtID, 70), abi.PackExt(abi.ExtGo, abi.ExtGoRunning, abi.ExtGoWords), 0x100, 3)
	want = append(want, late...)
	want = append(want, abi.Pack(false, abi.ExtID, 200), abi.Pack(false, abi.ExtID, 200))
	want = append(want, abi.Pack(false, 5, 100))
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d:\n got %x\nwant %x", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %x, want %x", i, got[i], want[i])
		}
	}
}
