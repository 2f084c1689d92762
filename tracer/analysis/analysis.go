// Package analysis turns a slice of the beat ring buffer into a call tree
// with per-function cost, trims it and picks a stack key. It is a port of
// Tencent Matrix's TraceDataUtils (Android Trace Canary):
// structuredDataToStack, addMethodItem, stackToTree/treeToStack, trimStack,
// stackToString and getTreeKey, following docs/design.md.
//
// The port is faithful on well-formed input (the worked examples of
// docs/design.md are its golden tests) and deliberately differs from Matrix
// where Matrix is wrong; every such place carries a "Matrix:" comment. In
// short: a cost of exactly 5000 ms is merged like any other cost; tree
// building never drops or misplaces a node, whatever the depths; enters
// left without an exit by a panic or runtime.Goexit are closed when the
// runtime's record of it says (those with no such record vanish as in
// Matrix); an exit
// whose enter lies below a Dispatch enter, or does not exist at all, is
// dropped with the stack left intact; nested dispatches and leftovers of
// earlier dispatches never produce negative depths nor fold into the wrong
// parent; the end time is in the records' own unit (ms); costs are int64
// and saturate instead of overflowing.
//
// The package uses the standard library only: it is linked into user
// binaries. Every function is safe on arbitrary input: it never panics and
// never produces a negative cost or depth.
package analysis

