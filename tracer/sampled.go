package tracer

import (
	"cmp"
	"slices"
	"strings"

	"github.com/matrixgo/matrix/tracer/analysis"
)

// FrameSampled is a function without a hook in which a call spent its own
// time, found by sampling the stacks of the dispatch's goroutines while
// they ran on a CPU (a function of the standard library, a leaf too small
// or too bounded to be hooked, an inlined function, a blacklisted
// package): a child of the hooked call the samples were taken in, or of a
// sampled frame. Samples is how many samples were taken in it and its
// callees; its Cost is that share of the hooked call's own time since the
// sampling began (analysis.Samples.Sampled), and File and Line are where its first sample
// was taken in it (for a function with callees, the line of the call).
const FrameSampled = "sampled"

// ReasonCPU is the reason of a stack key that names a sampled frame,
// "<func>[cpu]|": the dispatch's time went to that function running.
const ReasonCPU = "cpu"

// Bounds of the sampled frames of one call: a frame with less than
// sampledMinShare of the call's samples is left out (its time stays the
// call's), and at most sampledMaxFrames are kept, the heaviest first.
const (
	sampledMinShare  = 0.05
	sampledMaxFrames = 16
)

// sampledNode is a function of the prefix tree of a call's samples.
type sampledNode struct {
	fn, file string
	line     int
	n        int    // CPU samples taken in it or its callees
	alloc    uint64 // bytes its allocation samples (and its callees') stand for
	kids     []*sampledNode
}

// add walks the stack frames (innermost first) down from n, adding the
// sample to each node on the way (a function calling itself is one node).
func (n *sampledNode) add(frames []stackFrame, cpu int, alloc uint64) {
	at := n
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		if i < len(frames)-1 && f.fn == frames[i+1].fn {
			continue
		}
		var next *sampledNode
		for _, k := range at.kids {
			if k.fn == f.fn {
				next = k
				break
			}
		}
		if next == nil {
			next = &sampledNode{fn: f.fn, file: f.file, line: f.line}
			at.kids = append(at.kids, next)
		}
		next.n += cpu
		next.alloc += alloc
		at = next
	}
}

// sampledFrames folds the samples of a call into frames at depth and
// below, outermost first in pre-order, the heaviest first among siblings.
// start is the call's start.
func sampledFrames(sm *analysis.Samples, depth int, start int64) []Frame {
	total := len(sm.Stacks)
	root := &sampledNode{}
	if sm.Sampled > 0 {
		for _, pcs := range sm.Stacks {
			root.add(stackFrames(pcs), 1, 0)
		}
	} else {
		total = 0 // no time to split
	}
	for _, a := range sm.Allocs {
		root.alloc += a.Bytes
		root.add(stackFrames(a.PCs), 0, a.Bytes)
	}
	if total == 0 && root.alloc == 0 {
		return nil
	}
	minN := int(float64(total)*sampledMinShare + 0.999)
	minAlloc := uint64(float64(root.alloc)*sampledMinShare) + 1
	var out []Frame
	var walk func(n *sampledNode, d int)
	walk = func(n *sampledNode, d int) {
		slices.SortStableFunc(n.kids, func(a, b *sampledNode) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(b.alloc, a.alloc)) })
		for _, k := range n.kids {
			if total == 0 || k.n < minN {
				if root.alloc == 0 || k.alloc < minAlloc {
					continue
				}
			}
			if len(out) == sampledMaxFrames {
				continue
			}
			var cost int64
			if total > 0 {
				cost = (sm.Sampled*int64(k.n) + int64(total)/2) / int64(total)
			}
			out = append(out, Frame{Depth: d, Count: 1, Cost: cost, Start: start, Func: k.fn, File: k.file, Line: k.line, Kind: FrameSampled, Samples: k.n, AllocBytes: k.alloc})
			walk(k, d+1)
		}
	}
	walk(root, depth)
	return out
}

// allocTotal is what the allocation samples of a call stand for.
func allocTotal(sm *analysis.Samples) uint64 {
	var b uint64
	for _, a := range sm.Allocs {
		b += a.Bytes
	}
	return b
}

// withAllocs sets each frame's AllocBytes to what the allocation samples
// under it stand for: a call's own samples (own, by frame) and its
// children's, sampled frames' already holding theirs and their callees'.
func withAllocs(frames []Frame, own []uint64) {
	parent := make([]int, len(frames))
	var st []int
	for i := range frames {
		for len(st) > 0 && frames[st[len(st)-1]].Depth >= frames[i].Depth {
			st = st[:len(st)-1]
		}
		parent[i] = -1
		if len(st) > 0 {
			parent[i] = st[len(st)-1]
		}
		st = append(st, i)
		if frames[i].Kind != FrameSampled && i < len(own) {
			frames[i].AllocBytes = own[i]
		}
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if p := parent[i]; p >= 0 && frames[i].Kind != FrameSampled {
			frames[p].AllocBytes += frames[i].AllocBytes
		}
	}
}

