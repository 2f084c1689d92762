package abi

import (
	"fmt"
	"unsafe"
)

// Version numbers this contract. matrixexec refuses to build a program
// whose matrix module (beat, the tracers) was written for another version:
// the runtime it patches and the recorder it links must agree on every
// value below. Bump it whenever a value or a linkname signature changes.
const Version = 12

// Record layout: one packed 64-bit word per event, the layout of Matrix's
// AppMethodBeat buffer. Bit 63 is set on a method enter; bits 62..43 hold
// the 20-bit function id; bits 42..0 the time in milliseconds since the
// runtime initialised. The zero word is an empty slot.
const (
	// EnterBit marks an enter record.
	EnterBit = uint64(1) << 63
	// IDShift is the position of the id field.
	IDShift = 43
	// IDBits is the width of the id field.
	IDBits = 20
	// IDMask masks an id after shifting a record right by IDShift.
	IDMask = 1<<IDBits - 1
	// TimeMask masks the time field; it is also the largest time a record
	// can hold.
	TimeMask = 1<<IDShift - 1
)

// Reserved function ids.
const (
	// DispatchID is the DISPATCH pseudo-function (0xFFFFE): its enter and
	// exit bracket one dispatch, as Matrix's METHOD_ID_DISPATCH brackets
	// one main-looper message.
	DispatchID = 1048574
	// MaxFuncID is the largest id a function can have.
	MaxFuncID = DispatchID - 1
	// ExtID (0xFFFFF) marks an extended record (see the package doc): the
	// start or end of an interval in which the goroutine did not run.
	ExtID = DispatchID + 1
)

// Extended record kinds (the top byte of the first payload word).
const (
	// ExtWait is a park: the goroutine blocked (channel, select, mutex,
	// sleep, network poller, GC assist, …) with the runtime's wait reason.
	ExtWait = 1
	// ExtSyscall is a system call that blocked for at least one clock
	// tick (1 ms).
	ExtSyscall = 2
	// ExtRunnable is time spent runnable but not running: waiting for a
	// CPU after a wake-up, a preemption or a system call.
	ExtRunnable = 3
	// ExtGo is a goroutine started by the recording goroutine: a start
	// record and an end record of the same time around a payload of
	// ExtGoWords words, the started function's entry program counter and
	// the goroutine's number in its dispatch (Ring.Seq). The goroutine
	// records into a ring of its own (see Ring.Root); a reader splices
	// those records between the start and the end record, and gives the
	// end record the time the goroutine exited.
	ExtGo = 4
	// ExtGoWords is the number of payload words of an ExtGo start record.
	ExtGoWords = 2
	// ExtGoRunning is the bit a reader sets in the reason of an ExtGo
	// start record when the goroutine was still running when the records
	// were copied (the runtime never sets it).
	ExtGoRunning = 1
	// ExtGoHandoff is the bit the runtime sets in the reason of an ExtGo
	// start record when the goroutine existed before: a goroutine parked
	// on a channel receive, a select or a condition that the recording
	// goroutine woke, which then records for the dispatch as a goroutine
	// it started would (work handed to a worker). The entry program
	// counter of the payload is then the return program counter where the
	// goroutine was parked, in its own code.
	ExtGoHandoff = 2
	// ExtGoOutlived is the bit a reader sets in the reason of an ExtGo
	// start record when the goroutine was started inside a boundary (on
	// the recording goroutine or one it started) and ran past the
	// boundary's end: its records are cut there, since after the call it
	// serves the library that started it (a connection's reader), not the
	// dispatch (the runtime never sets it).
	ExtGoOutlived = 4
	// ExtRecover is a point, not an interval: a panic was recovered. The
	// start record and the end record both carry the time of the
	// recovery, read from the exact clock; the payload holds up to
	// ExtMaxPCs return program counters of the frame that recovers and
	// its callers, innermost first (inlined functions each have one, as
	// runtime.Callers gives them). The frames the panic unwound are the
	// calls still open above the innermost instrumented function among
	// them: they ended at the recovery.
	ExtRecover = 5
	// ExtRecoverGoexit is the reason of an ExtRecover point that the
	// runtime writes when the goroutine calls runtime.Goexit (testing's
	// FailNow and SkipNow call it): no frame recovers, only deferred calls
	// run, and every call still open on the goroutine's ring, above the
	// dispatch or the started goroutine it records for, ends then. Its
	// payload is empty.
	ExtRecoverGoexit = 1
	// ExtBound is a boundary: the goroutine called out of the program,
	// into a database (database/sql) or another service (an HTTP or
	// gRPC client call, a message it published). The start record is written when the call
	// begins and the end record when it returns; the records between them
	// (its waits, the calls it made) are its children. The reason is the
	// boundary's kind (BoundDB, BoundHTTP, BoundRPC, BoundPublish); the payload holds
	// up to ExtBoundWords words of text, the attributes of the call
	// separated by BoundSep and packed eight bytes to a word, the first
	// byte the lowest, the last word padded with zero bytes (see
	// PackBoundText). Arguments and query strings are never part of it.
	ExtBound = 6
	// ExtWake is a point, not an interval: another goroutine made the
	// recording goroutine runnable while it waited. It lies inside the
	// wait it ends, between the wait's start and end records; its payload
	// holds the waker's goroutine id and up to ExtWakePCs return program
	// counters of the waker, innermost first, the runtime's own frames
	// left out. Waits that end by a timer, the network poller or the
	// scheduler carry none.
	ExtWake = 7
	// ExtWakePCs is the largest number of program counters of an
	// ExtWake record.
	ExtWakePCs = 6
	// ExtBoundWords is the largest number of text words of an ExtBound
	// start record.
	ExtBoundWords = 24
	// ExtSample is a point, not an interval: a sample of the goroutine's
	// stack, taken while it ran on a CPU (reason SampleCPU). The runtime
	// never writes it into a ring: a reader splices the samples it copies
	// from the dispatch's sample slot (see SampleSlots) into each
	// goroutine's records by time, start record, payload and end record
	// at the sample's time. The payload holds up to SampleMaxPCs return
	// program counters, innermost first, one per logical frame (inlined
	// functions each have one, as runtime.Callers gives them).
	ExtSample = 8
)

