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

// The recording memory is a bound in bytes: a dispatch takes chunks of it
// as it records and gives them back as it ends; one that needs a chunk
// when none is left stops recording, its buffer backed no further than
// the chunks it holds, and it yields no records.
func TestRecordMemoryBound(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{RecordMemory: 4 * chunkBytes})
	calls := func(n int) {
		for range n {
			rtEnter(3)
			rtExit(3)
		}
	}
	// 6,002 records: three chunks, the buffer's own and two more.
	d := Begin(KindCustom, "fits")
	calls(3000)
	during := ReadStats().RecordBytes
	d.End()
	if got := len(c.recs["fits"]); got != 6002 {
		t.Fatalf("got %d records, want 6002", got)
	}
	if during != 3*chunkBytes {
		t.Errorf("a dispatch of 6,002 records held %d bytes, want %d (three chunks)", during, 3*chunkBytes)
	}
	s := ReadStats()
	if s.RecordBytes != chunkBytes || s.RecordMemory != 4*chunkBytes {
		t.Errorf("after it ended: %d of %d bytes held, want the idle buffer's %d", s.RecordBytes, s.RecordMemory, chunkBytes)
	}
	// 10,002 records need five chunks: the fifth is not there.
	d = Begin(KindCustom, "short")
	calls(5000)
	backed := resident(t, d.data) * int(pageSize)
	short := d.Short()
	d.End()
	if !short {
		t.Error("a dispatch that needed more than the bound is not short")
	}
	if got := len(c.recs["short"]); got != 0 {
		t.Errorf("a short dispatch yielded %d records, want none", got)
	}
	if backed > 4*chunkBytes {
		t.Errorf("a short dispatch's buffer had %d bytes backed, more than the bound's %d", backed, 4*chunkBytes)
	}
	if after := ReadStats(); after.Short != s.Short+1 || after.RecordBytes != chunkBytes {
		t.Errorf("Short %d → %d, want one more; %d bytes held after it, want %d", s.Short, after.Short, after.RecordBytes, chunkBytes)
	}
	// Its chunks are back: the next dispatch records.
	Run("after", func() { calls(1) })
	if got := len(c.recs["after"]); got != 4 {
		t.Errorf("the dispatch after a short one has %d records, want 4", got)
	}
}

// A dispatch that begins when the recording memory cannot hold another
// buffer is not recorded, however many buffers MaxBuffers allows.
func TestRecordMemoryBoundsBuffers(t *testing.T) {
	requireLinked(t)
	c := capture(t, Config{RecordMemory: chunkBytes})
	before := ReadStats().NotRecorded
	secondWhileFirstRuns()
	if got := ReadStats().NotRecorded - before; got != 1 {
		t.Errorf("NotRecorded grew by %d, want 1", got)
	}
	if len(c.recs["second"]) != 0 || len(c.recs["first"]) != 4 {
		t.Errorf("records: first %d (want 4), second %d (want none)", len(c.recs["first"]), len(c.recs["second"]))
	}
	if s := ReadStats(); s.Buffers != 1 || s.MaxBuffers != DefaultMaxBuffers {
		t.Errorf("%d buffers of at most %d, want 1 of %d", s.Buffers, s.MaxBuffers, DefaultMaxBuffers)
	}
}