import (
	"github.com/matrixgo/matrix/internal/abi"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// MaxStackLines is the number of report lines Analyze trims the tree to
// (Matrix's Constants.TARGET_EVIL_METHOD_STACK).
const MaxStackLines = 30

const (
	// trimStepMs is the cost step of one Trim round (Matrix's
	// Constants.TIME_UPDATE_CYCLE_MS).
	trimStepMs = 5
	// trimRounds is the number of Trim rounds (Matrix's
	// Constants.FILTER_STACK_MAX_COUNT).
	trimRounds = 60
)

// Item is one call-tree node in pre-order: a function at Depth (0 =
// outermost) that completed Count times in a row under the same parent with
// a total Cost in ms. It is Matrix's MethodItem.
type Item struct {
	// Depth is the node's depth in the tree; the outermost calls (and every
	// Dispatch) have depth 0.
	Depth int
	// ID is the function id, or Dispatch.
	ID uint32
	// Count is the number of consecutive calls folded into this node
	// (always >= 1).
	Count int
	// Cost is the total wall time of those calls in ms (always >= 0).
	Cost int64
}

// String renders the item as its report line without the newline:
// "depth,id,count,cost" (Matrix's MethodItem.toString).
func (it Item) String() string {
	return string(it.appendLine(nil))
}

func (it Item) appendLine(b []byte) []byte {
	b = strconv.AppendInt(b, int64(it.Depth), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(it.ID), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(it.Count), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, it.Cost, 10)
	return b
}

// open is an enter record still waiting for its exit.
type open struct {
	id    uint32
	depth int
	seq   int // index of the enter among all enters processed
	time  uint64
	ext   *Interval // the interval of an extended start record, nil for a call

	// unwound says that a recovery that could not be placed (see
	// recoverer) happened while the call was open: a panic may have
	// unwound it.
	unwound bool

	prevD    int // stack position of the next Dispatch enter below, -1 for none
	prevSame int // indexed stacks only: position of the next enter of the same id below, -1 for none
}

// scanWindow is how many open enters an exit scans for its match before
// the stack switches to an id index (so that garbage input, such as many
// exits without enters over a deep stack, stays linear).
const scanWindow = 32

// openStack is the stack of open enters of step 1.
type openStack struct {
	s     []open
	dTop  int            // position of the topmost Dispatch enter, -1 for none
	index map[uint32]int // nil, or the position of the topmost enter of each id
}

func (st *openStack) push(o open) {
	pos := len(st.s)
	o.prevD = st.dTop
	if o.id == Dispatch {
		st.dTop = pos
	}
	if st.index != nil {
		o.prevSame = -1
		if p, ok := st.index[o.id]; ok {
			o.prevSame = p
		}
		st.index[o.id] = pos
	}
	st.s = append(st.s, o)
}

// find returns the position of the enter matching an exit of id: the
// topmost Dispatch enter for Dispatch, else the topmost enter of id above
// it; -1 if there is none.
func (st *openStack) find(id uint32) int {
	if id == Dispatch {
		return st.dTop
	}
	lo := st.dTop + 1
	if st.index == nil {
		if len(st.s)-lo <= scanWindow {
			for j := len(st.s) - 1; j >= lo; j-- {
				if st.s[j].id == id {
					return j
				}
			}
			return -1
		}
		st.index = make(map[uint32]int)
		for j := range st.s {
			o := &st.s[j]
			o.prevSame = -1
			if p, ok := st.index[o.id]; ok {
				o.prevSame = p
			}
			st.index[o.id] = j
		}
	}
	if p, ok := st.index[id]; ok && p >= lo {
		return p
	}
	return -1
}

// truncate pops every enter at position k and above.
func (st *openStack) truncate(k int) {
	for j := len(st.s) - 1; j >= k; j-- {
		o := &st.s[j]
		if o.id == Dispatch {
			st.dTop = o.prevD
		}
		if st.index != nil {
			if o.prevSame >= 0 {
				st.index[o.id] = o.prevSame
			} else {
				delete(st.index, o.id)
			}
		}
	}
	st.s = st.s[:k]
}

// enter is what Items remembers of every enter it processed.
type enter struct {
	parent int    // enter index of the enclosing open method, -1 for none
	item   int    // index of its item in the completion list, -1 for none
	time   uint64 // the enter's timestamp
}

// done is a completed method (Matrix's MethodItem before tree building),
// with the tree links filled in by step 3.
type done struct {
	id     uint32
	depth  int
	seq    int // enter index of the first call folded into this item
	parent int // enter index of the enclosing open method, -1 for none
	count  int
	cost   int64
	ext    *Interval
	stacks []stackSample // the samples taken in the calls it folds (ExtSample)

	up, first, last, next int // tree parent, first and last child, next sibling
}

// Items runs steps 1 to 3 of docs/design.md on one buffer slice and returns
// the call tree in pre-order, children in call order.
//
// Step 1 walks the records with a stack of open enters. Zero records are
// empty slots. In Strict mode everything before the first enter of Dispatch
// is ignored. An enter of Dispatch starts a new tree: it has depth 0 and no
// parent, whatever is still open below it; any other enter has depth
// parent+1 (0 on an empty stack). An exit is matched with the nearest open
// enter of the same id above the nearest open Dispatch enter (an exit of
// Dispatch matches that Dispatch enter): calls above the match lost their
// exit and, as in Matrix, make no item when the match is a call or a
// Dispatch; intervals above it, calls a recovery record that could not be
// placed may have unwound, and the calls open where an interval's end
// record cuts it, are completed at the match's exit, innermost first. (Instrumented functions
// record their exit at their returns: a panic or runtime.Goexit unwinds
// calls without one, and the runtime's recovery record, see Ext, closes
// them exactly.) An exit with no such match is dropped
// and the stack is left unchanged. An exit earlier than its enter (negative
// duration) aborts the analysis: Items returns nil. At the end, Strict mode
// closes every method still open at end = max(endMs, the latest timestamp
// seen), innermost first, each with its depth as above (for a stack with a
// single Dispatch, the number of enters still below it); NonStrict mode
// drops them. endMs is in the records' time base (ms). Any Mode other than
// Strict behaves as NonStrict.
//
// Step 2 folds a completed method into the item completed just before it
// when both have the same id, the same depth (not 0) and the same parent,
// adding up count and cost: consecutive calls of a leaf collapse.
//
// Step 3 builds the tree and returns it in pre-order, children ordered by
// their first enter. A node whose parent produced no item (its exit was lost,
// or it was still open in NonStrict mode) is attached to its nearest
// ancestor that did, and every Depth in the result is the node's depth in
// that tree, so each item's depth is at most the previous item's depth + 1
// and the first item has depth 0.
//
// Extended records (waits, system calls, runnable time; see Ext) take part
// as leaves with the id Ext, and goroutines (ExtGo) as items with the id
// Ext whose children are the records spliced between their start and end: a start record opens one like an enter, its
// payload words are skipped by their count, and an end record closes the
// open interval like an exit. Consecutive intervals fold only when they
// are of the same kind, reason and program counters, also across one
// runnable interval between them; a runnable interval shorter than a
// millisecond makes no item, nor does any other interval whose cost, once
// folded, is 0 ms (a wait of a moment). A waker point (ExtWake) makes no
// item: it names the waker of the wait it lies in (Interval.Waker; of
// waits that fold, the first one's that has one). ItemsExt returns what
// each item's interval is.
func Items(recs []Record, mode Mode, endMs uint64) []Item {
	items, _, _, _, _ := itemsTimed(recs, mode, endMs, nil)
	return items
}

// ItemsExt is Items that also returns, for each item, its interval (nil
// for a call).
func ItemsExt(recs []Record, mode Mode, endMs uint64) ([]Item, []*Interval) {
	items, _, exts, _, _ := itemsTimed(recs, mode, endMs, nil)
	return items, exts
}

// itemsTimed is Items that also returns, for each item, the timestamp of
// the enter of its first call, its interval (nil for a call; nil when
// there is no interval at all) and its stack samples (nil when no item
// has any), and the time from which the goroutines were sampled: a period
// before the first sample. With funcOf, recovery records close the
// calls a panic unwound (see AnalyzeFuncs); without, they are skipped.
func itemsTimed(recs []Record, mode Mode, endMs uint64, funcOf FuncOf) ([]Item, []uint64, []*Interval, [][]stackSample, uint64) {
	var (
		stack   = openStack{s: make([]open, 0, 64), dTop: -1}
		enters  = make([]enter, 0, len(recs)/2+1)
		comp    = make([]done, 0, len(recs)/4+1)
		maxTime uint64
		stacks  map[int][]stackSample // by enter index: the samples of the open call
		// sampledFrom is the time of the first sample.
		sampledFrom uint64 = math.MaxUint64
	)
	strict := mode == Strict
	begun := !strict

	// complete turns the open method o with the given cost into an item
	// (step 1) and merges it with the previous one (step 2).
	complete := func(o open, cost int64) {
		p := enters[o.seq].parent
		if o.ext != nil && o.ext.Kind == ExtRunnable && cost == 0 {
			return // noise: a goroutine is runnable for a moment at every wake-up
		}
		if n := len(comp); n > 0 {
			last := &comp[n-1]
			// Matrix: addMethodItem merged on (id, depth) alone, so two
			// same-depth leaves of different parents (for example of two
			// dispatches) could fold together; requiring the same parent
			// changes nothing for well-formed input. Matrix also replaced
			// a cost of exactly 5000 ms (DEFAULT_ANR) by the previous
			// item's cost; we add the real cost.
			if last.id == o.id && last.depth == o.depth && o.depth != 0 && last.parent == p && last.ext.same(o.ext) {
				last.ext.foldWaker(o.ext)
				last.count++
				last.cost = satAdd(last.cost, cost)
				last.stacks = append(last.stacks, stacks[o.seq]...)
				enters[o.seq].item = n - 1
				return
			}
		}
		// A wait folds past one runnable interval between it and the same
		// wait (a loop that sleeps is runnable after each wake-up): the
		// waits and the runnable intervals then make one item each.
		if n := len(comp); o.ext != nil && n >= 2 && o.depth != 0 {
			r, w := &comp[n-1], &comp[n-2]
			if r.ext != nil && r.ext.Kind == ExtRunnable && r.depth == o.depth && r.parent == p &&
				w.id == o.id && w.depth == o.depth && w.parent == p && w.ext.same(o.ext) {
				w.ext.foldWaker(o.ext)
				w.count++
				w.cost = satAdd(w.cost, cost)
				enters[o.seq].item = n - 2
				return
			}
		}
		enters[o.seq].item = len(comp)
		comp = append(comp, done{id: o.id, depth: o.depth, seq: o.seq, parent: p, count: 1, cost: cost, ext: o.ext, stacks: stacks[o.seq]})
	}

	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if r == 0 {
			continue
		}
		id := r.ID()
		isEnter := r.Enter()
		var ext *Interval
		if id == Ext && isEnter {
			// Skip the payload, whatever happens to the record.
			var skip int
			ext, skip = decodeExt(recs[i+1:])
			i += skip
			if ext == nil {
				continue
			}
		}
		if ext != nil && ext.Kind == ExtWake {
			// A point inside the wait it ended: its end record, which
			// follows, is skipped too, and the wait learns its waker.
			if i+1 < len(recs) && recs[i+1].ID() == Ext && !recs[i+1].Enter() {
				i++
			}
			if n := len(stack.s); begun && n > 0 {
				if x := stack.s[n-1].ext; x != nil && x.Kind == ExtWait && x.Waker == nil {
					x.Waker = ext.waker()
				}
			}
			continue
		}
		if ext != nil && ext.Kind == ExtSample {
			// A point: its end record, which follows, is skipped too.
			if i+1 < len(recs) && recs[i+1].ID() == Ext && !recs[i+1].Enter() {
				i++
			}
			if !begun {
				continue
			}
			var bytes uint64
			if ext.Reason == abi.SampleAlloc {
				// Where it allocated: its first word is the bytes it
				// stands for.
				if len(ext.PCs) == 0 {
					continue
				}
				bytes, ext.PCs = ext.PCs[0], ext.PCs[1:]
			} else {
				sampledFrom = min(sampledFrom, r.Time())
			}
			if k, below := sampledIn(&stack, ext, funcOf); k >= 0 {
				if stacks == nil {
					stacks = make(map[int][]stackSample)
				}
				seq := stack.s[k].seq
				stacks[seq] = append(stacks[seq], stackSample{pcs: below, bytes: bytes})
			}
			continue
		}
		if ext != nil && ext.Kind == ExtRecover {
			// A point: its end record, which follows, is skipped too.
			if i+1 < len(recs) && recs[i+1].ID() == Ext && !recs[i+1].Enter() {
				i++
			}
			if !begun {
				continue
			}
			maxTime = max(maxTime, r.Time())
			k := -1
			if ext.Reason&ExtRecoverGoexit != 0 {
				k = stack.goexitBase()
			} else {
				k = recoverer(&stack, ext, funcOf)
			}
			if k >= 0 {
				// The calls above the frame that recovered were unwound:
				// they ended at the recovery (no earlier than anything
				// recorded before it), innermost first.
				for j := len(stack.s) - 1; j > k; j-- {
					lost := stack.s[j]
					complete(lost, int64(min(maxTime-min(lost.time, maxTime), math.MaxInt64)))
				}
				stack.truncate(k + 1)
			} else {
				stack.markUnwound()
			}
			continue
		}
		if !begun {
			if !isEnter || id != Dispatch {
				continue
			}
			begun = true
		}
		t := r.Time()
		maxTime = max(maxTime, t)
		if isEnter {
			o := open{id: id, seq: len(enters), time: t, ext: ext}
			p := -1
			if id != Dispatch && len(stack.s) > 0 {
				top := stack.s[len(stack.s)-1]
				o.depth = top.depth + 1
				p = top.seq
			}
			enters = append(enters, enter{parent: p, item: -1, time: t})
			stack.push(o)
			continue
		}
		// Matrix: the exit popped enters until it found its own and, when
		// the stack ran out, still used the last enter popped as its match;
		// the newer version restores the stack only when that last enter
		// is a Dispatch, and restores it upside down. We look for the match
		// first and never pop past the nearest Dispatch enter.
		k := stack.find(id)
		if k < 0 {
			continue
		}
		o := stack.s[k]
		if t < o.time {
			return nil, nil, nil, nil, 0
		}
		// The enters above the match lost their exit. As in Matrix, a
		// call with no recovery record to place its end vanishes at the
		// exit of a call or dispatch (its completed children go to the
		// nearest ancestor, step 3). A call a recovery that could not be
		// placed may have unwound, an interval, and the calls still open
		// where an interval's records are cut (a started goroutine still
		// running when they were copied, or one that outlived its
		// boundary) ended no later than what closes them: they are closed
		// then, innermost first, and keep their cost in the tree.
		for j := len(stack.s) - 1; j > k; j-- {
			lost := stack.s[j]
			if lost.ext == nil && !lost.unwound && o.ext == nil {
				continue
			}
			d := int64(0)
			if t > lost.time {
				d = int64(min(t-lost.time, math.MaxInt64))
			}
			complete(lost, d)
		}
		stack.truncate(k)
		complete(o, int64(t-o.time))
	}

	if strict {
		// Matrix: the end time was compared with enter times shifted by
		// AppMethodBeat.getDiffTime() and callers passed nanoseconds; here
		// both are ms in the same time base. Closing at no earlier than the
		// latest record seen means an end time a little stale (the traced
		// goroutine keeps running while its buffer is copied) neither
		// discards the tree nor yields a negative cost or a parent cheaper
		// than its completed child.
		end := max(endMs, maxTime)
		for j := len(stack.s) - 1; j >= 0; j-- {
			d := end - stack.s[j].time
			if d > math.MaxInt64 {
				d = math.MaxInt64
			}
			complete(stack.s[j], int64(d))
		}
	}
	if len(comp) == 0 {
		return nil, nil, nil, nil, 0
	}
	items, times, exts, smp := tree(comp, enters)
	if sampledFrom != math.MaxUint64 {
		sampledFrom -= min(sampledFrom, abi.SamplePeriodMs)
	} else {
		sampledFrom = 0
	}
	return items, times, exts, smp, sampledFrom
}