// CPU samples. While a dispatch has run for longer than the recorder's
// sampling floor, the runtime's clock thread signals, every SamplePeriodMs,
// each thread that runs one of the dispatch's goroutines, and the signal
// handler writes the goroutine's stack into the dispatch's sample slot: one
// of SampleSlots slots of SampleSlotSamples samples of SampleWords words,
// in an arena beat allocates when it starts (SampleSlots·SampleSlotSamples
// ·SampleWords words). A sample's words are: its stamp (the slot's
// generation in the top 32 bits, a version in bits 31..1 and bit 0 set
// while it is written), the address of the ring of the goroutine it was
// taken on, its time in record time, its kind (SampleCPU, SampleAlloc) and
// number of program counters packed as PackExt packs them, the bytes an
// allocation sample stands for, and the program counters.
// A slot that is full keeps a uniform sample of every stack taken
// (reservoir sampling), counting each one taken.
const (
	// SamplePeriodMs is the time between two samples of a goroutine.
	SamplePeriodMs = 10
	// SampleSlots is the number of dispatches sampled at once.
	SampleSlots = 32
	// SampleSlotSamples is the number of samples a slot holds.
	SampleSlotSamples = 256
	// SampleMaxPCs is the largest number of program counters a sample
	// holds: the innermost frames of its stack.
	SampleMaxPCs = 32
	// SampleHeaderWords is the number of words before the program
	// counters.
	SampleHeaderWords = 5
	// SampleWords is the size of one sample in words.
	SampleWords = SampleHeaderWords + SampleMaxPCs
	// SampleCPU is the reason of a sample of a goroutine on a CPU.
	SampleCPU = 0
	// SampleAlloc is the reason of a sample of a goroutine's stack where
	// it allocated: one each time what it allocated crosses a multiple of
	// 1<<SampleAllocShift bytes, its fifth word the bytes it stands for.
	// A reader splices it with those bytes as the first payload word.
	SampleAlloc = 1
	// SampleAllocShift sets the allocation sampling period: 512 KiB, the
	// heap profile's.
	SampleAllocShift = 19
)

