package commands

import (
	"cmp"
	"math"
	"slices"
)

// The statistics of diff. A distribution is a histogram of whole
// milliseconds (value -> count): what reports and summaries hold.

// hist is a histogram of milliseconds.
type hist map[int64]int

// add adds n observations of v.
func (h hist) add(v int64, n int) {
	if n > 0 {
		h[v] += n
	}
}

// total returns the number of observations.
func (h hist) total() int {
	n := 0
	for _, c := range h {
		n += c
	}
	return n
}

// values returns the distinct values, smallest first.
func (h hist) values() []int64 {
	vs := make([]int64, 0, len(h))
	for v, c := range h {
		if c > 0 {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}

// median returns the median (the mean of the two middle observations of
// an even number), 0 for no observations.
func (h hist) median() float64 {
	n := h.total()
	if n == 0 {
		return 0
	}
	lo, hi := (n-1)/2, n/2 // 0-based ranks of the middle observations
	var a, b int64
	seen := 0
	gotA := false
	for _, v := range h.values() {
		seen += h[v]
		if !gotA && seen > lo {
			a, gotA = v, true
		}
		if seen > hi {
			b = v
			break
		}
	}
	return float64(a+b) / 2
}

// mannWhitney compares two samples with the Mann–Whitney U test (the
// Wilcoxon rank-sum test): it makes no assumption on the shape of the
// distributions, which costs are far from normal, and works with a few
// samples a side. It returns U of a (the number of pairs (x in a, y in b)
// with x > y, ties counted half) and the two-sided p-value of the normal
// approximation, with the correction for ties and the continuity
// correction; p is 1 when either sample is empty or every value is equal.
// With four or more observations a side, a complete separation is
// significant at 0.05; with three, nothing is.
func mannWhitney(a, b hist) (u, p float64) {
	n1, n2 := float64(a.total()), float64(b.total())
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	// The values of both, with their counts in each.
	type both struct {
		v      int64
		ca, cb int
	}
	var vs []both
	for v, c := range a {
		if c > 0 {
			vs = append(vs, both{v, c, b[v]})
		}
	}
	for v, c := range b {
		if c > 0 && a[v] == 0 {
			vs = append(vs, both{v, 0, c})
		}
	}
	slices.SortFunc(vs, func(x, y both) int { return cmp.Compare(x.v, y.v) })
	// Mid-ranks: a value of t observations after r below has rank
	// r + (t+1)/2.
	var r1, ties, below float64
	for _, x := range vs {
		t := float64(x.ca + x.cb)
		r1 += float64(x.ca) * (below + (t+1)/2)
		ties += t*t*t - t
		below += t
	}
	u = r1 - n1*(n1+1)/2
	n := n1 + n2
	mean := n1 * n2 / 2
	variance := n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return u, 1
	}
	d := math.Abs(u-mean) - 0.5
	if d < 0 {
		d = 0
	}
	z := d / math.Sqrt(variance)
	return u, math.Erfc(z / math.Sqrt2)
}