// sampledIn returns the position in the stack of the call a stack sample
// x was taken in, and the sample's program counters below that call's
// function: the topmost open call (above the nearest Dispatch enter and
// inside the nearest goroutine) of the innermost instrumented function
// among x's program counters that has one open; without funcOf, or when
// none has, the innermost open call, with the program counters below the
// innermost instrumented function (all of them if none is). An interval
// open at the top (a moment runnable, within the sample's millisecond)
// takes no sample: its call does. -1 if nothing is open.
func sampledIn(st *openStack, x *Interval, funcOf FuncOf) (int, []uint64) {
	lo := max(st.dTop, len(st.s)-recoverScan, 0)
	for j := len(st.s) - 1; j >= lo; j-- {
		if o := &st.s[j]; o.ext != nil && o.ext.Kind == ExtGo {
			lo = j
			break
		}
	}
	top := -1
	for j := len(st.s) - 1; j >= lo; j-- {
		if o := &st.s[j]; o.ext == nil || o.ext.Kind == ExtBound || o.ext.Kind == ExtGo {
			top = j
			break
		}
	}
	if top < 0 {
		return -1, nil
	}
	if funcOf == nil {
		return top, x.PCs
	}
	first := -1 // the innermost instrumented function's program counter
	for i, pc := range x.PCs {
		id := funcOf(pc)
		if id == 0 || id == Dispatch || id == Ext {
			continue
		}
		if first < 0 {
			first = i
		}
		for j := top; j >= lo; j-- {
			if st.s[j].id == id && st.s[j].ext == nil {
				return j, x.PCs[:i]
			}
		}
	}
	if first < 0 {
		return top, x.PCs
	}
	return top, x.PCs[:first]
}

