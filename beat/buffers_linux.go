package beat

import (
	"syscall"
	"unsafe"
)

// defaultMaxBuffers is DefaultMaxBuffers on Linux, where buffers are
// mapped: what a buffer costs is what its dispatch writes, bounded by
// Config.RecordMemory, and this bounds the address space they take.
const defaultMaxBuffers = 4096

// mappedBuffers says that buffers are mapped outside the Go heap.
const mappedBuffers = true

// mapBuffer returns a buffer of size records in a mapping of its own, or
// nil if the system refuses one.
func mapBuffer(size int) []uint64 {
	b, err := syscall.Mmap(-1, 0, size*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	// The system merges adjacent buffers into one mapping; where
	// transparent huge pages are always on, a record written could then
	// back a 2 MiB page spanning several buffers. (A system without them
	// refuses the advice, which is then moot.)
	_ = syscall.Madvise(b, madvNoHugePage)
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), size)
}

// madvNoHugePage is MADV_NOHUGEPAGE, the same on every Linux port of Go.
const madvNoHugePage = 0xf

// dropPages gives the pages of p (whole pages of private anonymous memory:
// a mapped buffer or the Go heap) back to the system, which reads them as
// zeros afterwards, and reports whether it did.
func dropPages(p []byte) bool {
	return syscall.Madvise(p, syscall.MADV_DONTNEED) == nil
}