// Kinds of boundaries (the reason of an ExtBound start record) and the
// attributes of their text, in order.
const (
	// BoundDB is a database/sql call: the database system (from the
	// driver's package, "" when unknown) and the statement, normalised
	// (literals become "?") and cut at BoundStatementMax characters.
	BoundDB = 1
	// BoundHTTP is a net/http, fasthttp or hertz client request: its
	// method, scheme and host (with the port, if the URL has one; a
	// fasthttp or hertz HostClient's address); never its path or query.
	// A request that passed the dispatch's trace context on (a net/http
	// one) has a fourth attribute, the id of its span, in 16 lower-case
	// hex digits.
	BoundHTTP = 2
	// BoundRPC is a gRPC client call: its full method
	// ("/shop.Orders/Get") and the target's host, and, when the call
	// passed the dispatch's trace context on, the id of its span.
	BoundRPC = 3
	// BoundPublish is a message a messaging client publishes (nats.go's
	// Conn): the messaging system ("nats") and the host of the server it
	// is connected to, and, when the message passed the dispatch's trace
	// context on in its headers, the id of its span. Never the message's
	// subject, which may hold data, nor its payload.
	BoundPublish = 4
	// BoundSep separates the attributes of a boundary's text.
	BoundSep = '\t'
	// BoundStatementMax is the most characters of a statement a
	// boundary keeps.
	BoundStatementMax = 120
)

// SplitBoundSpan splits the text of a boundary of kind into the text that
// names the call, the same for every call of one statement, method or
// host, and the id of the span a client call (BoundHTTP, BoundRPC) or a
// published message (BoundPublish) passed on, "" when it passed none.
func SplitBoundSpan(kind uint8, text string) (name, span string) {
	attrs := 0
	switch kind {
	case BoundHTTP:
		attrs = 3
	case BoundRPC, BoundPublish:
		attrs = 2
	default:
		return text, ""
	}
	for i := 0; i < len(text); i++ {
		if text[i] == BoundSep {
			if attrs--; attrs == 0 {
				return text[:i], text[i+1:]
			}
		}
	}
	return text, ""
}

// PackBoundText packs the text of an ExtBound start record into payload
// words (at most ExtBoundWords; longer text is cut).
func PackBoundText(text string) []uint64 {
	text = text[:min(len(text), ExtBoundWords*8)]
	words := make([]uint64, (len(text)+7)/8)
	for i := 0; i < len(text); i++ {
		words[i/8] |= uint64(text[i]) << (8 * (i % 8))
	}
	return words
}

// UnpackBoundText returns the text packed into words by PackBoundText
// (the zero bytes that pad it dropped).
func UnpackBoundText(words []uint64) string {
	b := make([]byte, 0, 8*len(words))
	for _, w := range words {
		for k := 0; k < 8; k++ {
			if c := byte(w >> (8 * k)); c != 0 {
				b = append(b, c)
			}
		}
	}
	return string(b)
}

// Payload layout of an extended start record.
const (
	// ExtKindShift is the position of the kind in the first payload word.
	ExtKindShift = 56
	// ExtReasonShift is the position of the wait reason.
	ExtReasonShift = 48
	// ExtCountMask masks the number of program counters that follow.
	ExtCountMask = 1<<16 - 1
	// ExtMaxPCs is the largest number of program counters a start record
	// carries.
	ExtMaxPCs = 8
)

// PackExt packs the first payload word of an extended start record. It is
// never zero for a valid kind (1..255).
func PackExt(kind, reason uint8, count int) uint64 {
	return uint64(kind)<<ExtKindShift | uint64(reason)<<ExtReasonShift | uint64(count)&ExtCountMask
}

// UnpackExt splits the first payload word of an extended start record.
func UnpackExt(w uint64) (kind, reason uint8, count int) {
	return uint8(w >> ExtKindShift), uint8(w >> ExtReasonShift), int(w & ExtCountMask)
}

// Pack packs an enter (enter true) or exit record. Bits of id beyond the id
// field and of ms beyond the time field are dropped, as the runtime hooks
// drop them.
func Pack(enter bool, id uint32, ms uint64) uint64 {
	r := uint64(id&IDMask)<<IDShift | ms&TimeMask
	if enter {
		r |= EnterBit
	}
	return r
}

