package analysis

import (
	"strconv"

	"github.com/matrixgo/matrix/internal/abi"
)

// Dispatch is the reserved DISPATCH pseudo-function id (0xFFFFE). Its enter
// and exit records bracket one unit of work on an event loop (an HTTP
// request, a job, a frame), the analog of Matrix's
// AppMethodBeat.METHOD_ID_DISPATCH around one main-looper message.
const Dispatch = abi.DispatchID

// MaxID is the largest function id. Ids 1..MaxID are functions, Dispatch is
// reserved, 0xFFFFF and above cannot be encoded.
const MaxID = abi.MaxFuncID

// MaxTime is the largest timestamp, in ms, that a Record can hold (2^43-1).
const MaxTime = abi.TimeMask

// Record is one packed 64-bit beat, the same layout as Matrix's
// AppMethodBeat buffer: bit 63 = enter, bits 62..43 = id (20 bits),
// bits 42..0 = time in ms. The zero Record is an empty buffer slot.
type Record uint64

// MakeRecord packs an enter (enter == true) or exit record. Bits of id above
// the 20-bit id field and bits of ms above the 43-bit time field are
// discarded, exactly as the recorder's packing does.
func MakeRecord(enter bool, id uint32, ms uint64) Record {
	return Record(abi.Pack(enter, id, ms))
}

// Enter reports whether r is a method-enter record (false: exit).
func (r Record) Enter() bool { return uint64(r)&abi.EnterBit != 0 }

// ID returns the 20-bit function id of r.
func (r Record) ID() uint32 { return uint32(uint64(r)>>abi.IDShift) & abi.IDMask }

// Time returns the 43-bit timestamp of r in ms.
func (r Record) Time() uint64 { return uint64(r) & abi.TimeMask }

// String renders r in the notation of docs/design.md: "i(id@ms)" for an
// enter, "o(id@ms)" for an exit, with "D" standing for Dispatch; the zero
// Record renders as "0".
func (r Record) String() string {
	if r == 0 {
		return "0"
	}
	b := make([]byte, 0, 24)
	if r.Enter() {
		b = append(b, "i("...)
	} else {
		b = append(b, "o("...)
	}
	if r.ID() == Dispatch {
		b = append(b, 'D')
	} else {
		b = strconv.AppendUint(b, uint64(r.ID()), 10)
	}
	b = append(b, '@')
	b = strconv.AppendUint(b, r.Time(), 10)
	b = append(b, ')')
	return string(b)
}

// Mode selects strict (slow call / ANR) or non-strict (start-up) analysis.
type Mode int

const (
	// Strict is the mode of the slow-call and ANR tracers: records before
	// the first enter of Dispatch are ignored and methods still open at the
	// end are closed at the end time.
	Strict Mode = iota
	// NonStrict is the mode of the start-up tracer: analysis starts at the
	// first record and methods still open at the end are dropped.
	NonStrict
)

// String returns "strict" or "non-strict".
func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case NonStrict:
		return "non-strict"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}
