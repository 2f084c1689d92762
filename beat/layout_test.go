package beat

import (
	"testing"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// TestRingLayout guards the contract between Dispatch and the runtime: the
// goroutine's recording slot points at a Dispatch, and the runtime hooks
// write through it as an abi.Ring, whose offsets the runtime file checks
// against its own view when it compiles (rewrite.TestPatchedStdCompiles).
func TestRingLayout(t *testing.T) {
	skipOn32Bit(t)
	var d Dispatch
	if off := unsafe.Offsetof(d.ring); off != 0 {
		t.Errorf("Dispatch.ring is at offset %d; the runtime reads it at offset 0", off)
	}
	if got := unsafe.Sizeof(d.ring); got != abi.RingSize {
		t.Errorf("Dispatch.ring has size %d, abi.RingSize is %d", got, abi.RingSize)
	}
	// The fields the runtime writes, through the Dispatch pointer.
	base := uintptr(unsafe.Pointer(&d))
	for _, f := range []struct {
		name      string
		addr, off uintptr
	}{
		{"Buf", uintptr(unsafe.Pointer(&d.ring.Buf)), 0},
		{"Mask", uintptr(unsafe.Pointer(&d.ring.Mask)), abi.RingMaskOffset},
		{"N", uintptr(unsafe.Pointer(&d.ring.N)), abi.RingNOffset},
	} {
		if f.addr-base != f.off {
			t.Errorf("Dispatch's ring %s is at offset %d, the runtime writes it at %d", f.name, f.addr-base, f.off)
		}
	}
	// The count is updated with 64-bit atomics by readers.
	if abi.RingNOffset%8 != 0 {
		t.Errorf("abi.Ring.N at offset %d is not 8-byte aligned", abi.RingNOffset)
	}
}
