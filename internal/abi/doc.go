// Package abi is the one definition of the contract between the code
// matrixexec adds to a program and the code that reads what it recorded:
// the packed record layout, the reserved function ids, the extended
// records of waits and goroutines (see below), the ring header the runtime
// writes through, the recording flag's padding, the name table of an
// instrumented package, the dispatch kinds and the version of all of it.
//
// Every side takes these values from here. The recorder's runtime file and
// the files added to instrumented packages cannot import a package (they are
// compiled into package runtime, or into users' packages where an internal
// package is out of reach), so matrixexec renders the values into them as
// constants (see RuntimeConstants and package inject); the beat
// package and the analysis import them; and the runtime file checks its own
// view of the ring and of the name table against the rendered offsets when
// it is compiled.
//
// # Extended records: waits, wakers, system calls, runnable time, goroutines, boundaries
//
// While a goroutine records inside a dispatch, the runtime also writes the
// intervals in which it does not run. Such an interval is a pair of
// extended records, whose id field holds ExtID (0xFFFFF, never a function
// id): a start record (EnterBit set) followed by raw payload words, and an
// end record (EnterBit clear, no payload). The first payload word is
// PackExt(kind, reason, count); count further words follow, the program
// counters where the goroutine blocked (innermost first, as
// runtime.Callers returns them, runtime frames left out). Payload words
// are not records: a reader skips them by count, and a copy that ends
// inside a payload (a watchdog copies a prefix) simply ends there.
//
// Worked example: a function with id 7 sleeps 350 ms at time 100 ms, and
// the goroutine then waits 2 ms for a CPU:
//
//	i(7@100)                       Pack(true, 7, 100)
//	X(start@100)                   Pack(true, ExtID, 100)
//	  payload                      PackExt(ExtWait, <waitReasonSleep>, 2)
//	  payload                      pc of time.Sleep's caller's call site
//	  payload                      pc of the next caller
//	X(end@450)                     Pack(false, ExtID, 450)
//	X(start@450)                   Pack(true, ExtID, 450)
//	  payload                      PackExt(ExtRunnable, 0, 0)
//	X(end@452)                     Pack(false, ExtID, 452)
//	o(7@452)                       Pack(false, 7, 452)
//
// A goroutine runnable again in the millisecond in which its last runnable
// interval began and ended, with nothing written since, reopens that
// interval: its end record is rewritten, in the same slot, when the
// goroutine runs again. A loop that yields writes an interval per tick so,
// not one per yield.
//
// A goroutine started by a recording goroutine gets a child ring (see
// Ring.Root) and is noted in the starter's ring by an ExtGo start record
// with a payload of ExtGoWords words and an end record of the same time:
//
//	X(start@100)                   Pack(true, ExtID, 100)
//	  payload                      PackExt(ExtGo, 0, ExtGoWords)
//	  payload                      entry pc of the goroutine's function
//	  payload                      the goroutine's number (Ring.Seq)
//	X(end@100)                     Pack(false, ExtID, 100)
//
// A reader puts the child ring's records between the payload and the end
// record, whose time becomes the goroutine's end (Ring.End). The same
// record with the reason ExtGoHandoff notes work handed to a goroutine that
// already existed: a parked worker that the recording goroutine woke by a
// send (or a select, or a condition's signal). The worker then records for
// the dispatch until it blocks again after waking a goroutine of the
// dispatch (it delivered), or until the dispatch ends.
//
// When another goroutine wakes a recording goroutine from a wait, an
// ExtWake point inside the wait names it: its goroutine id and its return
// program counters, innermost first, the runtime's frames left out:
//
//	X(start@100) … payload         the wait (ExtWait, <waitReasonChanReceive>)
//	X(start@480)                   Pack(true, ExtID, 480)
//	  payload                      PackExt(ExtWake, 0, 3)
//	  payload                      the waker's goroutine id
//	  payload × 2                  pcs of the waker: its send, its caller
//	X(end@480)                     Pack(false, ExtID, 480)
//	X(end@480)                     the wait's end
//
// A recovered panic is noted by an ExtRecover start record, the return
// program counters of the recovering frame and its callers, and an end
// record, both records with the exact time of the recovery:
//
//	X(start@230)                   Pack(true, ExtID, 230)
//	  payload                      PackExt(ExtRecover, 0, 2)
//	  payload                      pc in the frame that recovers
//	  payload                      pc in its caller
//	X(end@230)                     Pack(false, ExtID, 230)
//
// A boundary, a call out of the program (a database statement, an HTTP
// or gRPC client call), is an ExtBound start record when the call begins,
// whose reason is the boundary's kind and whose payload is its text
// (PackBoundText), and an end record when it returns; what the goroutine
// recorded in between is inside it:
//
//	X(start@120)                   Pack(true, ExtID, 120)
//	  payload                      PackExt(ExtBound, BoundHTTP, 4)
//	  payload × 4                  "GET\thttps\tapi.example.com", 8 bytes a word
//	X(start@121) … X(end@300)      a wait inside the request
//	X(end@301)                     Pack(false, ExtID, 301)
//
// The reason is the runtime's own waitReason of the release the program
// was built with; only that program's runtime can name it (the beat
// package asks it: "sleep", "chan receive", "sync.Mutex.Lock", …).
//
// The package uses the standard library only: it is linked into every
// instrumented program.
package abi