// recoverScan bounds how many open enters a recovery record looks through
// for the frame that recovered, so that garbage input stays linear.
const recoverScan = 1024

// goexitBase returns the position in the stack of what a goroutine that
// called runtime.Goexit records for (abi.ExtRecoverGoexit): the innermost
// started goroutine's interval, or else the topmost Dispatch enter; every
// call above it was unwound. It returns -1 for neither.
func (st *openStack) goexitBase() int {
	lo := max(st.dTop, len(st.s)-recoverScan, 0)
	for j := len(st.s) - 1; j >= lo; j-- {
		if x := st.s[j].ext; x != nil && x.Kind == ExtGo {
			return j
		}
	}
	return st.dTop
}

// markUnwound marks the calls open above the topmost Dispatch enter (the
// recoverScan topmost at most) as possibly unwound by a recovery that
// could not be placed.
func (st *openStack) markUnwound() {
	for j := len(st.s) - 1; j > st.dTop && j >= len(st.s)-recoverScan; j-- {
		st.s[j].unwound = true
	}
}

// recoverer returns the position in the stack of the call that recovered
// the panic of the recovery record x: the topmost open call, above the
// nearest Dispatch enter and inside the nearest goroutine, of the innermost
// instrumented function among x's program counters. -1 if there is none,
// or no funcOf to name them.
func recoverer(st *openStack, x *Interval, funcOf FuncOf) int {
	if funcOf == nil {
		return -1
	}
	for _, pc := range x.PCs {
		id := funcOf(pc)
		if id == 0 || id == Dispatch || id == Ext {
			continue
		}
		lo := max(st.dTop+1, len(st.s)-recoverScan)
		for j := len(st.s) - 1; j >= lo; j-- {
			o := &st.s[j]
			if o.ext != nil && o.ext.Kind == ExtGo {
				return -1
			}
			if o.id == id {
				return j
			}
		}
		return -1
	}
	return -1
}

