package analysis

import (
	"cmp"
	"slices"
)

// RepeatRule says when calls of one function by another are an N+1
// pattern (Result.Repeats): at least MinCalls calls of the same function
// by one call of another function, together at least MinPercent % of the
// reported cost. A MinCalls of 0 or less finds none.
type RepeatRule struct {
	MinCalls   int
	MinPercent int
}

// A Repeat is a function called many times by one call of another: the
// calls of ID by one call of Parent (Dispatch for calls by the dispatch
// itself), Calls of them taking Cost ms in all.
type Repeat struct {
	Parent, ID uint32
	Calls      int
	Cost       int64
}

// repeats returns the calls of items (a pre-order tree, untrimmed) that
// rule makes N+1 patterns given the reported cost, costliest first. The
// calls are counted per call of the parent: a function that calls another
// once, called in a loop, is not one (its caller is). Intervals (waits,
// goroutines) are neither callers nor called, and neither is a function
// that calls itself.
func repeats(items []Item, exts []*Interval, cost int64, rule RepeatRule) []Repeat {
	if rule.MinCalls <= 0 || len(items) == 0 {
		return nil
	}
	type pair struct {
		parent int // index of the parent item
		id     uint32
	}
	sums := map[pair]*Repeat{}
	var order []pair
	var stack []int // the open ancestors of the current item
	for i, it := range items {
		for len(stack) > 0 && items[stack[len(stack)-1]].Depth >= it.Depth {
			stack = stack[:len(stack)-1]
		}
		isCall := exts == nil || exts[i] == nil
		if isCall && it.ID != Dispatch && len(stack) > 0 {
			p := stack[len(stack)-1]
			if (exts == nil || exts[p] == nil) && items[p].ID != it.ID {
				k := pair{p, it.ID}
				r := sums[k]
				if r == nil {
					r = &Repeat{Parent: items[p].ID, ID: it.ID}
					sums[k] = r
					order = append(order, k)
				}
				r.Calls += it.Count
				r.Cost = satAdd(r.Cost, it.Cost)
			}
		}
		stack = append(stack, i)
	}
	var out []Repeat
	for _, k := range order {
		r := sums[k]
		if r.Calls >= rule.MinCalls && r.Cost > 0 && r.Cost*100 >= int64(max(rule.MinPercent, 0))*cost {
			out = append(out, *r)
		}
	}
	slices.SortStableFunc(out, func(a, b Repeat) int {
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(b.Calls, a.Calls))
	})
	return out
}
