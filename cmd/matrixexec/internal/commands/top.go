package commands

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/matrixgo/matrix/tracer"
)

// Grouping dimensions of top and html.
const (
	byStackKey = "stackKey"
	byScene    = "scene"
	// byRepeat groups by N+1 pattern (report.repeatKey); the incidents
	// without one make one group.
	byRepeat = "repeat"
)

// topShown is how many of a group's scenes (or stack keys) are listed.
const topShown = 5

// topResult is what top prints with -json, and what html shows.
type topResult struct {
	// By is the grouping: "stackKey", "scene" or "repeat".
	By string `json:"by"`
	// Reports is the number of reports read, Incidents the slow calls,
	// lags, ANRs and slow start-ups (tag Trace_EvilMethod) among them, the
	// reports of one dispatch counted once (see merger).
	Reports   int `json:"reports"`
	Incidents int `json:"incidents"`
	// HeldBack is the number of dispatches the tracer held back (its
	// bound of reports per scene and minute), as the reports read count
	// them: incidents that have no report of their own.
	HeldBack uint64 `json:"heldBack,omitempty"`
	// Groups are sorted by total cost, largest first.
	Groups []topGroup `json:"groups"`
}

// topGroup is one group of incidents.
type topGroup struct {
	// Key is the stack key, the scene or the N+1 pattern's key ("" for
	// incidents without one).
	Key string `json:"key"`
	// Repeat is the group's N+1 pattern as people read it (grouping by
	// repeat), from its costliest incident.
	Repeat string `json:"repeat,omitempty"`
	// Function is the function the stack key names (of the
	// representative's key when grouping by scene).
	Function string `json:"function,omitempty"`
	Count    int    `json:"count"`
	// HeldBack counts the dispatches held back before the group's
	// reports (of their scenes, by the tracer's bound per scene and
	// minute).
	HeldBack uint64 `json:"heldBack,omitempty"`
	TotalMs  int64  `json:"totalMs"`
	// AllocBytes is what the group's incidents allocated on the heap, in
	// all (their reports' allocBytes).
	AllocBytes uint64 `json:"allocBytes,omitempty"`
	P50Ms      int64  `json:"p50Ms"`
	P95Ms      int64  `json:"p95Ms"`
	MaxMs      int64  `json:"maxMs"`
	// Details counts the incidents per detail (NORMAL, LAG, ANR, STARTUP).
	Details []counted `json:"details"`
	// Watchdog counts the LAG and ANR reports (in this order) that are
	// part of the group's incidents: reports of a dispatch made before its
	// final report (or its last LAG or ANR report).
	Watchdog []counted `json:"watchdog,omitempty"`
	// Scenes (grouping by stack key or repeat) or StackKeys (grouping by
	// scene)
	// are the most frequent values of the other dimension.
	Scenes    []counted `json:"scenes,omitempty"`
	StackKeys []counted `json:"stackKeys,omitempty"`
	// FirstSeen and LastSeen are the earliest and latest report times
	// (RFC 3339), when the reports have them.
	FirstSeen string `json:"firstSeen,omitempty"`
	LastSeen  string `json:"lastSeen,omitempty"`
	// Representative is the costliest incident of the group.
	Representative representative `json:"representative"`
}

// counted is a value and how many incidents had it.
type counted struct {
	Value string `json:"value"`
	// Function is the function a stack key names.
	Function string `json:"function,omitempty"`
	Count    int    `json:"count"`
}

// representative is one incident shown for its group, with its call tree.
type representative struct {
	Source   string `json:"source"` // file:line of the report
	CostMs   int64  `json:"costMs"`
	Detail   string `json:"detail,omitempty"`
	Scene    string `json:"scene,omitempty"`
	StackKey string `json:"stackKey,omitempty"`
	// Repeat is the incident's N+1 pattern, as people read it.
	Repeat string `json:"repeat,omitempty"`
	Time   string `json:"time,omitempty"`
	Tree   []node `json:"tree"`
	// ThreadStack is the goroutine's stack when the incident is a LAG or
	// ANR report.
	ThreadStack string `json:"threadStack,omitempty"`
	// History are the LAG and ANR reports of the incident's dispatch
	// before it, earliest first.
	History []watchEvent `json:"history,omitempty"`
}

// aggregator groups incidents as they stream by, keeping per group only
// counters, a histogram of costs and the costliest report.
type aggregator struct {
	by        string
	reports   int
	incidents int
	heldBack  uint64
	groups    map[string]*groupAcc
	keyFuncs  map[string]string // stack key -> the function it names, from frames
	merge     *merger
	// The incident of each dispatch (see report.dispatchKey): its group
	// and its position.
	dispatchGroup map[string]*groupAcc
	dispatchPos   map[string]string
	// pendingHeld are the held-back counts of LAG and ANR reports merged
	// into their dispatch's incident, by dispatch (report.dispatchKey).
	pendingHeld map[string]uint64
}

