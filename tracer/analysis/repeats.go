package analysis

import (
	"sort"
)

// RepeatRule says when calls of one function by another are an N+1
// pattern (Result.Repeats): at least MinCalls calls of the same function
// by one call of another function, together at least MinPercent % of the
// reported cost. The same rule applies to boundaries (ExtBound): at least
// MinCalls boundaries of the same kind and text (the same normalised
// statement, the same HTTP method and host, …) issued by one call of a
// function. A MinCalls of 0 or less finds none.
type RepeatRule struct {
	MinCalls   int
	MinPercent int
}

// A Repeat is a function called many times by one call of another, or a
// boundary issued many times by one call of a function: the calls of ID by
// one call of Parent (Dispatch for calls by the dispatch itself), Calls of
// them taking Cost ms in all.
//
// A repeat of a boundary has the ID Ext, its kind (abi.BoundDB, …) in
// Bound and its text (Interval.Text) in Text; a repeat of calls has a
// Bound of 0 and no Text.
type Repeat struct {
	Parent, ID uint32
	Calls      int
	Cost       int64
	Bound      uint8
	Text       string
}

// repeats returns the calls of items (a pre-order tree, untrimmed) that
// rule makes N+1 patterns given the reported cost, costliest first. The
// calls are counted per call of the parent: a function that calls another
// once, called in a loop, is not one (its caller is). Other intervals
// (waits, goroutines) are neither callers nor called, and neither is a
// function that calls itself.
//
// Boundaries count as calls of their kind and text by their parent (the
// call item they are directly under: a boundary inside a goroutine's item
// without a call of its own has none). A boundary inside another boundary
// (a statement a driver issues while serving one, …) is part of it and
// does not count; a boundary is no caller either.
func repeats(items []Item, exts []*Interval, cost int64, rule RepeatRule) []Repeat {
	if rule.MinCalls <= 0 || len(items) == 0 {
		return nil
	}
	type pair struct {
		parent int // index of the parent item
		id     uint32
		bound  uint8
		text   string
	}
	isCall := func(i int) bool { return exts == nil || exts[i] == nil }
	sums := map[pair]*Repeat{}
	var order []pair
	add := func(k pair, parentID uint32, it Item) {
		r := sums[k]
		if r == nil {
			r = &Repeat{Parent: parentID, ID: k.id, Bound: k.bound, Text: k.text}
			sums[k] = r
			order = append(order, k)
		}
		r.Calls += it.Count
		r.Cost = satAdd(r.Cost, it.Cost)
	}
	var stack []int    // the open ancestors of the current item
	var inBound []bool // whether stack[:j+1] holds a boundary
	for i, it := range items {
		for len(stack) > 0 && items[stack[len(stack)-1]].Depth >= it.Depth {
			stack = stack[:len(stack)-1]
			inBound = inBound[:len(inBound)-1]
		}
		var x *Interval
		if exts != nil {
			x = exts[i]
		}
		isBound := x != nil && x.Kind == ExtBound
		nested := len(inBound) > 0 && inBound[len(inBound)-1]
		if len(stack) > 0 {
			p := stack[len(stack)-1]
			switch {
			case x == nil && it.ID != Dispatch && isCall(p) && items[p].ID != it.ID:
				add(pair{parent: p, id: it.ID}, items[p].ID, it)
			case isBound && !nested && isCall(p):
				add(pair{parent: p, id: Ext, bound: x.Reason, text: x.Text()}, items[p].ID, it)
			}
		}
		stack = append(stack, i)
		inBound = append(inBound, nested || isBound)
	}
	var out []Repeat
	for _, k := range order {
		r := sums[k]
		if r.Calls >= rule.MinCalls && r.Cost > 0 && r.Cost*100 >= int64(max(rule.MinPercent, 0))*cost {
			out = append(out, *r)
		}
	}
	sort.Stable(byCost(out))
	return out
}

// byCost sorts repeats by cost, then calls, the largest first. (sort.Stable
// rather than slices.SortStableFunc: the sort package's code is one copy
// for every element type, while each element type given to the generic
// sorts is a copy of its own, kilobytes in every binary that links the
// tracer, and in its link.)
type byCost []Repeat

func (r byCost) Len() int { return len(r) }
func (r byCost) Less(i, j int) bool {
	return r[i].Cost > r[j].Cost || r[i].Cost == r[j].Cost && r[i].Calls > r[j].Calls
}
func (r byCost) Swap(i, j int) { r[i], r[j] = r[j], r[i] }
