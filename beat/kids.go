package beat

import (
	"sync/atomic"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// Goroutines started inside a dispatch. The runtime gives a goroutine
// started by a goroutine that records into a dispatch a ring of its own (a
// child ring, abi.Ring.Root set), lists it on the dispatch's ring and
// writes an abi.ExtGo record into the starting goroutine's ring. The
// dispatch holds its child rings until its buffer is released; the runtime
// reuses a child ring once its goroutine has stopped recording too.

var (
	kidsN    atomic.Uint64 // goroutines that recorded into a dispatch
	kidsLost atomic.Uint64 // goroutines started inside one that could not
	kidsLate atomic.Uint64 // of kidsN, those still running at the dispatch's end
)

// isKid reports whether the ring p is a child ring.
func isKid(p unsafe.Pointer) bool {
	return p != nil && (*abi.Ring)(p).Root != nil
}

// kids returns the child rings of the dispatch, by number (index 0 is
// unused); nil when there is none.
func (d *Dispatch) kids() []*abi.Ring {
	p := atomic.LoadPointer(&d.ring.List)
	if p == nil {
		return nil
	}
	out := make([]*abi.Ring, d.ring.MaxKids+1)
	for ; p != nil; p = (*abi.Ring)(p).List {
		if c := (*abi.Ring)(p); c.Seq < uint32(len(out)) {
			out[c.Seq] = c
		}
	}
	return out
}

// countKids adds the dispatch's goroutines to the counters, when it ends.
func (d *Dispatch) countKids() {
	if atomic.LoadUint32(&d.ring.Kids) == 0 {
		return
	}
	kidsLost.Add(uint64(atomic.LoadUint32(&d.ring.Lost)))
	for _, c := range d.kids() {
		if c == nil {
			continue
		}
		kidsN.Add(1)
		if atomic.LoadUint64(&c.End) == 0 {
			kidsLate.Add(1)
		}
	}
}

// releaseKids lets the dispatch's child rings go: their records are no
// longer read. The dispatch has ended.
func (d *Dispatch) releaseKids() {
	// A dispatch that started no goroutine has none to release, and never
	// will: it has ended (or was abandoned) before its release, and a
	// goroutine started inside it counts itself in Kids before it looks
	// whether the dispatch still runs. Most dispatches skip the runtime's
	// lock of child rings so.
	if atomic.LoadUint32(&d.ring.Kids) == 0 {
		return
	}
	for p := rtKidsDetach(unsafe.Pointer(d)); p != nil; {
		c := (*abi.Ring)(p)
		p = c.List // before the release: the runtime may reuse c at once
		rtKidRelease(unsafe.Pointer(c))
	}
}

// splice rebuilds dst[start:], the dispatch's own records, with the records
// of its goroutines in the places they were started (see Records).
func (d *Dispatch) splice(dst []uint64, start int) []uint64 {
	own := append([]uint64(nil), dst[start:]...)
	kids := d.kids()
	now := rtGetNow()
	return spliceKids(dst[:start], own, kids, 0, now)
}

// spliceKids appends recs to dst, and after the payload of every ExtGo
// start record the records of the goroutine it names, if that goroutine's
// number is greater than seq (the number of the goroutine that wrote recs;
// numbers grow down the tree, so the recursion ends), then its end record.
func spliceKids(dst, recs []uint64, kids []*abi.Ring, seq uint32, now uint64) []uint64 {
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		enter, id, _ := abi.Unpack(r)
		if id != abi.ExtID || !enter {
			dst = append(dst, r)
			continue
		}
		if i+1 >= len(recs) {
			return append(dst, r) // cut off before the payload
		}
		kind, reason, count := abi.UnpackExt(recs[i+1])
		end := min(i+2+count, len(recs))
		at := len(dst)
		dst = append(dst, recs[i:end]...)
		if kind != abi.ExtGo || count != abi.ExtGoWords || end != i+2+count {
			i = end - 1
			continue
		}
		kseq := recs[i+3]
		i = end - 1
		var c *abi.Ring
		if kseq > uint64(seq) && kseq < uint64(len(kids)) {
			c = kids[kseq]
		}
		if c == nil {
			continue // the start's own end record follows
		}
		// The goroutine's records, then an end record at its end.
		t := atomic.LoadUint64(&c.End)
		kr, open, last := kidRecords(c)
		dst = spliceKids(dst, kr, kids, c.Seq, now)
		if t == 0 {
			// Still running: ends at the copy, marked so.
			dst[at+1] = abi.PackExt(abi.ExtGo, reason|abi.ExtGoRunning, abi.ExtGoWords)
			t = max(now, last)
		}
		t = max(t, c.Begin)
		if open {
			dst = append(dst, abi.Pack(false, abi.ExtID, t)) // the wait it is in
		}
		dst = append(dst, abi.Pack(false, abi.ExtID, t))
		if i+1 < len(recs) {
			if e, id, _ := abi.Unpack(recs[i+1]); !e && id == abi.ExtID {
				i++ // the start's own end record, replaced
			}
		}
	}
	return dst
}

// kidRecords copies the records of a child ring, which its goroutine may
// be writing: nil when they wrapped (or may have while being copied), and
// never a trailing extended record whose payload is not all there. It also
// reports whether they end inside an interval (their last extended record
// is a start other than a goroutine's, whose end record always follows
// it), and their latest time, payload words left out.
func kidRecords(c *abi.Ring) (recs []uint64, open bool, last uint64) {
	n := atomic.LoadUint64(&c.N)
	size := c.Mask + 1
	if n >= size {
		return nil, false, 0
	}
	buf := unsafe.Slice((*uint64)(c.Buf), size)
	out := make([]uint64, n)
	for i := range out {
		out[i] = atomic.LoadUint64(&buf[i])
	}
	if atomic.LoadUint64(&c.N) >= size {
		return nil, false, 0
	}
	for i := 0; i < len(out); i++ {
		enter, id, ms := abi.Unpack(out[i])
		if id != abi.ExtID {
			last = max(last, ms)
			continue
		}
		if !enter {
			last, open = max(last, ms), false
			continue
		}
		if i+1 >= len(out) {
			return out[:i], open, last
		}
		kind, _, count := abi.UnpackExt(out[i+1])
		if i+2+count > len(out) {
			return out[:i], open, last
		}
		last = max(last, ms)
		i += 1 + count
		if kind == abi.ExtWake {
			// A point inside the wait it ends: the wait stays open
			// until its own end record.
			if i+1 < len(out) {
				i++ // the point's end record
			} else {
				return out[:i-1-count], open, last
			}
			continue
		}
		open = kind != abi.ExtGo
	}
	return out, open, last
}