type groupAcc struct {
	key         string
	count       int
	heldBack    uint64
	total       int64
	alloc       uint64
	max         int64
	costs       map[int64]int // ms -> incidents
	details     map[string]int
	watch       map[string]int // LAG and ANR reports merged into incidents
	others      map[string]int
	first, last time.Time
	rep         *report
	repPos      string
}

func newAggregator(by string) *aggregator {
	return &aggregator{by: by, groups: map[string]*groupAcc{}, keyFuncs: map[string]string{},
		merge: newMerger(), dispatchGroup: map[string]*groupAcc{}, dispatchPos: map[string]string{}, pendingHeld: map[string]uint64{}}
}

// add takes one report; r is kept if it becomes a representative (or is
// held by the merger), so the caller must not reuse it.
func (a *aggregator) add(pos string, r *report) {
	a.reports++
	if !r.incident() {
		return
	}
	a.heldBack = satAddU(a.heldBack, r.HeldBack)
	if !a.merge.take(pos, r) {
		a.heldBackOf(r)
		return
	}
	a.addIncident(pos, r)
}

// heldBackOf adds the held-back count of r, a LAG or ANR report merged
// into its dispatch's incident, to the group of that incident once it is
// known; see finish.
func (a *aggregator) heldBackOf(r *report) {
	if r.HeldBack == 0 {
		return
	}
	if dk, ok := r.dispatchKey(); ok {
		a.pendingHeld[dk] = satAddU(a.pendingHeld[dk], r.HeldBack)
	}
}

