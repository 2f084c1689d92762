package analysis

import (
	"slices"
	"strconv"

	"github.com/matrixgo/matrix/internal/abi"
)

// Ext is the id field of an extended record (0xFFFFF), and the id of the
// items it makes. An extended record starts or ends an interval in which
// the goroutine did not run: a wait, a system call, or time runnable but
// not running (see the abi package for the layout). In report lines such
// an item reads "depth,1048575,count,cost".
const Ext = abi.ExtID

// Kinds of intervals.
const (
	ExtWait     = abi.ExtWait     // a park, with the runtime's wait reason
	ExtSyscall  = abi.ExtSyscall  // a blocking system call
	ExtRunnable = abi.ExtRunnable // runnable, waiting for a CPU
	// ExtGo is a goroutine the dispatch started: its records follow the
	// payload, its item's children are its calls and waits, and its cost
	// is its wall time from the go statement to its exit. It runs beside
	// its parent, so its cost is not part of its parent's: it may exceed
	// the parent's, and it does not lessen the parent's self time.
	ExtGo = abi.ExtGo
	// ExtRecover is a recovered panic: never an item. Its PCs are those
	// of the frame that recovered and its callers; with a FuncOf to name
	// them, the calls the panic unwound end at its time (see AnalyzeFuncs).
	ExtRecover = abi.ExtRecover
	// ExtRecoverGoexit is the reason of an ExtRecover point written by a
	// call of runtime.Goexit: every call open above the dispatch or the
	// started goroutine ended then.
	ExtRecoverGoexit = abi.ExtRecoverGoexit
	// ExtBound is a boundary: a call out of the program (a database
	// statement, an HTTP or gRPC client call). Its item's children are
	// the calls and waits inside it; its Reason is the boundary's kind
	// (abi.BoundDB, …) and its PCs hold its text (see Interval.Text).
	ExtBound = abi.ExtBound
	// ExtWake is the goroutine that ended a wait by waking the recording
	// goroutine: never an item. It is the wait's Interval.Waker.
	ExtWake = abi.ExtWake
	// ExtSample is a sample of the goroutine's stack taken while it ran on
	// a CPU: never an item. It belongs to the call it was taken in, the
	// innermost open call whose function is among its program counters
	// (with a FuncOf to name them; else the innermost open call), and
	// the program counters below that call's become one of the call's
	// Samples (see Result.Samples).
	ExtSample = abi.ExtSample
)

// Samples are the stack samples taken while an item's call was the
// innermost instrumented one of its goroutine (ExtSample): what its own
// time went to, in code without hooks.
type Samples struct {
	// Self is the item's own time in ms: its cost less its children's
	// (the goroutines it started excepted), in the whole tree, before the
	// trim.
	Self int64
	// Sampled is the part of Self that the samples stand for: the time
	// the call ran after the dispatch's sampling began (its self time
	// taken as spread evenly over it). A tracer splits it among the
	// samples; the rest of Self stays the call's own.
	Sampled int64
	// Stacks are the samples' program counters below the item's
	// function, innermost first, one per logical frame (an inlined call
	// has one, as runtime.Callers gives them): empty for a sample taken
	// in the item's function itself.
	Stacks [][]uint64
	// Allocs are the samples of where the item's call allocated
	// (abi.SampleAlloc): one each time its goroutine's allocations
	// crossed a multiple of 512 KiB, standing for the bytes since.
	Allocs []AllocSample
}

// An AllocSample is a sample of a goroutine's stack where it allocated.
type AllocSample struct {
	// Bytes is what the sample stands for.
	Bytes uint64
	// PCs are its program counters below the item's function, as in
	// Samples.Stacks.
	PCs []uint64
}

// A Waker is the goroutine that woke a recording goroutine from a wait.
type Waker struct {
	// Goid is the waker's goroutine id.
	Goid uint64
	// PCs are the waker's return program counters, innermost first, the
	// runtime's frames left out.
	PCs []uint64
}

// FuncOf returns the id of the instrumented function whose code holds the
// return program counter pc (an inlined function's, for a PC runtime.Callers
// gives for it), or 0 when pc is in none.
type FuncOf func(pc uint64) uint32

// An Interval describes the interval of an item with the id Ext.
type Interval struct {
	// Kind is ExtWait, ExtSyscall or ExtRunnable (or another value read
	// from garbage).
	Kind uint8
	// Reason is the runtime's wait reason of a wait: only the program's
	// own runtime can name it (beat.WaitReason).
	Reason uint8
	// PCs are the program counters where the goroutine blocked, innermost
	// first, as runtime.Callers returns them (runtime frames left out).
	// For ExtGo they are the entry of the goroutine's function and the
	// goroutine's number in its dispatch.
	PCs []uint64
	// Waker is the goroutine that ended a wait (ExtWait), when another
	// goroutine did (see ExtWake); nil otherwise.
	Waker *Waker
}

// waker returns the Waker an ExtWake point names, nil if it names none.
func (x *Interval) waker() *Waker {
	if len(x.PCs) == 0 {
		return nil
	}
	return &Waker{Goid: x.PCs[0], PCs: x.PCs[1:]}
}

