// Package pgohot reads which functions a profile-guided build inlines at
// hot call sites.
//
// With a CPU profile (go build -pgo), cmd/go turns the profile into a list
// of weighted call edges (go tool preprofile, "GO PREPROFILE V1") and hands
// it to every compile with -pgoprofile. The compiler's inliner then treats
// the callees of the hottest edges — those that make up the top 99 % of
// the total edge weight — as inlinable up to a cost of 2000 instead of 80,
// and inlines them at those call sites. A source rewriter that adds a
// deferred call to such a function would undo that; this package tells it
// which functions they are, with the compiler's own rule.
package pgohot

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Header is the first line of a preprocessed profile.
const Header = "GO PREPROFILE V1"

// cdfThreshold is the share of the total edge weight, in percent, that
// the hottest edges make up (cmd/compile's
// inlineCDFHotCallSiteThresholdPercent).
const cdfThreshold = 99

// Profile is the set of hot callees of a preprocessed profile.
type Profile struct {
	hot map[string]bool
}

// IsPreprocessed reports whether data starts like a preprocessed profile
// (a raw pprof profile, as Go 1.22 passes it, does not).
func IsPreprocessed(data []byte) bool {
	return bytes.HasPrefix(data, []byte(Header+"\n"))
}

// Read parses a preprocessed profile.
func Read(r io.Reader) (*Profile, error) {
	type edge struct {
		callee string
		weight int64
	}
	var edges []edge
	var total int64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	if h, ok := next(); !ok || h != Header {
		return nil, fmt.Errorf("pgo profile: not a preprocessed profile (want %q on line 1)", Header)
	}
	for {
		if _, ok := next(); !ok { // caller
			break
		}
		callee, ok := next()
		if !ok {
			return nil, fmt.Errorf("pgo profile: line %d: edge without callee", line)
		}
		w, ok := next()
		if !ok {
			return nil, fmt.Errorf("pgo profile: line %d: edge without weight", line)
		}
		fields := strings.Fields(w)
		if len(fields) != 2 {
			return nil, fmt.Errorf("pgo profile: line %d: want call site offset and weight, got %q", line, w)
		}
		weight, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || weight < 0 {
			return nil, fmt.Errorf("pgo profile: line %d: bad weight %q", line, fields[1])
		}
		edges = append(edges, edge{callee, weight})
		total += weight
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pgo profile: %w", err)
	}
	// The file is sorted by weight already; sort again (stably) so that
	// the rule does not depend on it.
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].weight > edges[j].weight })
	p := &Profile{hot: map[string]bool{}}
	var cum int64
	for _, e := range edges {
		p.hot[e.callee] = true
		cum += e.weight
		if total > 0 && float64(cum)*100/float64(total) > cdfThreshold {
			break // this edge is the last that makes it over the threshold
		}
	}
	return p, nil
}

// Hot reports whether the function with the given linker name (such as
// example.com/pkg.(*T).M) is the callee of a hot call edge.
func (p *Profile) Hot(linkName string) bool {
	return p != nil && p.hot[linkName]
}

// Len returns the number of hot callees.
func (p *Profile) Len() int {
	if p == nil {
		return 0
	}
	return len(p.hot)
}