// Unpack splits a record into its fields.
func Unpack(r uint64) (enter bool, id uint32, ms uint64) {
	return r&EnterBit != 0, uint32(r>>IDShift) & IDMask, r & TimeMask
}

// StartupRingSize is the number of records of the start-up ring: the calls
// on the main goroutine from the runtime's initialisation to main.main.
const StartupRingSize = 1 << 17

// Ring is the header of a recording buffer as the runtime sees it. A
// goroutine's recording slot (a field added to runtime.g) points at a Ring;
// beat.Dispatch starts with one.
//
// Only the goroutine whose slot points at the ring writes records. N is
// published with release ordering after the record it counts, so a reader
// on another goroutine that loads N and then the records below it sees
// them whole (see beat.Dispatch.Records).
type Ring struct {
	// Buf points at Mask+1 records (a power of two).
	Buf unsafe.Pointer
	// Mask is the number of records minus one.
	Mask uint64
	// N counts the records written so far.
	N uint64
	// Lim is the number of records the ring's memory holds so far: the
	// writer that has written Lim records takes another chunk of
	// ChunkRecords records from the process's recording memory before it
	// writes the next (see ChunkRecords). A ring whose whole buffer is
	// its own has Lim ^0: it wraps, its oldest records overwritten.
	Lim uint64
	// Outer is the slot's value before the ring was installed: an
	// enclosing dispatch, the start-up ring or nil. It is put back when the
	// ring's dispatch ends or is abandoned.
	Outer unsafe.Pointer
	// Frame is the depth (stack top minus stack pointer) of the frame that
	// began the dispatch, 0 when unknown. When a panic is recovered in a
	// shallower frame, that frame was unwound without ending the dispatch:
	// the runtime then marks the ring RingAbandoned and puts Outer back.
	Frame uintptr
	// State is RingRunning, RingEnded or RingAbandoned; it is written with
	// atomic stores.
	State uint32

	// The fields below are about goroutines started inside a dispatch: a
	// goroutine started by a goroutine that records into a dispatch gets
	// a ring of its own (a child ring) and records into it until it exits.

	// Kids counts the goroutines started inside the dispatch (on its own
	// ring), those not recorded included; atomic.
	Kids uint32
	// Root is, on a child ring, the ring of the dispatch it records for;
	// nil on any other ring.
	Root unsafe.Pointer
	// List heads, on a dispatch's ring, the list of its child rings, the
	// newest first; on a child ring it links to the next older one. A
	// child ring is never taken off the list of its dispatch.
	List unsafe.Pointer
	// Begin is, on a child ring, the record time the goroutine was
	// started at.
	Begin uint64
	// End is, on a child ring, the record time the goroutine exited or
	// stopped recording at; 0 while it records. Atomic.
	End uint64
	// MaxKids is, on a dispatch's ring, the most goroutines started
	// inside it that get a child ring; set when it begins.
	MaxKids uint32
	// Lost counts, on a dispatch's ring, the goroutines started inside
	// it that did not get a child ring (beyond MaxKids, or every child
	// ring of the process in use); atomic.
	Lost uint32
	// Seq is, on a child ring, the goroutine's number in its dispatch
	// (1 for the first one started).
	Seq uint32
	// Refs counts, on a child ring, its two holders, the goroutine and
	// the dispatch (until its records are no longer read); the runtime
	// reuses it when both have let it go. Atomic.
	Refs int32

	// Alloc and Allocs are the bytes and the objects the ring's goroutine
	// has allocated on the heap since it began recording into it (the
	// sizes asked for, as runtime.MemStats.TotalAlloc counts them, before
	// rounding to a size class): written by that goroutine only.
	Alloc  uint64
	Allocs uint64

	// Short is set (atomically, to 1) when the ring needed another chunk
	// and the process's recording memory had none: its writer writes no
	// more records into it, and its records are not a call tree.
	Short uint32
}

// ChunkRecords is the number of records in a chunk of recording memory
// (16 KiB). A dispatch's buffer is address space of BufferSize records,
// of which the system backs what is written; the process's recording
// memory, a bound in bytes, is counted in chunks: a buffer holds one
// while it exists, and a dispatch takes one more each time it has
// written all its chunks hold, giving those back as it ends.
const ChunkRecords = 1 << 11