// foldWaker keeps a waker for x, which y's wait folds into: x's own, or
// else y's.
func (x *Interval) foldWaker(y *Interval) {
	if x != nil && y != nil && x.Waker == nil {
		x.Waker = y.Waker
	}
}

// Handoff reports whether the goroutine of an ExtGo interval existed
// before and was handed work by the dispatch (abi.ExtGoHandoff) rather
// than started by it.
func (x *Interval) Handoff() bool {
	return x != nil && x.Kind == ExtGo && x.Reason&abi.ExtGoHandoff != 0
}

// Running reports whether the goroutine of an ExtGo interval was still
// running when its records were copied (abi.ExtGoRunning).
func (x *Interval) Running() bool {
	return x != nil && x.Kind == ExtGo && x.Reason&abi.ExtGoRunning != 0
}

// Outlived reports whether the goroutine of an ExtGo interval was started
// inside a boundary and ran past its end, where its records were cut
// (abi.ExtGoOutlived).
func (x *Interval) Outlived() bool {
	return x != nil && x.Kind == ExtGo && x.Reason&abi.ExtGoOutlived != 0
}

// decodeExt reads the payload that follows an extended start record: it
// returns the interval (nil when the payload is cut off before its first
// word) and the number of words to skip, never more than len(payload).
func decodeExt(payload []Record) (*Interval, int) {
	if len(payload) == 0 {
		return nil, 0
	}
	kind, reason, n := abi.UnpackExt(uint64(payload[0]))
	n = min(n, len(payload)-1)
	x := &Interval{Kind: kind, Reason: reason}
	if n > 0 {
		x.PCs = make([]uint64, n)
		for i := range n {
			x.PCs[i] = uint64(payload[1+i])
		}
	}
	return x, 1 + n
}

// same reports whether two intervals (nil for calls) fold together.
// Goroutines never do.
func (x *Interval) same(y *Interval) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.Kind == ExtGo || y.Kind == ExtGo {
		return false // goroutines ran side by side: their times do not add up
	}
	if x.Kind != y.Kind || x.Reason != y.Reason {
		return false
	}
	if x.Kind == ExtBound {
		// Calls of one statement, method or host fold, whatever span id
		// each passed on (the first one's is kept).
		return x.Text() == y.Text()
	}
	return slices.Equal(x.PCs, y.PCs)
}

// KindName names the kind: "wait", "syscall", "runnable", or "ext<N>".
func (x *Interval) KindName() string {
	switch x.Kind {
	case ExtWait:
		return "wait"
	case ExtSyscall:
		return "syscall"
	case ExtRunnable:
		return "runnable"
	case ExtGo:
		return "goroutine"
	case ExtBound:
		return "bound"
	}
	return "ext" + strconv.Itoa(int(x.Kind))
}

// Text returns the text of a boundary (ExtBound): its attributes
// separated by abi.BoundSep, without the span id a client call that
// passed the trace context on adds (SpanID); "" for another interval.
func (x *Interval) Text() string {
	name, _ := x.split()
	return name
}

// SpanID returns the id of the span a client call's boundary passed on to
// the service it called (16 hex digits), or "".
func (x *Interval) SpanID() string {
	_, span := x.split()
	return span
}

func (x *Interval) split() (name, span string) {
	if x == nil || x.Kind != ExtBound {
		return "", ""
	}
	return abi.SplitBoundSpan(x.Reason, abi.UnpackBoundText(x.PCs))
}

// Concurrent reports whether the item of this interval runs beside its
// parent (a goroutine) rather than inside its time; false for nil.
func (x *Interval) Concurrent() bool { return x != nil && x.Kind == ExtGo }

// label is the interval in a stack key without names: "wait:<reason>",
// "syscall", "runnable" or "goroutine".
func (x *Interval) label() string {
	switch x.Kind {
	case ExtWait:
		return "wait:" + strconv.Itoa(int(x.Reason))
	case ExtBound:
		return "bound:" + strconv.Itoa(int(x.Reason))
	}
	return x.KindName()
}

// ExtStart returns an extended start record and its payload (kind, reason,
// program counters; at most abi.ExtMaxPCs are kept), as the runtime writes
// them.
func ExtStart(kind, reason uint8, ms uint64, pcs ...uint64) []Record {
	pcs = pcs[:min(len(pcs), abi.ExtMaxPCs)]
	out := []Record{MakeRecord(true, Ext, ms), Record(abi.PackExt(kind, reason, len(pcs)))}
	for _, pc := range pcs {
		out = append(out, Record(pc))
	}
	return out
}

// BoundStart returns the start record of a boundary of kind (abi.BoundDB,
// …) with its text, and its payload, as the runtime writes them.
func BoundStart(kind uint8, ms uint64, text string) []Record {
	words := abi.PackBoundText(text)
	out := []Record{MakeRecord(true, Ext, ms), Record(abi.PackExt(ExtBound, kind, len(words)))}
	for _, w := range words {
		out = append(out, Record(w))
	}
	return out
}

// ExtEnd returns an extended end record.
func ExtEnd(ms uint64) Record { return MakeRecord(false, Ext, ms) }
