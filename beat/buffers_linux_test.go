package beat

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// resident returns how many of the pages of b the system backs (mincore).
func resident(t *testing.T, b []uint64) int {
	t.Helper()
	n := (uintptr(len(b))*8 + pageSize - 1) / pageSize
	vec := make([]byte, n)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))*8, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	c := 0
	for _, v := range vec {
		c += int(v & 1)
	}
	return c
}

// A mapped buffer is backed only where records were written, and a
// dispatch that wrote more than keptRecords records leaves no more than
// those backed when its buffer is cleared, every record reading zero.
func TestBufferPagesGivenBack(t *testing.T) {
	b := mapBuffer(DefaultBufferSize)
	if b == nil {
		t.Fatal("mapBuffer: the system refused a mapping")
	}
	if got := resident(t, b); got != 0 {
		t.Fatalf("a new buffer has %d pages backed, want 0", got)
	}
	const n = 40000
	for i := range n {
		b[i] = uint64(i) + 1
	}
	written := resident(t, b)
	if want := int((n*8 + pageSize - 1) / pageSize); written < want {
		t.Fatalf("%d records written back %d pages, want %d", n, written, want)
	}
	clearRecords(b, n)
	kept := int(keptRecords * 8 / pageSize)
	if got := resident(t, b); got > kept {
		t.Errorf("after clearRecords %d pages are backed, want at most %d (keptRecords)", got, kept)
	}
	for i, r := range b {
		if r != 0 {
			t.Fatalf("record %d reads %#x after clearRecords", i, r)
		}
	}
	// A short dispatch: cleared in place, its page kept.
	for i := range 100 {
		b[i] = 7
	}
	clearRecords(b, 100)
	if b[0] != 0 || b[99] != 0 || resident(t, b) == 0 {
		t.Errorf("a short dispatch's records: first %d, last %d, %d pages backed", b[0], b[99], resident(t, b))
	}
}

// releasePages zeroes a slice that does not start or end on a page, on
// the Go heap too, and leaves what is around it alone.
func TestReleasePagesUnaligned(t *testing.T) {
	b := make([]uint64, 3*int(pageSize)/8+10)
	for i := range b {
		b[i] = 1
	}
	releasePages(b[3 : len(b)-3])
	for i, r := range b {
		if want := uint64(0); i < 3 || i >= len(b)-3 {
			want = 1
			if r != want {
				t.Fatalf("record %d outside the slice reads %d", i, r)
			}
		} else if r != 0 {
			t.Fatalf("record %d reads %d after releasePages", i, r)
		}
	}
}

// Hundreds of dispatches recording at once all get a buffer, and their
// buffers are not on the Go heap: it grows by far less than they span.
func TestManyBuffersOffHeap(t *testing.T) {
	requireLinked(t)
	if err := Start(Config{}); err != nil {
		t.Fatal(err)
	}
	defer Stop()
	const n = 300
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var begun, release sync.WaitGroup
	recorded := make(chan bool, n)
	begun.Add(n)
	release.Add(1)
	for range n {
		go func() {
			d := Begin(KindCustom, "many")
			recorded <- d.Recorded()
			begun.Done()
			release.Wait()
			d.End()
		}()
	}
	begun.Wait()
	runtime.ReadMemStats(&ms1)
	release.Done()
	for range n {
		if !<-recorded {
			t.Fatalf("a dispatch of %d at once found no buffer (MaxBuffers %d)", n, DefaultMaxBuffers)
		}
	}
	span := uint64(n * DefaultBufferSize * 8)
	if grew := ms1.HeapAlloc - min(ms0.HeapAlloc, ms1.HeapAlloc); grew > span/8 {
		t.Errorf("the heap grew by %d bytes for %d buffers spanning %d", grew, n, span)
	}
}