// tree runs step 3: it links every completed item to its nearest ancestor
// that produced an item and walks the result in pre-order.
//
// Matrix: stackToTree rebuilt the tree from depths alone; a depth that skips
// a level misplaced the node, a first node of depth != 0 discarded the whole
// tree, and a depth-0 node kept a stale father. The parent links recorded
// while walking the records make the tree exact.
func tree(comp []done, enters []enter) ([]Item, []uint64, []*Interval, [][]stackSample) {
	for i := range comp {
		comp[i].up, comp[i].first, comp[i].last, comp[i].next = -1, -1, -1, -1
	}
	rootFirst, rootLast := -1, -1
	// Visit enters in order, so that children, and roots, come in call
	// order. Parents always have a smaller enter index, so the same pass
	// can replace each enter's item by its nearest item: its own, or that
	// of its nearest ancestor that has one.
	for s := range enters {
		e := &enters[s]
		i := e.item
		if i < 0 {
			if e.parent >= 0 {
				e.item = enters[e.parent].item
			}
			continue
		}
		if comp[i].seq != s {
			continue // a call folded into an earlier item
		}
		par := -1
		if e.parent >= 0 {
			par = enters[e.parent].item
		}
		c := &comp[i]
		c.up = par
		if par < 0 {
			if rootLast < 0 {
				rootFirst = i
			} else {
				comp[rootLast].next = i
			}
			rootLast = i
			continue
		}
		p := &comp[par]
		if p.last < 0 {
			p.first = i
		} else {
			comp[p.last].next = i
		}
		p.last = i
	}

	out := make([]Item, 0, len(comp))
	starts := make([]uint64, 0, len(comp))
	var exts []*Interval
	var stacks [][]stackSample
	depth := 0
	for i := rootFirst; i >= 0; {
		c := &comp[i]
		// An interval that took no time (under the clock's millisecond,
		// after folding) explains nothing: a wait of a moment on the way
		// (a GC assist, a lock taken at once) makes no item.
		if noise := c.ext != nil && c.cost == 0 && c.first < 0; !noise {
			out = append(out, Item{Depth: depth, ID: c.id, Count: c.count, Cost: c.cost})
			starts = append(starts, enters[c.seq].time)
			if c.ext != nil && exts == nil {
				exts = make([]*Interval, len(out)-1, len(comp))
			}
			if exts != nil {
				exts = append(exts, c.ext)
			}
			if c.stacks != nil && stacks == nil {
				stacks = make([][]stackSample, len(out)-1, len(comp))
			}
			if stacks != nil {
				stacks = append(stacks, c.stacks)
			}
		}
		if c.first >= 0 {
			i = c.first
			depth++
			continue
		}
		for i >= 0 && comp[i].next < 0 {
			i = comp[i].up
			depth--
		}
		if i >= 0 {
			i = comp[i].next
		}
	}
	return out, starts, exts, stacks
}

// Trim runs step 4 of docs/design.md (Matrix's trimStack with the slow-call
// filter): round k = 1..60 scans items from the tail and removes those with
// Cost < 5·k ms, stopping the moment maxItems remain; if more than maxItems
// remain after round 60, only the first maxItems are kept. A negative maxItems yields
// an empty result. items is not modified.
//
// items should be a pre-order list as Items returns it. The result always is
// one: when a removed item still has kept descendants (possible only when a
// child costs more than its parent, i.e. inconsistent timestamps), they are
// attached to their nearest kept ancestor and their depths adjusted, where
// Matrix would leave a gap in the depths.
func Trim(items []Item, maxItems int) []Item {
	out, _ := trim(items, nil, maxItems)
	return out
}

