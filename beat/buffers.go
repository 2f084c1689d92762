package beat

import (
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
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
// pages stay with it when its dispatch ends (16 KiB, a chunk): a request
// that writes fewer costs a clear and no system call.
const keptRecords = abi.ChunkRecords

// Recording memory is bounded in bytes (Config.RecordMemory), counted in
// chunks of abi.ChunkRecords records that the runtime keeps the count of
// (rtChunkAdd). A mapped buffer holds one chunk while it exists (its kept
// records); a dispatch recording into it takes another each time it has
// written all those it holds (the runtime does, before the record that
// needs it), and gives them back as it ends (giveBackChunks). A buffer on
// the heap holds all its chunks while it exists. A buffer is made only
// when its chunks are there, and a dispatch that needs a chunk when none
// is left records no more (abi.Ring.Short).

// chunkBytes is the size of a chunk of recording memory.
const chunkBytes = abi.ChunkRecords * 8

// chunksOf is the number of chunks that n records take.
func chunksOf(n uint64) int64 {
	return int64((n + abi.ChunkRecords - 1) / abi.ChunkRecords)
}

// baseChunks is the number of chunks a buffer of size records holds while
// it exists.
func baseChunks(size int) int64 {
	if mappedBuffers {
		return 1
	}
	return chunksOf(uint64(size))
}

// firstLim is the abi.Ring.Lim of a dispatch that begins recording into a
// buffer of size records: the records its buffer's own chunk holds, or ^0
// when that is the whole buffer.
func firstLim(size int) uint64 {
	if !mappedBuffers || size <= abi.ChunkRecords {
		return math.MaxUint64
	}
	return abi.ChunkRecords
}

// grownChunks is the number of chunks a dispatch whose ring reached lim
// (abi.Ring.Lim) took for its buffer of size records beyond the buffer's
// own.
func grownChunks(size int, lim uint64) int64 {
	return max(chunksOf(min(lim, uint64(size)))-baseChunks(size), 0)
}

// takeChunks takes n chunks of recording memory, if there are.
func takeChunks(n int64) bool {
	if rtChunkAdd(-n) >= 0 {
		return true
	}
	rtChunkAdd(n)
	return false
}

// giveChunks gives n chunks of recording memory back.
func giveChunks(n int64) {
	if n > 0 {
		rtChunkAdd(n)
	}
}

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
