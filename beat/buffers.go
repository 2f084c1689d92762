package beat

import (
	"os"
	"sync"
	"unsafe"
)

// The recording buffers live outside the Go heap where the system allows
// it (Linux: an anonymous mapping each, see mapBuffer): they never count
// as live heap, so they do not raise the collector's goal (64 buffers of
// 512 KiB on the heap would let a program's garbage grow by 32 MiB more
// before each collection), and the system backs a page of one only when a
// record is written to it. A buffer whose dispatch wrote more than
// keptRecords records gives the pages beyond them back as the dispatch
// ends (releasePages): an idle buffer holds at most keptRecords × 8 bytes
// of memory. Buffers are never unmapped: a buffer of a stopped recorder
// is kept, its pages given back, for the next recorder of its size
// (retired), so that no late reader or writer can touch unmapped memory.

// keptRecords is the number of records at the start of a buffer whose
// pages stay with it when its dispatch ends (16 KiB): a request that
// writes fewer costs a clear and no system call.
const keptRecords = 2048

// retired holds the buffers of stopped recorders, by size in records.
var retired struct {
	mu sync.Mutex
	bs map[int][][]uint64
}

// newBuffer returns a buffer of size records, all zero: a retired one of
// that size, or a new one.
func newBuffer(size int) []uint64 {
	retired.mu.Lock()
	if l := retired.bs[size]; len(l) > 0 {
		b := l[len(l)-1]
		retired.bs[size] = l[:len(l)-1]
		retired.mu.Unlock()
		return b
	}
	retired.mu.Unlock()
	if b := mapBuffer(size); b != nil {
		return b
	}
	return make([]uint64, size)
}

// retireBuffer keeps buffer b, in which n records were written, for a
// later recorder, its memory given back; a buffer on the Go heap is left
// to the collector.
func retireBuffer(b []uint64, n uint64) {
	if !mappedBuffers {
		return // the collector's
	}
	releasePages(b)
	retired.mu.Lock()
	if retired.bs == nil {
		retired.bs = map[int][][]uint64{}
	}
	retired.bs[len(b)] = append(retired.bs[len(b)], b)
	retired.mu.Unlock()
}

// clearRecords clears the n records written to buffer b (n counts every
// record since the buffer was taken, so it may exceed its length), so that
// a reader of the next dispatch to use it can never see one of them: the
// first keptRecords in place, the rest by giving their pages back, which
// reads as zeros afterwards.
func clearRecords(b []uint64, n uint64) {
	n = min(n, uint64(len(b)))
	if n <= keptRecords {
		clear(b[:n])
		return
	}
	clear(b[:keptRecords])
	// The records after the n-th are zero (a buffer is all zero when it is
	// taken): the page of the last record written goes too.
	end := min(uint64(len(b)), (n*8+uint64(pageSize)-1)/uint64(pageSize)*uint64(pageSize)/8)
	releasePages(b[keptRecords:end])
}

// pageSize is the system's memory page size.
var pageSize = uintptr(os.Getpagesize())

// releasePages zeroes b, giving the whole pages it spans back to the
// system where it can (see dropPages) and clearing the rest.
func releasePages(b []uint64) {
	if len(b) == 0 {
		return
	}
	// The records from i to j are the whole pages b spans.
	start := uintptr(unsafe.Pointer(&b[0]))
	end := start + uintptr(len(b))*8
	i := ((start+pageSize-1)&^(pageSize-1) - start) / 8
	j := (end&^(pageSize-1) - start) / 8
	if end&^(pageSize-1) <= start || j <= i || !dropPages(unsafe.Slice((*byte)(unsafe.Pointer(&b[i])), (j-i)*8)) {
		clear(b)
		return
	}
	clear(b[:i])
	clear(b[j:])
}