// TrimExt is Trim for items with their intervals (exts is nil, or as long
// as items): it returns the kept intervals alongside the kept items. The
// rounds spare a client call that passed the trace context on (its
// interval has a SpanID), however short: the called service's spans name
// its span as their parent.
func TrimExt(items []Item, exts []*Interval, maxItems int) ([]Item, []*Interval) {
	out, kept := trim(items, spared(exts, len(items)), maxItems)
	return out, keptExts(exts, kept, len(items))
}

// spared marks the items whose interval is a client call that passed the
// trace context on; nil when there is none (or exts is not as long as the
// items).
func spared(exts []*Interval, n int) []bool {
	var spare []bool
	if len(exts) != n {
		return nil
	}
	for i, x := range exts {
		if x != nil && x.Kind == ExtBound && x.SpanID() != "" {
			if spare == nil {
				spare = make([]bool, n)
			}
			spare[i] = true
		}
	}
	return spare
}

// keptExts returns the intervals of the kept items; nil when exts is nil
// or not as long as the items.
func keptExts(exts []*Interval, kept []int, n int) []*Interval {
	if exts == nil || len(exts) != n {
		return nil
	}
	out := make([]*Interval, len(kept))
	for i, k := range kept {
		out[i] = exts[k]
	}
	return out
}

// trim is Trim that also returns the index in items of each item kept;
// the rounds remove no item whose spare is true (spare is nil, or as long
// as items).
func trim(items []Item, spare []bool, maxItems int) ([]Item, []int) {
	if maxItems < 0 {
		return []Item{}, nil
	}
	removed := make([]bool, len(items))
	remain := len(items)
rounds:
	for k := int64(1); remain > maxItems && k <= trimRounds; k++ {
		limit := k * trimStepMs
		for i := len(items) - 1; i >= 0; i-- {
			if !removed[i] && items[i].Cost < limit && (spare == nil || !spare[i]) {
				removed[i] = true
				remain--
				if remain <= maxItems {
					break rounds
				}
			}
		}
	}

	// Keep the first maxItems survivors (Matrix's fallback) and renumber depths
	// along the tree described by the input depths.
	type anc struct{ depth, childDepth int }
	var st []anc
	out := make([]Item, 0, min(remain, maxItems))
	kept := make([]int, 0, min(remain, maxItems))
	for i, it := range items {
		if len(out) == maxItems {
			break
		}
		for len(st) > 0 && st[len(st)-1].depth >= it.Depth {
			st = st[:len(st)-1]
		}
		d := 0
		if len(st) > 0 {
			d = st[len(st)-1].childDepth
		}
		if removed[i] {
			st = append(st, anc{it.Depth, d})
			continue
		}
		st = append(st, anc{it.Depth, d + 1})
		it.Depth = d
		out = append(out, it)
		kept = append(kept, i)
	}
	return out, kept
}

// StackKey runs step 6 of docs/design.md (Matrix's getTreeKey): candidates are
// the items whose Cost is at least 30 % of cost (truncated to whole ms, as
// Matrix's (long)(cost*0.3)); the winner has the largest (Depth+1)·Cost, the
// first in list order on ties; with no candidate it is the first item; if
// the winner is Dispatch and there are other candidates, the best of the
// others wins. The key is "<id>|", or "" for an empty list. A negative cost
// counts as 0.
func StackKey(items []Item, cost int64) string {
	if len(items) == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(items[stackKeyIndex(items, cost)].ID), 10) + "|"
}

// stackKeyIndex returns the index of StackKey's winner (len(items) > 0).
func stackKeyIndex(items []Item, cost int64) int {
	// Matrix compared int products that could overflow and computed the
	// limit in floating point; both are exact here.
	cost = max(cost, 0)
	limit := cost/10*3 + cost%10*3/10
	best, second := -1, -1 // best candidate, best candidate after it
	var bestHi, bestLo, secondHi, secondLo uint64
	for i, it := range items {
		if it.Cost < limit {
			continue
		}
		hi, lo := weight(it)
		switch {
		case best < 0 || greater(hi, lo, bestHi, bestLo):
			best, second = i, best
			secondHi, secondLo = bestHi, bestLo
			bestHi, bestLo = hi, lo
		case second < 0 || greater(hi, lo, secondHi, secondLo):
			second = i
			secondHi, secondLo = hi, lo
		}
	}
	win := 0
	if best >= 0 {
		win = best
		if items[best].ID == Dispatch && second >= 0 {
			win = second
		}
	}
	return win
}

// selfKeyIndex is the stack key's winner of a tree with intervals: the
// item with the largest self time (its cost less its children's; an
// interval's is its cost; a goroutine's time is not its parent's), the
// first on ties, a Dispatch only when nothing else has any. A call that
// spent its time blocked thus yields the wait it blocked in, and a call
// that ran yields itself. Items of the goroutines the dispatch started
// compete only when the dispatch's own goroutine has none: the key names
// where the dispatch's own time went, and its goroutines' trees are beside
// it.
func selfKeyIndex(items []Item, exts []*Interval) int {
	self, inGo := selfTimes(items, exts)
	win := -1
	for i, it := range items {
		if it.ID == Dispatch {
			continue
		}
		// The dispatch's own items come first: the key says where its
		// own time went; its goroutines' trees are beside it.
		if win < 0 || inGo[win] && !inGo[i] || inGo[win] == inGo[i] && self[i] > self[win] {
			win = i
		}
	}
	if win < 0 {
		return 0
	}
	return win
}