// heaviestAlloc returns the frame that allocated the most itself (its
// AllocBytes less its children's), and those bytes; -1 if none did.
func heaviestAlloc(frames []Frame) (int, uint64) {
	self := make([]uint64, len(frames))
	var st []int
	for i := range frames {
		for len(st) > 0 && frames[st[len(st)-1]].Depth >= frames[i].Depth {
			st = st[:len(st)-1]
		}
		self[i] = frames[i].AllocBytes
		if len(st) > 0 {
			p := st[len(st)-1]
			self[p] -= min(self[p], frames[i].AllocBytes)
		}
		st = append(st, i)
	}
	best, bb := -1, uint64(0)
	for i, b := range self {
		if b > bb && frames[i].Func != "" {
			best, bb = i, b
		}
	}
	return best, bb
}

// stackFrame is a function of a sample's stack.
type stackFrame struct {
	fn, file string
	line     int
}

// stackFrames names a sample's program counters, innermost first, one
// function each (inlined ones too), leaving out the runtime's goroutine
// exit.
func stackFrames(pcs []uint64) []stackFrame {
	if len(pcs) == 0 {
		return nil
	}
	out := make([]stackFrame, 0, len(pcs))
	frames := callerFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" && f.Function != "runtime.goexit" {
			out = append(out, stackFrame{fn: mainPath(f.Function), file: f.File, line: f.Line})
		}
		if !more {
			return out
		}
	}
}

// sampledKey returns the stack key that names the sampled frame that wins
// Matrix's rule among frames (those of the call the key named): the
// largest (depth+1)·cost among those costing at least 30 % of cost; ""
// when none does.
func sampledKey(frames []Frame, cost int64) string {
	best, bw := -1, int64(-1)
	for i, f := range frames {
		if f.Kind != FrameSampled || f.Cost*10 < cost*3 {
			continue
		}
		if w := int64(f.Depth+1) * f.Cost; w > bw {
			best, bw = i, w
		}
	}
	if best < 0 {
		return ""
	}
	return WaitKey(frames[best].Func, ReasonCPU)
}

// PartsFields say where a slow call's time went, in ms, on the
// dispatch's own goroutine (the goroutines it started ran beside it):
// they add up to its cost.
type PartsFields struct {
	// Sampled is code without hooks that the samples found (the
	// outermost sampled frames' cost), Own hooked functions' own code
	// they found.
	Sampled int64 `json:"sampled"`
	Own     int64 `json:"own"`
	// Waits is time blocked (channels, locks, sleeps, I/O, system calls),
	// GC the waits that assisted the garbage collector, Runnable time
	// ready to run but waiting for a CPU.
	Waits    int64 `json:"waits"`
	GC       int64 `json:"gc"`
	Runnable int64 `json:"runnable"`
	// Unexplained is the rest: hooked calls' own time while the dispatch
	// was not sampled (before its sampling floor), or code between calls.
	Unexplained int64 `json:"unexplained"`
	// Stopped is how long the world stood still during the dispatch (the
	// collector's stops, runtime.GC, …), in ms to the µs: time inside
	// the waits and runnable time above, not beside them. Absent when the
	// runtime no longer kept every stop since the dispatch began.
	Stopped *float64 `json:"stopped,omitempty"`
}

// partsOf adds up frames into the parts of cost; own is the samples'
// share of hooked calls' own code.
func partsOf(frames []Frame, cost, own int64) *PartsFields {
	p := &PartsFields{Own: own}
	skip := -1 // depth of a goroutine whose subtree is left out
	sampledAt := -1
	for _, f := range frames {
		if skip >= 0 && f.Depth > skip {
			continue
		}
		skip = -1
		if sampledAt >= 0 && f.Depth <= sampledAt {
			sampledAt = -1
		}
		switch {
		case f.Kind == FrameGoroutine:
			skip = f.Depth
		case f.Kind == FrameSampled && sampledAt < 0:
			p.Sampled += f.Cost
			sampledAt = f.Depth
		case f.Kind == FrameWait && f.Reason == "runnable":
			p.Runnable += f.Cost
		case f.Kind == FrameWait && strings.HasPrefix(f.Reason, "GC assist"):
			p.GC += f.Cost
		case f.Kind == FrameWait:
			p.Waits += f.Cost
		}
	}
	p.Unexplained = max(cost-p.Sampled-p.Own-p.Waits-p.GC-p.Runnable, 0)
	return p
}
