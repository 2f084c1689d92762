package commands

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/google/pprof/profile"
	"github.com/matrixgo/matrix/tracer"
)

// pprofCmd writes the call trees of incidents as a gzipped pprof profile.
func pprofCmd(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("pprof", stdout)
	out := fs.String("o", "matrix.pb.gz", `output file ("-" for stdout)`)
	mapPath := fs.String("map", defaultMap, "method mapping file for frames the reports do not name")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	n, err := newNames(*mapPath, flagSet(fs, "map"))
	if err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	b := newProfileBuilder()
	sk := &skipper{w: stderr, cmd: "pprof"}
	err = eachReport(fs.Args(), stdin, sk, func(pos string, _ []byte, r *report) error {
		return b.add(pos, r, n)
	})
	if err == nil {
		err = b.finish(n)
	}
	if err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	if err := noIncidents(b.reports, b.incidents, sk.n); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	p := b.profile()
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	if err := writeOutput(*out, stdout, p.Write); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "matrixexec pprof: wrote %s: %s, %s", *out, plural(b.incidents, "incident", "incidents"), plural(len(b.order), "sample", "samples"))
		switch b.noTree {
		case 0:
		case 1:
			fmt.Fprintf(stderr, " (1 incident without a call tree left out)")
		default:
			fmt.Fprintf(stderr, " (%d incidents without a call tree left out)", b.noTree)
		}
		fmt.Fprintln(stderr)
	}
	return nil
}

// profileBuilder turns incidents into pprof samples as they stream by.
// Every call-tree node is a sample on its call path (leaf first) whose
// values are:
//
//	wall/milliseconds  the node's self time (its cost minus its children's)
//	count/count        incidents: 1 on the node the incident's stack key
//	                   names (the costliest node with the key's id), so
//	                   that flat counts say which functions incidents are
//	                   blamed on, and cumulative counts how many incidents
//	                   passed through a function
//	alloc_space/bytes  what the allocation samples taken in the node (not
//	                   its children) stand for: an estimate of the bytes
//	                   its own code allocated (Frame.AllocBytes)
//
// with labels scene, detail and stackKey. Samples with the same path and
// labels are merged, so the profile grows with the distinct call paths,
// not with the number of incidents.
//
// The reports of one dispatch (LAG, ANR, final) are one incident, as in
// top (see merger): only the incident's own call tree is sampled.
type profileBuilder struct {
	reports, incidents, noTree int
	first                      time.Time
	merge                      *merger

	mapping   *profile.Mapping
	functions map[funcKey]*profile.Function
	locations map[locKey]*profile.Location
	samples   map[uint64][]sampleAcc // by hash of path and labels
	labelSets map[labelKey]labelSet
	order     []*profile.Sample
	locs      []*profile.Location
}

type funcKey struct{ name, file string }

type labelKey struct{ scene, detail, stackKey, waitFor, bound, wokenBy string }

type labelSet struct {
	id int
	m  map[string][]string
}

type sampleAcc struct {
	s      *profile.Sample
	labels int
}

type locKey struct {
	fn   *profile.Function
	line int
}

func newProfileBuilder() *profileBuilder {
	return &profileBuilder{
		mapping:   &profile.Mapping{ID: 1, File: "matrix reports", HasFunctions: true, HasFilenames: true, HasLineNumbers: true},
		functions: map[funcKey]*profile.Function{},
		locations: map[locKey]*profile.Location{},
		samples:   map[uint64][]sampleAcc{},
		labelSets: map[labelKey]labelSet{},
		merge:     newMerger(),
	}
}

// add takes one report; the merger may hold it, so the caller must not
// reuse it.
func (b *profileBuilder) add(pos string, r *report, n *names) error {
	b.reports++
	if !r.incident() || !b.merge.take(pos, r) {
		return nil
	}
	return b.addIncident(pos, r, n)
}

// finish adds the incidents the merger still holds (dispatches without a
// final report). Call it once, after the last add.
func (b *profileBuilder) finish(n *names) error {
	for _, h := range b.merge.rest() {
		if err := b.addIncident(h.pos, h.r, n); err != nil {
			return err
		}
	}
	return nil
}

// addIncident samples the call tree of one incident.
func (b *profileBuilder) addIncident(pos string, r *report, n *names) error {
	b.incidents++
	if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
		if b.first.IsZero() || t.Before(b.first) {
			b.first = t
		}
	}
	nodes, err := resolveTree(pos, r.frames(), n, true)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		b.noTree++
		return nil
	}
	blamed := blamedNode(nodes, r.StackKey)
	locs := make([]*profile.Location, len(nodes))
	for i := range nodes {
		locs[i] = b.location(&nodes[i])
	}
	for i := range nodes {
		count := int64(0)
		if i == blamed {
			count = 1
		}
		if nodes[i].Self == 0 && count == 0 && nodes[i].AllocSelf == 0 {
			continue
		}
		b.locs = b.locs[:0]
		for j := i; j >= 0; j = nodes[j].Parent {
			b.locs = append(b.locs, locs[j])
		}
		b.sample(b.locs, r, &nodes[i], count)
	}
	return nil
}