// keptSamples returns the Samples of the kept items of all (by their index
// in all), their self time taken in the whole tree; nil when none has a
// sample.
// stackSample is a sample placed under a call: its program counters below
// the call's function, and the bytes it stands for if it is where the
// goroutine allocated (0 for a CPU sample).
type stackSample struct {
	pcs   []uint64
	bytes uint64
}

func keptSamples(all []Item, times []uint64, exts []*Interval, stacks [][]stackSample, kept []int, from uint64) []*Samples {
	if stacks == nil {
		return nil
	}
	self, _ := selfTimes(all, exts)
	var out []*Samples
	for i, k := range kept {
		if k >= len(stacks) || stacks[k] == nil {
			continue
		}
		if out == nil {
			out = make([]*Samples, len(kept))
		}
		sm := &Samples{Self: self[k], Sampled: self[k]}
		for _, x := range stacks[k] {
			if x.bytes != 0 {
				sm.Allocs = append(sm.Allocs, AllocSample{Bytes: x.bytes, PCs: x.pcs})
			} else {
				sm.Stacks = append(sm.Stacks, x.pcs)
			}
		}
		// The part of its time before the sampling began had no
		// chance of a sample: its share of the self time stays
		// unsampled, the time taken as spread evenly.
		if cost := all[k].Cost; cost > 0 && k < len(times) && times[k] < from {
			in := max(int64(times[k])+cost-int64(from), 0)
			sm.Sampled = sm.Self * min(in, cost) / cost
		}
		out[i] = sm
	}
	return out
}

// selfTimes returns each item's self time (its cost less its children's;
// an interval's is its cost; a goroutine's time is not its parent's), and
// whether it is a goroutine or inside one.
func selfTimes(items []Item, exts []*Interval) (self []int64, inGo []bool) {
	self = make([]int64, len(items))
	inGo = make([]bool, len(items)) // a goroutine or inside one
	var st []int                    // indices of the open ancestors
	for i, it := range items {
		for len(st) > 0 && items[st[len(st)-1]].Depth >= it.Depth {
			st = st[:len(st)-1]
		}
		self[i] = max(it.Cost, 0)
		conc := i < len(exts) && exts[i].Concurrent()
		inGo[i] = conc || len(st) > 0 && inGo[st[len(st)-1]]
		if len(st) > 0 && !conc {
			p := st[len(st)-1]
			self[p] = max(self[p]-max(it.Cost, 0), 0)
		}
		st = append(st, i)
	}
	return self, inGo
}

// weight returns (Depth+1)·Cost as a 128-bit number (negative factors
// count as 0).
func weight(it Item) (hi, lo uint64) {
	d := uint64(max(it.Depth, 0)) + 1
	c := uint64(max(it.Cost, 0))
	return bits.Mul64(d, c)
}

func greater(ahi, alo, bhi, blo uint64) bool {
	return ahi > bhi || ahi == bhi && alo > blo
}

// Result is the outcome of a full analysis (Analyze).
type Result struct {
	// Items is the trimmed call tree in pre-order.
	Items []Item
	// Stack is the report: one line "depth,id,count,cost\n" per item.
	Stack string
	// Cost is the reported cost in ms: max(trigger cost, largest item
	// cost), never negative.
	Cost int64
	// Key is the stack key "<id>|", or "" for an empty stack. When the
	// winner is an interval, the key is "<id>|<kind>|" with the id of the
	// function it belongs to (see KeyIndex); a tracer that can name the
	// interval's code replaces it.
	Key string
	// Starts holds, for each item, when it began (the enter of its first
	// call, for an item that folds several) in ms after the earliest item
	// of the untrimmed tree began: the dispatch's begin in Strict mode.
	// Starts has the length of Items; every value is >= 0, and a child
	// never starts before its parent.
	Starts []int64
	// Exts holds each item's interval (nil for a call); nil when there is
	// none at all.
	Exts []*Interval
	// KeyIndex is the index of the item Key names, -1 for an empty stack.
	KeyIndex int
	// Samples holds, for each item, the stack samples taken in its calls
	// (nil for an item with none); nil when no item has any. A tracer
	// that can name their program counters splits the item's self time
	// among them (see ExtSample).
	Samples []*Samples
	// Repeats are the N+1 patterns of the untrimmed tree that the rule
	// given to AnalyzeRepeats finds, costliest first (see RepeatRule).
	Repeats []Repeat
}