// Ring states.
const (
	RingRunning   = 0 // recording
	RingEnded     = 1 // ended by Dispatch.End
	RingAbandoned = 2 // its beginning frame was unwound by a panic, or its goroutine exited
)

// Offsets of Ring's fields and its size, rendered into the runtime file,
// which checks its own view of the ring against them when it compiles.
const (
	RingMaskOffset    = unsafe.Offsetof(Ring{}.Mask)
	RingNOffset       = unsafe.Offsetof(Ring{}.N)
	RingOuterOffset   = unsafe.Offsetof(Ring{}.Outer)
	RingFrameOffset   = unsafe.Offsetof(Ring{}.Frame)
	RingStateOffset   = unsafe.Offsetof(Ring{}.State)
	RingKidsOffset    = unsafe.Offsetof(Ring{}.Kids)
	RingRootOffset    = unsafe.Offsetof(Ring{}.Root)
	RingListOffset    = unsafe.Offsetof(Ring{}.List)
	RingBeginOffset   = unsafe.Offsetof(Ring{}.Begin)
	RingEndOffset     = unsafe.Offsetof(Ring{}.End)
	RingMaxKidsOffset = unsafe.Offsetof(Ring{}.MaxKids)
	RingLostOffset    = unsafe.Offsetof(Ring{}.Lost)
	RingSeqOffset     = unsafe.Offsetof(Ring{}.Seq)
	RingRefsOffset    = unsafe.Offsetof(Ring{}.Refs)
	RingAllocOffset   = unsafe.Offsetof(Ring{}.Alloc)
	RingAllocsOffset  = unsafe.Offsetof(Ring{}.Allocs)
	RingLimOffset     = unsafe.Offsetof(Ring{}.Lim)
	RingShortOffset   = unsafe.Offsetof(Ring{}.Short)
	RingSize          = unsafe.Sizeof(Ring{})
)

// The recording flag (runtime.matrixOn) is a uint32 alone on its cache
// line, padded on both sides so that no variable the linker places nearby
// shares the line every instrumented call reads (the padding covers the
// adjacent-line prefetch too). The runtime file and the files added to
// packages declare it as struct { _ [FlagPadBefore]byte; v uint32; _
// [FlagPadAfter]byte }, with these values rendered into them.
const (
	// FlagPadBefore is the padding before the flag, in bytes.
	FlagPadBefore = 64
	// FlagPadAfter is the padding after the flag, in bytes.
	FlagPadAfter = 60
)

// NameTable is the table of function names an instrumented package
// registers with the runtime: Data is the package path on the first line,
// then one line per function, "<id> <name> <file:line>", and one line per
// go statement whose call the compiler wraps in a function of its own
// (F.gowrap1, named after the enclosing function), NameTableGo followed by
// "<func> <file:line>": the function the wrapped call calls, qualified
// with its package's path, and the go statement's position, which is the
// wrapper's. Next links the tables into a list whose head the runtime
// keeps.
type NameTable struct {
	Next unsafe.Pointer
	Data string
}

// NameTableGo begins the line of a NameTable that names the function a go
// statement's wrapper calls.
const NameTableGo = "go "

// Offsets of NameTable's fields and its size, rendered into the runtime
// file, which checks its own view of the table against them when it
// compiles.
const (
	NameTableNextOffset = unsafe.Offsetof(NameTable{}.Next)
	NameTableDataOffset = unsafe.Offsetof(NameTable{}.Data)
	NameTableSize       = unsafe.Sizeof(NameTable{})
)

// Kind says where a dispatch comes from.
type Kind int

// Dispatch kinds. The patched standard packages pass them to the runtime as
// plain ints; beat.Kind has the same values.
const (
	KindCustom    Kind = iota // Begin/Run from user code
	KindHTTP                  // a request served by net/http, fasthttp or hertz
	KindTest                  // a test run by the testing package
	KindBenchmark             // one run of a benchmark
	KindFrame                 // a frame of a frame loop
	KindRPC                   // a call an RPC server (gRPC) handles
	KindMessage               // a message a subscription's handler processes (NATS)
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindHTTP:
		return "http"
	case KindTest:
		return "test"
	case KindBenchmark:
		return "benchmark"
	case KindFrame:
		return "frame"
	case KindRPC:
		return "rpc"
	case KindMessage:
		return "message"
	}
	return "custom"
}

