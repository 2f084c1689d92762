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