// Analyze runs the whole analysis of docs/design.md on one buffer slice:
// Items (steps 1–3), Trim to MaxStackLines (step 4), the report lines and
// reported cost (step 5) and StackKey (step 6). triggerCost is the cost that
// made the tracer report (for example the dispatch's wall time), in ms.
//
// With intervals in the tree (waits, system calls, runnable time), the
// stack key names the item with the largest self time instead (see
// selfKeyIndex): Matrix's rule assumes that a function's time is its
// callees' or its own running, and would name a caller whose time went into
// a wait.
func Analyze(recs []Record, mode Mode, endMs uint64, triggerCost int64) Result {
	return analyze(recs, mode, endMs, triggerCost, MaxStackLines, RepeatRule{}, nil)
}

// AnalyzeFuncs is Analyze with the program's functions at hand: funcOf
// names the program counters of a recovery record (abi.ExtRecover), and
// the calls open above the frame that recovered, which the panic unwound
// without their exit, end at the recovery. Without funcOf, or when none of
// the record's program counters is in an open call, they end at the exit
// of the nearest call that records one, as in Analyze.
func AnalyzeFuncs(recs []Record, mode Mode, endMs uint64, triggerCost int64, funcOf FuncOf) Result {
	return analyze(recs, mode, endMs, triggerCost, MaxStackLines, RepeatRule{}, funcOf)
}

// AnalyzeWith is AnalyzeRepeats and AnalyzeFuncs at once.
func AnalyzeWith(recs []Record, mode Mode, endMs uint64, triggerCost int64, rule RepeatRule, funcOf FuncOf) Result {
	return analyze(recs, mode, endMs, triggerCost, MaxStackLines, rule, funcOf)
}

// AnalyzeWhole is Analyze without the trim (step 4): Items is the whole
// call tree, for a summary that adds up every call (the summary tracer).
func AnalyzeWhole(recs []Record, mode Mode, endMs uint64, triggerCost int64) Result {
	return analyze(recs, mode, endMs, triggerCost, math.MaxInt, RepeatRule{}, nil)
}

// AnalyzeRepeats is Analyze that also finds the N+1 patterns of the whole
// tree, before it is trimmed, by rule (Result.Repeats).
func AnalyzeRepeats(recs []Record, mode Mode, endMs uint64, triggerCost int64, rule RepeatRule) Result {
	return analyze(recs, mode, endMs, triggerCost, MaxStackLines, rule, nil)
}

func analyze(recs []Record, mode Mode, endMs uint64, triggerCost int64, maxItems int, rule RepeatRule, funcOf FuncOf) Result {
	all, times, allExts, allStacks, from := itemsTimed(recs, mode, endMs, funcOf)
	items, kept := trim(all, spared(allExts, len(all)), maxItems)
	exts := keptExts(allExts, kept, len(all))
	samples := keptSamples(all, times, allExts, allStacks, kept, from)
	base := uint64(math.MaxUint64)
	for _, t := range times {
		base = min(base, t)
	}
	starts := make([]int64, len(items))
	var parents []int64 // start of the open ancestor at each depth
	for i, k := range kept {
		s := int64(times[k] - base) // times are 43-bit: no overflow
		d := items[i].Depth
		parents = parents[:min(d, len(parents))]
		if d > 0 && len(parents) > 0 {
			// Garbage input can hold a child entered "before" its
			// parent; it starts with it.
			s = max(s, parents[len(parents)-1])
		}
		parents = append(parents, s)
		starts[i] = s
	}
	var b []byte
	cost := max(triggerCost, 0)
	for _, it := range items {
		b = it.appendLine(b)
		b = append(b, '\n')
		cost = max(cost, it.Cost)
	}
	res := Result{Items: items, Stack: string(b), Cost: cost, Starts: starts, Exts: exts, Samples: samples, KeyIndex: -1}
	res.Repeats = repeats(all, allExts, cost, rule)
	if len(items) == 0 {
		return res
	}
	if exts == nil {
		res.KeyIndex = stackKeyIndex(items, cost)
		res.Key = strconv.FormatUint(uint64(items[res.KeyIndex].ID), 10) + "|"
		return res
	}
	k := selfKeyIndex(items, exts)
	res.KeyIndex = k
	if x := exts[k]; x != nil {
		res.Key = strconv.FormatUint(uint64(parentID(items, k)), 10) + "|" + x.label() + "|"
	} else {
		res.Key = strconv.FormatUint(uint64(items[k].ID), 10) + "|"
	}
	return res
}

// parentID returns the id of the nearest item before i with a smaller
// depth (the parent of a pre-order item), Dispatch if none.
func parentID(items []Item, i int) uint32 {
	for j := i - 1; j >= 0; j-- {
		if items[j].Depth < items[i].Depth {
			return items[j].ID
		}
	}
	return Dispatch
}

// Format renders r as the `analyze` CLI prints it: the stack lines exactly as
// in r.Stack (Dispatch printed as its id), then "cost=<Cost>\n", then
// "stackKey=<Key>\n".
func (r Result) Format() string {
	var sb strings.Builder
	sb.WriteString(r.Stack)
	sb.WriteString("cost=")
	sb.WriteString(strconv.FormatInt(r.Cost, 10))
	sb.WriteString("\nstackKey=")
	sb.WriteString(r.Key)
	sb.WriteByte('\n')
	return sb.String()
}

// satAdd returns a+b for non-negative a and b, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
