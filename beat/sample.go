package beat

import (
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// CPU samples. A dispatch that runs for longer than Config.SampleAfter has
// the stacks of its goroutines sampled while they run on a CPU, every
// abi.SamplePeriodMs, and where they allocate, every 512 KiB
// (abi.SampleAlloc), by the runtime (see abi.SampleSlots): Records splices
// them into each goroutine's records as abi.ExtSample points, at their
// time, so that the analysis can place each one under the call it was
// taken in and name what that call's own time went to, in code without
// hooks.

// DefaultSampleAfter is how long a dispatch runs before its goroutines are
// sampled, by default.
const DefaultSampleAfter = 20 * time.Millisecond

// sampleArena holds the samples of every slot; the runtime writes it from
// its signal handler, so it is allocated once, for the process.
var sampleArena []uint64

// startSampling hands the runtime the arena and the floor (after <= 0: no
// sampling).
func startSampling(after time.Duration) {
	if after <= 0 {
		rtProfSetup(nil, 0)
		return
	}
	if sampleArena == nil {
		sampleArena = make([]uint64, abi.SampleSlots*abi.SampleSlotSamples*abi.SampleWords)
	}
	rtProfSetup(unsafe.Pointer(&sampleArena[0]), uint64(max(after/time.Millisecond, 1)))
}

// sample is one stack sample of a goroutine of a dispatch: the ring it
// was taken on (the dispatch's own or a child ring), its time, and its
// words as an abi.ExtSample point (start record, payload, end record).
type sample struct {
	ring uintptr
	t    uint64
	recs []uint64
}

// samples returns the samples taken of the dispatch's goroutines, in time
// order, and how many were taken in all (more than it returns when its
// slot filled, or samples were being written while they were read).
func (d *Dispatch) samples() ([]sample, uint32) {
	slot, gen, taken := rtProfSlotOf(unsafe.Pointer(d))
	if slot < 0 || sampleArena == nil {
		return nil, 0
	}
	n := min(int(taken), abi.SampleSlotSamples)
	out := make([]sample, 0, n)
	base := slot * abi.SampleSlotSamples * abi.SampleWords
	for k := range n {
		w := sampleArena[base+k*abi.SampleWords : base+(k+1)*abi.SampleWords]
		stamp := atomic.LoadUint64(&w[0])
		if stamp&1 != 0 || uint32(stamp>>32) != gen {
			continue // being written, or of an earlier dispatch
		}
		var hdr [abi.SampleHeaderWords]uint64
		for j := 1; j < abi.SampleHeaderWords; j++ {
			hdr[j] = atomic.LoadUint64(&w[j])
		}
		_, kind, npc := abi.UnpackExt(hdr[3])
		npc = min(npc, abi.SampleMaxPCs)
		recs := make([]uint64, 0, npc+4)
		t := hdr[2] & abi.TimeMask
		if kind == abi.SampleAlloc {
			recs = append(recs, abi.Pack(true, abi.ExtID, t), abi.PackExt(abi.ExtSample, abi.SampleAlloc, npc+1), hdr[4])
		} else {
			recs = append(recs, abi.Pack(true, abi.ExtID, t), abi.PackExt(abi.ExtSample, abi.SampleCPU, npc))
		}
		for j := range npc {
			recs = append(recs, atomic.LoadUint64(&w[abi.SampleHeaderWords+j]))
		}
		recs = append(recs, abi.Pack(false, abi.ExtID, t))
		if atomic.LoadUint64(&w[0]) != stamp {
			continue // rewritten while it was read
		}
		out = append(out, sample{ring: uintptr(hdr[1]), t: t, recs: recs})
	}
	if kept := uint32(len(out)); kept > 0 && taken > kept {
		// A full slot keeps a uniform sample of the stacks taken: each
		// allocation sample kept stands for its share of those lost.
		for _, s := range out {
			if _, kind, _ := abi.UnpackExt(s.recs[1]); kind == abi.SampleAlloc {
				s.recs[2] = s.recs[2] * uint64(taken) / uint64(kept)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b sample) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	return out, taken
}

// samplesOf returns those of ss taken on ring.
func samplesOf(ss []sample, ring unsafe.Pointer) []sample {
	var out []sample
	for _, s := range ss {
		if s.ring == uintptr(ring) {
			out = append(out, s)
		}
	}
	return out
}

// withSamples returns recs, one goroutine's records, with the samples ss
// (of that goroutine, in time order) spliced in: each after the last
// record no later than it, never inside an extended record's payload, nor
// between a point's or a goroutine's start record and its end record.
func withSamples(recs []uint64, ss []sample) []uint64 {
	if len(ss) == 0 {
		return recs
	}
	out := make([]uint64, 0, len(recs)+len(ss)*8)
	for i := 0; i < len(recs); {
		enter, id, t := abi.Unpack(recs[i])
		for len(ss) > 0 && ss[0].t < t {
			out = append(out, ss[0].recs...)
			ss = ss[1:]
		}
		end := i + 1
		if id == abi.ExtID && enter && i+1 < len(recs) {
			kind, _, count := abi.UnpackExt(recs[i+1])
			end = min(i+2+count, len(recs))
			if kind == abi.ExtGo || kind == abi.ExtWake || kind == abi.ExtRecover || kind == abi.ExtSample {
				// A point, or a goroutine's start: its end record follows.
				if end < len(recs) {
					if e, eid, _ := abi.Unpack(recs[end]); !e && eid == abi.ExtID {
						end++
					}
				}
			}
		}
		out = append(out, recs[i:end]...)
		i = end
	}
	for _, s := range ss {
		out = append(out, s.recs...)
	}
	return out
}
