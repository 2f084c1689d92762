package beat

import (
	"math"
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
func (d *Dispatch) splice(dst []uint64, start int, ss []sample) []uint64 {
	own := withSamples(append([]uint64(nil), dst[start:]...), samplesOf(ss, unsafe.Pointer(d)))
	kids := d.kids()
	now := rtGetNow()
	return spliceKidsWith(dst[:start], own, kids, 0, now, 0, ss)
}

// spliceKids appends recs to dst, and after the payload of every ExtGo
// start record the records of the goroutine it names, if that goroutine's
// number is greater than seq (the number of the goroutine that wrote recs;
// numbers grow down the tree, so the recursion ends), then its end record.
//
// A goroutine started inside a boundary (a call out of the program: a
// client's dial starts a connection's reader and writer, a driver its
// connection's watcher) that outlives the call serves the library that
// started it, not the dispatch: its records are cut at the call's end,
// and its start is marked abi.ExtGoOutlived. clip is the end of the
// boundary the goroutine that wrote recs was started inside, or 0.
func spliceKids(dst, recs []uint64, kids []*abi.Ring, seq uint32, now, clip uint64) []uint64 {
	return spliceKidsWith(dst, recs, kids, seq, now, clip, nil)
}

// spliceKidsWith is spliceKids that also splices, into each goroutine's
// records, the samples of ss taken on its ring (see withSamples).
func spliceKidsWith(dst, recs []uint64, kids []*abi.Ring, seq uint32, now, clip uint64, ss []sample) []uint64 {
	bounds := boundEnds{recs: recs}
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		enter, id, _ := abi.Unpack(r)
		if id != abi.ExtID {
			dst = append(dst, r)
			continue
		}
		if !enter {
			bounds.end()
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
		bounds.start(i, kind == abi.ExtBound)
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
		if len(ss) > 0 {
			kr = withSamples(kr, samplesOf(ss, unsafe.Pointer(c)))
		}
		kclip := clip
		if b := bounds.innermost(); b != 0 && (kclip == 0 || b < kclip) {
			kclip = b
		}
		if kclip != 0 && (t == 0 || t > kclip) {
			// It outlived the call it was started inside: as far as the
			// call's end.
			kr, open, last = scanRecords(kr, kclip)
			dst[at+1] = abi.PackExt(abi.ExtGo, reason|abi.ExtGoOutlived, abi.ExtGoWords)
			t = max(kclip, last)
		}
		dst = spliceKidsWith(dst, kr, kids, c.Seq, now, kclip, ss)
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
				bounds.end()
			}
		}
	}
	return dst
}

// boundEnds follows the extended intervals open at a point of a
// goroutine's records (every start has one end record), to tell the end of
// the innermost boundary open there. A boundary's end record is looked for
// once, and only for a boundary a goroutine was started inside: most are
// not.
type boundEnds struct {
	recs []uint64 // the goroutine's records
	open []openExt
}

// openExt is an open extended interval of boundEnds.
type openExt struct {
	start int    // the index of its start record if it is a boundary, else -1
	end   uint64 // the boundary's end time, once looked for (0: it has not ended)
	found bool   // whether end was looked for
}

// start notes the interval whose start record is b.recs[i]; bound says
// whether it is a boundary.
func (b *boundEnds) start(i int, bound bool) {
	if !bound {
		i = -1
	}
	b.open = append(b.open, openExt{start: i})
}

// end notes an end record, which ends the innermost interval.
func (b *boundEnds) end() {
	if len(b.open) > 0 {
		b.open = b.open[:len(b.open)-1]
	}
}

// innermost returns the end of the innermost boundary open, 0 if none is
// or it has not ended.
func (b *boundEnds) innermost() uint64 {
	for i := len(b.open) - 1; i >= 0; i-- {
		x := &b.open[i]
		if x.start < 0 {
			continue
		}
		if !x.found {
			x.end, x.found = extEnd(b.recs, x.start), true
		}
		if x.end != 0 {
			return x.end
		}
	}
	return 0
}

// extEnd returns the time of the end record of the extended interval whose
// start record is recs[i], 0 if it has none.
func extEnd(recs []uint64, i int) uint64 {
	depth := 0
	for j := i; j < len(recs); j++ {
		enter, id, ms := abi.Unpack(recs[j])
		if id != abi.ExtID {
			continue
		}
		if !enter {
			if depth--; depth == 0 {
				return ms
			}
			continue
		}
		if j+1 >= len(recs) {
			return 0
		}
		_, _, count := abi.UnpackExt(recs[j+1])
		depth++
		j += 1 + count
	}
	return 0
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
	return scanRecords(out, math.MaxUint64)
}

// scanRecords returns the records of out written at or before until,
// without a trailing extended record whose payload is not all there,
// whether they end inside an interval, and their latest time (see
// kidRecords).
func scanRecords(out []uint64, until uint64) (recs []uint64, open bool, last uint64) {
	for i := 0; i < len(out); i++ {
		enter, id, ms := abi.Unpack(out[i])
		if ms > until {
			return out[:i], open, last
		}
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