// RuntimeConstants renders the contract as constants of package runtime,
// the body of the file matrixexec compiles next to the recorder's runtime
// file (package inject adds the header).
func RuntimeConstants() []byte {
	return fmt.Appendf(nil, `package runtime

// The recorder's contract, rendered from matrixexec's abi package.
const (
	matrixEnterBit     = %d
	matrixIDShift      = %d
	matrixIDMask       = %d
	matrixTimeMask     = %d
	matrixDispatchID   = %d
	matrixStartupSize  = %d
	matrixFlagPadBefore = %d
	matrixFlagPadAfter  = %d
	matrixRingMaskOffset = %d
	matrixRingNOffset    = %d
	matrixRingOuterOffset = %d
	matrixRingFrameOffset = %d
	matrixRingStateOffset = %d
	matrixRingKidsOffset  = %d
	matrixRingRootOffset  = %d
	matrixRingListOffset  = %d
	matrixRingBeginOffset = %d
	matrixRingEndOffset   = %d
	matrixRingMaxKidsOffset = %d
	matrixRingLostOffset  = %d
	matrixRingSeqOffset   = %d
	matrixRingRefsOffset  = %d
	matrixRingAllocOffset = %d
	matrixRingAllocsOffset = %d
	matrixRingLimOffset  = %d
	matrixRingShortOffset = %d
	matrixChunkRecords   = %d
	matrixRingSize       = %d
	matrixNameTableNextOffset = %d
	matrixNameTableDataOffset = %d
	matrixNameTableSize       = %d
	matrixRingRunning    = %d
	matrixRingEnded      = %d
	matrixRingAbandoned  = %d
	matrixExtID          = %d
	matrixExtWait        = %d
	matrixExtSyscall     = %d
	matrixExtRunnable    = %d
	matrixExtGo          = %d
	matrixExtGoWords     = %d
	matrixExtRecover     = %d
	matrixExtRecoverGoexit = %d
	matrixExtBound       = %d
	matrixExtBoundWords  = %d
	matrixExtWake        = %d
	matrixExtWakePCs     = %d
	matrixExtGoHandoff   = %d
	matrixExtKindShift   = %d
	matrixExtReasonShift = %d
	matrixExtMaxPCs      = %d
	matrixExtSample      = %d
	matrixSamplePeriodMs = %d
	matrixSampleSlots    = %d
	matrixSampleSlotSamples = %d
	matrixSampleMaxPCs   = %d
	matrixSampleHeaderWords = %d
	matrixSampleWords    = %d
	matrixSampleCPU      = %d
	matrixSampleAlloc    = %d
	matrixSampleAllocShift = %d
)
`, EnterBit, IDShift, IDMask, uint64(TimeMask), DispatchID, StartupRingSize,
		FlagPadBefore, FlagPadAfter, RingMaskOffset, RingNOffset,
		RingOuterOffset, RingFrameOffset, RingStateOffset,
		RingKidsOffset, RingRootOffset, RingListOffset, RingBeginOffset, RingEndOffset,
		RingMaxKidsOffset, RingLostOffset, RingSeqOffset, RingRefsOffset, RingAllocOffset, RingAllocsOffset, RingLimOffset, RingShortOffset, ChunkRecords,
		RingSize, NameTableNextOffset, NameTableDataOffset, NameTableSize, RingRunning, RingEnded, RingAbandoned,
		ExtID, ExtWait, ExtSyscall, ExtRunnable, ExtGo, ExtGoWords, ExtRecover, ExtRecoverGoexit, ExtBound, ExtBoundWords, ExtWake, ExtWakePCs, ExtGoHandoff, ExtKindShift, ExtReasonShift, ExtMaxPCs,
		ExtSample, SamplePeriodMs, SampleSlots, SampleSlotSamples, SampleMaxPCs, SampleHeaderWords, SampleWords, SampleCPU, SampleAlloc, SampleAllocShift)
}