// blamedNode returns the index of the node a stack key names: the
// costliest wait of the function and reason a wait's key names, or the
// costliest ordinary node with the key's id; else the first root.
func blamedNode(nodes []node, key string) int {
	best := 0
	if fn, reason, ok := tracer.ParseWaitKey(key); ok {
		found := false
		for i := range nodes {
			match := nodes[i].Kind == frameKindWait && nodes[i].Reason == reason || isBoundKind(reason) && nodes[i].Kind == reason ||
				reason == tracer.ReasonCPU && nodes[i].Kind == frameKindSampled
			if match && nodes[i].Func == fn && (!found || nodes[i].Cost > nodes[best].Cost) {
				best, found = i, true
			}
		}
		return best
	}
	id, ok := keyID(key)
	if !ok {
		return best
	}
	found := false
	for i := range nodes {
		if nodes[i].ID == id && nodes[i].Kind != frameKindWait && !isBoundKind(nodes[i].Kind) && (!found || nodes[i].Cost > nodes[best].Cost) {
			best, found = i, true
		}
	}
	return best
}

func (b *profileBuilder) location(nd *node) *profile.Location {
	fk := funcKey{nd.Name, nd.File}
	fn := b.functions[fk]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(b.functions) + 1), Name: nd.Name, SystemName: nd.Name, Filename: nd.File}
		if nd.Kind != frameKindWait {
			fn.StartLine = int64(nd.Line)
		}
		b.functions[fk] = fn
	}
	lk := locKey{fn, nd.Line}
	loc := b.locations[lk]
	if loc == nil {
		loc = &profile.Location{ID: uint64(len(b.locations) + 1), Mapping: b.mapping, Line: []profile.Line{{Function: fn, Line: int64(nd.Line)}}}
		b.locations[lk] = loc
	}
	return loc
}

func (b *profileBuilder) sample(locs []*profile.Location, r *report, nd *node, count int64) {
	wall := nd.Self
	labels := b.labels(r, nd.For, nd.Bound, nd.WokenBy)
	// FNV-1a of the path and the labels; equal keys are compared.
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		h ^= v
		h *= 1099511628211
	}
	for _, l := range locs {
		mix(l.ID)
	}
	mix(uint64(labels.id) << 32)
	for _, acc := range b.samples[h] {
		if acc.labels == labels.id && slices.Equal(acc.s.Location, locs) {
			acc.s.Value[0] += wall
			acc.s.Value[1] += count
			acc.s.Value[2] += int64(min(nd.AllocSelf, math.MaxInt64))
			return
		}
	}
	s := &profile.Sample{
		Location: slices.Clone(locs),
		Value:    []int64{wall, count, int64(min(nd.AllocSelf, math.MaxInt64))},
		Label:    labels.m,
	}
	b.samples[h] = append(b.samples[h], sampleAcc{s, labels.id})
	b.order = append(b.order, s)
}

// labels returns the labels of r's samples, with waitFor for the sample
// of a wait that says what it waited for, wokenBy for that of a wait
// another goroutine ended ("(*pool).work pool.go:31") and bound for a
// sample inside a boundary (its name, "db SELECT …"): one map for all the
// samples with the same labels, and its number.
func (b *profileBuilder) labels(r *report, waitFor, bound, wokenBy string) labelSet {
	k := labelKey{r.Scene, r.Detail, r.StackKey, waitFor, bound, wokenBy}
	l, ok := b.labelSets[k]
	if !ok {
		l = labelSet{len(b.labelSets), map[string][]string{"scene": {r.Scene}, "detail": {r.Detail}, "stackKey": {r.StackKey}}}
		if waitFor != "" {
			l.m["waitFor"] = []string{waitFor}
		}
		if wokenBy != "" {
			l.m["wokenBy"] = []string{wokenBy}
		}
		if bound != "" {
			l.m["bound"] = []string{bound}
		}
		b.labelSets[k] = l
	}
	return l
}

// profile returns the profile of what was added.
func (b *profileBuilder) profile() *profile.Profile {
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "wall", Unit: "milliseconds"}, {Type: "count", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}},
		DefaultSampleType: "wall",
		PeriodType:        &profile.ValueType{Type: "wall", Unit: "milliseconds"},
		Period:            1,
		Mapping:           []*profile.Mapping{b.mapping},
		Sample:            b.order,
		Comments:          []string{fmt.Sprintf("matrixexec pprof: %d incidents from %d reports", b.incidents, b.reports)},
	}
	if !b.first.IsZero() {
		p.TimeNanos = b.first.UnixNano()
	}
	p.Function = make([]*profile.Function, len(b.functions))
	for _, fn := range b.functions {
		p.Function[fn.ID-1] = fn
	}
	p.Location = make([]*profile.Location, len(b.locations))
	for _, l := range b.locations {
		p.Location[l.ID-1] = l
	}
	return p
}