func satAddU(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// finish adds the incidents the merger still holds (dispatches without a
// final report) and counts the LAG and ANR reports merged into each
// group's incidents. Call it once, after the last add.
func (a *aggregator) finish() {
	for _, h := range a.merge.rest() {
		a.addIncident(h.pos, h.r)
	}
	for key, n := range a.pendingHeld {
		if g := a.dispatchGroup[key]; g != nil {
			g.heldBack = satAddU(g.heldBack, n)
		}
	}
	for key, events := range a.merge.history {
		g := a.dispatchGroup[key]
		if g == nil {
			continue
		}
		for _, e := range events {
			if e.Source != a.dispatchPos[key] {
				g.watch[e.Detail]++
			}
		}
	}
}

// addIncident counts one incident in its group.
func (a *aggregator) addIncident(pos string, r *report) {
	a.incidents++
	key, other := r.StackKey, r.Scene
	switch a.by {
	case byScene:
		key, other = r.Scene, r.StackKey
	case byRepeat:
		key = r.repeatKey()
	}
	g := a.groups[key]
	if g == nil {
		g = &groupAcc{key: key, costs: map[int64]int{}, details: map[string]int{}, watch: map[string]int{}, others: map[string]int{}}
		a.groups[key] = g
	}
	if dk, ok := r.dispatchKey(); ok {
		a.dispatchGroup[dk], a.dispatchPos[dk] = g, pos
	}
	cost := max(r.Cost, 0)
	g.count++
	g.heldBack = satAddU(g.heldBack, r.HeldBack)
	g.total = satAdd(g.total, cost)
	g.alloc = satAddU(g.alloc, r.AllocBytes)
	g.costs[cost]++
	g.details[r.Detail]++
	g.others[other]++
	if t, err := time.Parse(time.RFC3339Nano, r.Time); err == nil {
		if g.first.IsZero() || t.Before(g.first) {
			g.first = t
		}
		if g.last.IsZero() || t.After(g.last) {
			g.last = t
		}
	}
	if g.rep == nil || cost > g.max || (cost == g.max && len(g.rep.frames()) == 0 && len(r.frames()) > 0) {
		g.rep, g.repPos = r, pos
	}
	g.max = max(g.max, cost)
	if _, ok := a.keyFuncs[r.StackKey]; !ok && r.StackKey != "" {
		if fn, _, ok := tracer.ParseWaitKey(r.StackKey); ok {
			a.keyFuncs[r.StackKey] = fn
		} else if id, ok := keyID(r.StackKey); ok {
			for _, f := range r.frames() {
				if f.ID == id && f.Kind != frameKindWait && f.Func != "" {
					a.keyFuncs[r.StackKey] = f.Func
					break
				}
			}
		}
	}
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// result sorts the groups and resolves the names of what it shows: the
// functions of stack keys and the representatives' trees.
func (a *aggregator) result(n *names) (*topResult, error) {
	res := &topResult{By: a.by, Reports: a.reports, Incidents: a.incidents, HeldBack: a.heldBack}
	keyFunc := func(key string) (string, error) {
		if key == "" {
			return "", nil
		}
		if f, ok := a.keyFuncs[key]; ok {
			return f, nil
		}
		id, ok := keyID(key)
		if !ok {
			return "", nil
		}
		f := reportFrame{}
		f.ID = id
		name, _, _, ok := n.function(&f)
		if !ok {
			return "", n.unnamed("stack key "+key, id)
		}
		return name, nil
	}
	for _, g := range a.groups {
		tg := topGroup{
			Key:        g.key,
			Count:      g.count,
			HeldBack:   g.heldBack,
			TotalMs:    g.total,
			AllocBytes: g.alloc,
			P50Ms:      percentile(g.costs, g.count, 50),
			P95Ms:      percentile(g.costs, g.count, 95),
			MaxMs:      g.max,
			Details:    topCounted(g.details, 0),
		}
		for _, detail := range []string{tracer.DetailLag, tracer.DetailANR} {
			if n := g.watch[detail]; n > 0 {
				tg.Watchdog = append(tg.Watchdog, counted{Value: detail, Count: n})
			}
		}
		if !g.first.IsZero() {
			tg.FirstSeen = g.first.Format(time.RFC3339Nano)
			tg.LastSeen = g.last.Format(time.RFC3339Nano)
		}
		r := g.rep
		tree, err := resolveTree(g.repPos, r.frames(), n, true)
		if err != nil {
			return nil, err
		}
		tg.Representative = representative{Source: g.repPos, CostMs: r.Cost, Detail: r.Detail, Scene: r.Scene, StackKey: r.StackKey, Time: r.Time, Tree: tree,
			ThreadStack: r.ThreadStack, History: a.merge.historyOf(r, g.repPos)}
		if r.Repeat != nil {
			tg.Representative.Repeat = r.Repeat.String()
			if a.by == byRepeat {
				tg.Repeat = tg.Representative.Repeat
			}
		}
		if tg.Function, err = keyFunc(r.StackKey); err != nil {
			return nil, err
		}
		others := topCounted(g.others, topShown)
		if a.by == byScene {
			for i := range others {
				if others[i].Function, err = keyFunc(others[i].Value); err != nil {
					return nil, err
				}
			}
			tg.StackKeys = others
		} else {
			tg.Scenes = others
		}
		res.Groups = append(res.Groups, tg)
	}
	slices.SortFunc(res.Groups, func(x, y topGroup) int {
		return cmp.Or(cmp.Compare(y.TotalMs, x.TotalMs), cmp.Compare(y.Count, x.Count), strings.Compare(x.Key, y.Key))
	})
	return res, nil
}

// percentile returns the p-th percentile (nearest rank: the smallest cost
// at least p % of the incidents do not exceed) of a histogram of n costs.
func percentile(hist map[int64]int, n int, p float64) int64 {
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	costs := make([]int64, 0, len(hist))
	for c := range hist {
		costs = append(costs, c)
	}
	slices.Sort(costs)
	seen := 0
	for _, c := range costs {
		seen += hist[c]
		if seen >= rank {
			return c
		}
	}
	return costs[len(costs)-1]
}

// topCounted returns the values of m by count, largest first, at most
// limit of them (all if limit is 0).
func topCounted(m map[string]int, limit int) []counted {
	out := make([]counted, 0, len(m))
	for v, c := range m {
		out = append(out, counted{Value: v, Count: c})
	}
	slices.SortFunc(out, func(x, y counted) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), strings.Compare(x.Value, y.Value))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// errNoIncidents is returned for input without any incident.
var errNoIncidents = errors.New("no incidents")

// aggregate reads the reports of inputs (stdin when none) and groups them;
// malformed lines are skipped, through sk.
func aggregate(inputs []string, stdin io.Reader, by string, n *names, sk *skipper) (*topResult, error) {
	if by != byStackKey && by != byScene && by != byRepeat {
		return nil, fmt.Errorf("unknown grouping %q: want stackKey, scene or repeat", by)
	}
	a := newAggregator(by)
	err := eachReport(inputs, stdin, sk, func(pos string, _ []byte, r *report) error {
		a.add(pos, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.finish()
	if err := noIncidents(a.reports, a.incidents, sk.n); err != nil {
		return nil, err
	}
	return a.result(n)
}

// noIncidents explains input without incidents; skipped is the number of
// malformed lines skipped.
func noIncidents(reports, incidents, skipped int) error {
	switch {
	case reports == 0 && skipped > 0:
		return fmt.Errorf("%w: no line of the input is a report (%s skipped)", errNoIncidents, plural(skipped, "malformed line", "malformed lines"))
	case reports == 0:
		return fmt.Errorf("%w: the input is empty (no reports)", errNoIncidents)
	case incidents == 0:
		return fmt.Errorf("%w: none of the %d reports is a slow call, lag, ANR or slow start-up (tag Trace_EvilMethod)", errNoIncidents, reports)
	}
	return nil
}

// top prints incidents grouped by stack key, scene or N+1 pattern.
func top(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("top", stdout)
	by := fs.String("by", byStackKey, "group by stackKey, scene or repeat (N+1 pattern)")
	asJSON := fs.Bool("json", false, "print JSON")
	verbose := fs.Bool("v", false, "also print the goroutine stacks of LAG and ANR reports")
	mapPath := fs.String("map", defaultMap, "method mapping file for frames the reports do not name")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	n, err := newNames(*mapPath, flagSet(fs, "map"))
	if err != nil {
		return fmt.Errorf("top: %w", err)
	}
	res, err := aggregate(fs.Args(), stdin, *by, n, &skipper{w: stderr, cmd: "top"})
	if err != nil {
		return fmt.Errorf("top: %w", err)
	}
	w := bufio.NewWriter(stdout)
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("top: %w", err)
		}
	} else {
		printTop(w, res, *verbose)
	}
	return w.Flush()
}

// printTop writes the groups for people; verbose adds the goroutine
// stacks of the LAG and ANR reports of each representative.
func printTop(w io.Writer, res *topResult, verbose bool) {
	held := ""
	if res.HeldBack > 0 {
		held = fmt.Sprintf("; %d more held back by the tracer's bound per scene and minute", res.HeldBack)
	}
	fmt.Fprintf(w, "%s in %s by %s (%s read%s)\n", plural(res.Incidents, "incident", "incidents"),
		plural(len(res.Groups), "group", "groups"), res.By, plural(res.Reports, "report", "reports"), held)
	for i, g := range res.Groups {
		fmt.Fprintln(w)
		key := g.Key
		if key == "" {
			key = "(none)"
		}
		switch res.By {
		case byScene:
			key = fmt.Sprintf("%q", g.Key)
		case byRepeat:
			key = cmp.Or(g.Repeat, "(no N+1)")
		}
		fmt.Fprintf(w, "%d. %s %s", i+1, res.By, key)
		if g.Function != "" && res.By != byRepeat {
			fmt.Fprintf(w, "  %s", g.Function)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "   count %d  total %dms  p50 %dms  p95 %dms  max %dms\n", g.Count, g.TotalMs, g.P50Ms, g.P95Ms, g.MaxMs)
		if g.HeldBack > 0 {
			fmt.Fprintf(w, "   held back %d more (not reported: the tracer's bound per scene and minute)\n", g.HeldBack)
		}
		fmt.Fprintf(w, "   details %s\n", countedList(g.Details, false))
		if len(g.Watchdog) > 0 {
			fmt.Fprintf(w, "   before  %s (reports of the same dispatches while they ran)\n", countedList(g.Watchdog, false))
		}
		if len(g.Scenes) > 0 {
			fmt.Fprintf(w, "   scenes  %s\n", countedList(g.Scenes, true))
		}
		if len(g.StackKeys) > 0 {
			fmt.Fprintf(w, "   keys    %s\n", countedList(g.StackKeys, false))
		}
		if g.FirstSeen != "" {
			fmt.Fprintf(w, "   first %s  last %s\n", g.FirstSeen, g.LastSeen)
		}
		r := g.Representative
		fmt.Fprintf(w, "   costliest: %dms %s %q %s (%s)\n", r.CostMs, r.Detail, r.Scene, r.Time, r.Source)
		if r.Repeat != "" && res.By != byRepeat {
			fmt.Fprintf(w, "     %s\n", r.Repeat)
		}
		for _, h := range r.History {
			fmt.Fprintf(w, "     after %s at %dms %s (%s)\n", h.Detail, h.CostMs, h.Time, h.Source)
			if verbose {
				printStack(w, "       ", h.ThreadStack)
			}
		}
		if verbose && r.ThreadStack != "" {
			fmt.Fprintf(w, "     goroutine stack at the %s report:\n", r.Detail)
			printStack(w, "       ", r.ThreadStack)
		}
		if len(r.Tree) == 0 {
			fmt.Fprintf(w, "     no call tree\n")
		}
		printTree(w, "   ", r.Tree)
	}
}

// printStack writes a goroutine stack indented, or says there is none.
func printStack(w io.Writer, indent, stack string) {
	if stack == "" {
		fmt.Fprintf(w, "%s(no goroutine stack in the report)\n", indent)
		return
	}
	for _, l := range strings.Split(strings.TrimRight(stack, "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
}

// plural returns "1 one" or "n many".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func countedList(cs []counted, quote bool) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		v := c.Value
		switch {
		case quote:
			v = fmt.Sprintf("%q", v)
		case v == "":
			v = "(none)"
		}
		if c.Function != "" {
			v += " " + c.Function
		}
		parts[i] = fmt.Sprintf("%s ×%d", v, c.Count)
	}
	return strings.Join(parts, ", ")
}
