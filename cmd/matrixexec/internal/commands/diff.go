package commands

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/tracer"
)

// diff compares two report sets, BASE and HEAD, the way a regression gate
// needs: per scene, the distribution of dispatch cost; per scene and path
// of the call trees, the calls, total and self time per dispatch. A set is
// read from summaries (Trace_Summary, written under MATRIX_SUMMARY=on:
// every dispatch) when it has any, else from its slow-call reports (only
// the dispatches that were reported: the slow ones). Changes are judged by
// the Mann–Whitney U test (mannWhitney).

// Diff finding kinds.
const (
	// findNew is a path HEAD has and BASE does not.
	findNew = "new"
	// findCalls is a path whose calls per dispatch changed (×1 → ×30).
	findCalls = "calls"
	// findGone is a path BASE has and HEAD does not.
	findGone = "gone"
	// findTime is a path whose time per dispatch changed.
	findTime = "time"
	// findScene is a scene whose median cost changed.
	findScene = "scene"
)

// diffOptions are diff's thresholds.
type diffOptions struct {
	// Threshold is the relative change (0.1 for 10%) and MinMs the change
	// in ms a change must reach, Alpha the p-value it must be under.
	Threshold float64 `json:"threshold"`
	MinMs     float64 `json:"minMs"`
	Alpha     float64 `json:"alpha"`
}

// What the scenes of a set come from.
const (
	sourceSummary = "summaries"
	sourceReports = "slow-call reports"
)

// diffSet is one side of a comparison.
type diffSet struct {
	// Inputs are the files read.
	Inputs []string `json:"inputs"`
	// Source is what the scenes come from: sourceSummary or
	// sourceReports.
	Source     string `json:"source"`
	Reports    int    `json:"reports"`
	Dispatches int    `json:"dispatches"`
	Scenes     int    `json:"scenes"`
	// Dropped counts dispatches the programs did not summarise.
	Dropped uint64 `json:"dropped,omitempty"`

	dropped map[string]uint64 // per process: each of its summaries has its count

	summary   map[string]*sceneAgg
	incidents map[string]*sceneAgg
	scenes    map[string]*sceneAgg
}

// sceneAgg is what a set holds of one scene.
type sceneAgg struct {
	costs    hist
	untraced int
	paths    map[string]*pathAgg
}

// traced returns the number of the scene's dispatches with a call tree.
func (s *sceneAgg) traced() int { return s.costs.total() - s.untraced }

// pathAgg is what a set holds of one path of a scene.
type pathAgg struct {
	calls      int64
	dispatches int
	total      int64
	self       int64
	costs      hist // the path's time in the dispatches that have it
}

// perDispatch returns the path's time in each of the n traced dispatches
// of its scene, 0 in those without it.
func (p *pathAgg) perDispatch(n int) hist {
	h := hist{}
	if p == nil {
		h.add(0, n)
		return h
	}
	for v, c := range p.costs {
		h.add(v, c)
	}
	h.add(0, n-p.dispatches)
	return h
}

func newSceneAgg() *sceneAgg { return &sceneAgg{costs: hist{}, paths: map[string]*pathAgg{}} }

func (s *sceneAgg) path(p string) *pathAgg {
	a := s.paths[p]
	if a == nil {
		a = &pathAgg{costs: hist{}}
		s.paths[p] = a
	}
	return a
}

// finding is one change diff reports.
type finding struct {
	Kind     string `json:"kind"`
	Scene    string `json:"scene"`
	Path     string `json:"path,omitempty"`
	Function string `json:"function,omitempty"`
	// Regression is a change for the worse.
	Regression bool `json:"regression"`
	// BaseN and HeadN are the dispatches compared.
	BaseN int `json:"baseN"`
	HeadN int `json:"headN"`
	// BaseCalls and HeadCalls are a path's calls per dispatch.
	BaseCalls float64 `json:"baseCalls,omitempty"`
	HeadCalls float64 `json:"headCalls,omitempty"`
	// BaseMs and HeadMs are a scene's median cost, or a path's mean time
	// per dispatch; DeltaMs the change, DeltaPct the change in % of
	// BaseMs (0 when BaseMs is 0).
	BaseMs   float64 `json:"baseMs"`
	HeadMs   float64 `json:"headMs"`
	DeltaMs  float64 `json:"deltaMs"`
	DeltaPct float64 `json:"deltaPct"`
	// BaseSelfMs and HeadSelfMs are a path's self time per dispatch.
	BaseSelfMs float64 `json:"baseSelfMs,omitempty"`
	HeadSelfMs float64 `json:"headSelfMs,omitempty"`
	// P is the two-sided p-value of the Mann–Whitney U test.
	P float64 `json:"p"`
}

// diffResult is what diff prints with -format json.
type diffResult struct {
	Base    diffSet     `json:"base"`
	Head    diffSet     `json:"head"`
	Options diffOptions `json:"options"`
	// Compared are the scenes both sets have; OnlyBase and OnlyHead the
	// others.
	Compared int      `json:"compared"`
	OnlyBase []string `json:"onlyBase,omitempty"`
	OnlyHead []string `json:"onlyHead,omitempty"`
	// Findings come in order: new paths and call-count changes that cost
	// more, slower scenes, slower paths, then the changes for the better,
	// each group largest change first.
	Findings []finding `json:"findings"`
	// Regressions counts the scenes whose median grew beyond the
	// thresholds: what makes diff exit with status 1.
	Regressions int `json:"regressions"`
}

// Diff output formats.
const (
	formatText = "text"
	formatMD   = "md"
	formatJSON = "json"
)

func diffCmd(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", stderr)
	threshold := fs.String("threshold", "10%", "relative change of a scene's median (or a path's time) to report, as 10% or 0.1")
	minMs := fs.Float64("min-ms", 5, "change in ms to report")
	alpha := fs.Float64("alpha", 0.05, "significance level of the Mann–Whitney U test")
	format := fs.String("format", formatText, "output format: text, md or json")
	mapPath := fs.String("map", defaultMap, "method mapping file")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: matrixexec diff [-threshold 10%] [-min-ms 5] [-alpha 0.05] [-format text|md|json] [-map FILE] BASE HEAD")
		return exitError(2)
	}
	th, err := parseThreshold(*threshold)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if *minMs < 0 || !(*alpha > 0 && *alpha < 1) {
		return fmt.Errorf("diff: want -min-ms ≥ 0 and 0 < -alpha < 1")
	}
	switch *format {
	case formatText, formatMD, formatJSON:
	default:
		return fmt.Errorf("diff: unknown format %q: want text, md or json", *format)
	}
	n, err := newNames(*mapPath, flagSet(fs, "map"))
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	sk := &skipper{w: stderr, cmd: "diff"}
	base, err := readDiffSet(fs.Arg(0), n, sk)
	if err != nil {
		return fmt.Errorf("diff: base: %w", err)
	}
	head, err := readDiffSet(fs.Arg(1), n, sk)
	if err != nil {
		return fmt.Errorf("diff: head: %w", err)
	}
	res := compare(base, head, diffOptions{Threshold: th, MinMs: *minMs, Alpha: *alpha})
	switch *format {
	case formatJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	case formatMD:
		err = writeDiffMD(stdout, res)
	default:
		err = writeDiffText(stdout, res)
	}
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if res.Regressions > 0 {
		return exitError(1)
	}
	return nil
}

// parseThreshold reads "10%" or "0.1".
func parseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("-threshold %q: want a percentage (10%%) or a fraction (0.1)", s)
	}
	return v, nil
}

// diffInputs returns the files of a set: the file itself, or the regular
// files of a directory and its subdirectories (names starting with a dot
// left out), by name.
func diffInputs(arg string) ([]string, error) {
	fi, err := os.Stat(arg)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{arg}, nil
	}
	var files []string
	err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != arg {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no report files in the directory", arg)
	}
	return files, nil
}

// readDiffSet reads the reports of a set.
func readDiffSet(arg string, n *names, sk *skipper) (*diffSet, error) {
	inputs, err := diffInputs(arg)
	if err != nil {
		return nil, err
	}
	s := &diffSet{Inputs: inputs, summary: map[string]*sceneAgg{}, incidents: map[string]*sceneAgg{}, dropped: map[string]uint64{}}
	m := newMerger()
	err = eachReport(inputs, nil, sk, func(pos string, _ []byte, r *report) error {
		s.Reports++
		switch {
		case r.Tag == tracer.TagSummary:
			s.addSummary(r)
		case r.incident() && r.Detail != tracer.DetailStartup:
			if m.take(pos, r) && !r.watchdog() {
				s.addIncident(r, n)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.scenes, s.Source = s.incidents, sourceReports
	if len(s.summary) > 0 {
		s.scenes, s.Source = s.summary, sourceSummary
	}
	s.Scenes = len(s.scenes)
	for _, sc := range s.scenes {
		s.Dispatches += sc.costs.total()
	}
	if s.Dispatches == 0 {
		return nil, fmt.Errorf("%s: no dispatches: no Trace_Summary nor slow-call reports (run with MATRIX_REPORT set, and MATRIX_SUMMARY=on to record every dispatch)", arg)
	}
	return s, nil
}

// addSummary adds a Trace_Summary report: the summary of a scene in one
// process.
func (s *diffSet) addSummary(r *report) {
	sc := s.summary[r.Scene]
	if sc == nil {
		sc = newSceneAgg()
		s.summary[r.Scene] = sc
	}
	for _, c := range r.Costs {
		sc.costs.add(c[0], int(c[1]))
	}
	sc.untraced += max(r.Untraced, 0)
	for _, p := range r.Paths {
		a := sc.path(p.Path)
		a.calls += p.Calls
		a.dispatches += p.Dispatches
		a.total += p.TotalMs
		a.self += p.SelfMs
		for _, c := range p.Costs {
			a.costs.add(c[0], int(c[1]))
		}
	}
	if r.Dropped > 0 {
		key := r.Process + "\x00" + strconv.FormatInt(r.PID, 10)
		if r.Dropped > s.dropped[key] {
			s.Dropped += r.Dropped - s.dropped[key]
			s.dropped[key] = r.Dropped
		}
	}
}

// addIncident adds the dispatch of a slow-call report.
func (s *diffSet) addIncident(r *report, n *names) {
	sc := s.incidents[r.Scene]
	if sc == nil {
		sc = newSceneAgg()
		s.incidents[r.Scene] = sc
	}
	sc.costs.add(max(r.Cost, 0), 1)
	frames := r.frames()
	if len(frames) == 0 {
		sc.untraced++
		return
	}
	named := make([]tracer.Frame, len(frames))
	for i, f := range frames {
		if f.Func == "" && f.Kind != frameKindWait {
			if name, _, _, ok := n.function(&f); ok {
				f.Func = name
			}
		}
		named[i] = f
	}
	for _, nd := range tracer.FramePaths(named) {
		a := sc.path(nd.Path)
		a.calls += int64(nd.Count)
		a.dispatches++
		a.total += nd.Cost
		a.self += nd.Self
		a.costs.add(nd.Cost, 1)
	}
}

// compare compares the scenes of two sets.
func compare(base, head *diffSet, o diffOptions) *diffResult {
	res := &diffResult{Base: *base, Head: *head, Options: o, Findings: []finding{}}
	for name := range base.scenes {
		if _, ok := head.scenes[name]; !ok {
			res.OnlyBase = append(res.OnlyBase, name)
		}
	}
	for name := range head.scenes {
		if _, ok := base.scenes[name]; !ok {
			res.OnlyHead = append(res.OnlyHead, name)
		}
	}
	slices.Sort(res.OnlyBase)
	slices.Sort(res.OnlyHead)
	// Every scene in both sets is compared at once: each is judged at
	// Alpha divided by their number (Bonferroni), and its paths at that
	// level divided again by theirs, so that the chance of any false
	// finding in the whole comparison stays under Alpha.
	so := o
	if common := len(base.scenes) - len(res.OnlyBase); common > 1 {
		so.Alpha = o.Alpha / float64(common)
	}
	for name, b := range base.scenes {
		h, ok := head.scenes[name]
		if !ok {
			continue
		}
		res.Compared++
		if f, ok := compareScene(name, b, h, so); ok {
			res.Findings = append(res.Findings, f)
			if f.Regression {
				res.Regressions++
			}
		}
		res.Findings = append(res.Findings, comparePaths(name, b, h, so)...)
	}
	slices.SortFunc(res.Findings, func(x, y finding) int {
		if c := cmp.Compare(findingGroup(&x), findingGroup(&y)); c != 0 {
			return c
		}
		if c := cmp.Compare(math.Abs(y.DeltaMs), math.Abs(x.DeltaMs)); c != 0 {
			return c
		}
		if c := cmp.Compare(strings.Count(x.Path, tracer.PathSep), strings.Count(y.Path, tracer.PathSep)); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.Scene, y.Scene), cmp.Compare(x.Path, y.Path))
	})
	return res
}

// findingGroup orders findings: new paths and call-count changes that
// cost more, slower scenes, slower paths, then the rest.
func findingGroup(f *finding) int {
	switch {
	case !f.Regression:
		return 3
	case f.Kind == findNew || f.Kind == findCalls:
		return 0
	case f.Kind == findScene:
		return 1
	}
	return 2
}

// significant reports whether a change from base to head of delta ms is
// one to report: at least MinMs and, when relative is set, Threshold of
// base, with p under Alpha.
func (o diffOptions) significant(base, delta, p float64, relative bool) bool {
	d := math.Abs(delta)
	if d < o.MinMs || d == 0 || p >= o.Alpha {
		return false
	}
	return !relative || d >= o.Threshold*base
}

func compareScene(name string, b, h *sceneAgg, o diffOptions) (finding, bool) {
	mb, mh := b.costs.median(), h.costs.median()
	_, p := mannWhitney(b.costs, h.costs)
	f := finding{Kind: findScene, Scene: name, BaseN: b.costs.total(), HeadN: h.costs.total(),
		BaseMs: mb, HeadMs: mh, DeltaMs: mh - mb, DeltaPct: pct(mh-mb, mb), P: p}
	if !o.significant(mb, mh-mb, p, true) {
		return f, false
	}
	f.Regression = mh > mb
	return f, true
}

// comparePaths compares the paths of a scene in both sets.
func comparePaths(scene string, b, h *sceneAgg, o diffOptions) []finding {
	nb, nh := b.traced(), h.traced()
	if nb <= 0 || nh <= 0 {
		return nil
	}
	paths := map[string]bool{}
	for p := range b.paths {
		paths[p] = true
	}
	for p := range h.paths {
		paths[p] = true
	}
	// Many paths are compared at once: each is judged at Alpha divided
	// by their number (Bonferroni), so that the chance of any false
	// finding in the scene stays under Alpha.
	po := o
	po.Alpha = o.Alpha / float64(len(paths))
	found := map[string]*finding{}
	var out []finding
	for path := range paths {
		pb, ph := b.paths[path], h.paths[path]
		f := finding{Scene: scene, Path: path, Function: lastFrame(path), BaseN: nb, HeadN: nh}
		if pb != nil {
			f.BaseCalls, f.BaseMs, f.BaseSelfMs = float64(pb.calls)/float64(nb), float64(pb.total)/float64(nb), float64(pb.self)/float64(nb)
		}
		if ph != nil {
			f.HeadCalls, f.HeadMs, f.HeadSelfMs = float64(ph.calls)/float64(nh), float64(ph.total)/float64(nh), float64(ph.self)/float64(nh)
		}
		f.DeltaMs, f.DeltaPct = f.HeadMs-f.BaseMs, pct(f.HeadMs-f.BaseMs, f.BaseMs)
		_, f.P = mannWhitney(pb.perDispatch(nb), ph.perDispatch(nh))
		switch {
		case pb == nil || pb.dispatches == 0:
			f.Kind = findNew
		case ph == nil || ph.dispatches == 0:
			f.Kind = findGone
		case callsChanged(f.BaseCalls, f.HeadCalls):
			f.Kind = findCalls
		default:
			f.Kind = findTime
		}
		if !po.significant(f.BaseMs, f.DeltaMs, f.P, f.Kind == findTime) {
			continue
		}
		f.Regression = f.DeltaMs > 0
		out = append(out, f)
	}
	for i := range out {
		found[out[i].Path] = &out[i]
	}
	// A call-count change under a path whose calls changed as much (the
	// callee of the loop added) is that change again: left out.
	kept := out[:0:0]
	for _, f := range out {
		if f.Kind == findNew || f.Kind == findCalls {
			if i := strings.LastIndex(f.Path, tracer.PathSep); i >= 0 {
				if p := found[f.Path[:i]]; p != nil && p.Kind == f.Kind && sameRatio(p, &f) {
					continue
				}
			}
		}
		kept = append(kept, f)
	}
	return kept
}

// callsChanged reports whether calls per dispatch changed by at least one
// and at least by half.
func callsChanged(b, h float64) bool {
	return math.Abs(h-b) >= 1 && (h >= 1.5*b || h <= b/1.5)
}

// sameRatio reports whether two call-count findings changed their calls
// in the same ratio (within 10%).
func sameRatio(a, b *finding) bool {
	if a.Kind == findNew {
		return true
	}
	ra, rb := a.HeadCalls/a.BaseCalls, b.HeadCalls/b.BaseCalls
	return math.Abs(ra-rb) <= 0.1*math.Max(ra, rb)
}

func pct(delta, base float64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * delta / base
}

// sceneLabel shows a scene: "(no scene)" for a dispatch without one.
func sceneLabel(s string) string {
	if s == "" {
		return "(no scene)"
	}
	return s
}

// lastFrame returns the last frame name of a path.
func lastFrame(path string) string {
	return path[strings.LastIndex(path, tracer.PathSep)+1:]
}

// callsText renders calls per dispatch: "×30", "×2.5".
func callsText(c float64) string {
	if c == math.Trunc(c) {
		return "×" + strconv.FormatFloat(c, 'f', 0, 64)
	}
	return "×" + strconv.FormatFloat(c, 'f', 1, 64)
}

// msDelta renders a change in ms: "+145.0 ms".
func msDelta(d float64) string {
	return fmt.Sprintf("%+.1f ms", d)
}

// pText renders a p-value.
func pText(p float64) string {
	if p < 0.0001 {
		return "p<0.0001"
	}
	return fmt.Sprintf("p=%.4f", p)
}

// what describes a finding's change in words, without its scene.
func (f *finding) what() string {
	switch f.Kind {
	case findScene:
		word := "slower"
		if !f.Regression {
			word = "faster"
		}
		return fmt.Sprintf("scene %s: median %.1f → %.1f ms, %s (%+.0f%%)", word, f.BaseMs, f.HeadMs, msDelta(f.DeltaMs), f.DeltaPct)
	case findNew:
		return fmt.Sprintf("new call %s %s: %s a dispatch", f.Function, callsText(f.HeadCalls), msDelta(f.DeltaMs))
	case findGone:
		return fmt.Sprintf("call gone %s %s: %s a dispatch", f.Function, callsText(f.BaseCalls), msDelta(f.DeltaMs))
	case findCalls:
		return fmt.Sprintf("calls %s %s → %s: %s a dispatch (%.1f → %.1f ms)", f.Function, callsText(f.BaseCalls), callsText(f.HeadCalls), msDelta(f.DeltaMs), f.BaseMs, f.HeadMs)
	}
	word := "slower"
	if !f.Regression {
		word = "faster"
	}
	return fmt.Sprintf("%s %s: %.1f → %.1f ms a dispatch, %s (%+.0f%%), self %.1f → %.1f ms", word, f.Function, f.BaseMs, f.HeadMs, msDelta(f.DeltaMs), f.DeltaPct, f.BaseSelfMs, f.HeadSelfMs)
}

// verdict is diff's conclusion in one line.
func (r *diffResult) verdict() string {
	if r.Regressions > 0 {
		return fmt.Sprintf("REGRESSION: %d of %d scenes slower beyond %.0f%% and %.0f ms (Mann–Whitney U, p < %g)",
			r.Regressions, r.Compared, 100*r.Options.Threshold, r.Options.MinMs, r.Options.Alpha)
	}
	if len(r.Findings) == 0 {
		return "no significant change in " + plural(r.Compared, "scene", "scenes")
	}
	changes := "changes"
	if len(r.Findings) == 1 {
		changes = "change"
	}
	return fmt.Sprintf("no scene slower beyond %.0f%% and %.0f ms; %d %s", 100*r.Options.Threshold, r.Options.MinMs, len(r.Findings), changes)
}

func setLine(name string, s *diffSet) string {
	line := fmt.Sprintf("%s: %s in %s, from %s (%s, %s)", name, plural(s.Dispatches, "dispatch", "dispatches"), plural(s.Scenes, "scene", "scenes"),
		plural(s.Reports, "report", "reports"), s.Source, plural(len(s.Inputs), "file", "files"))
	if s.Source == sourceReports {
		line += " (slow-call reports hold only the slow dispatches: set MATRIX_SUMMARY=on to compare all)"
	}
	if s.Dropped > 0 {
		line += fmt.Sprintf("; %d dispatches not summarised", s.Dropped)
	}
	return line
}

func writeDiffText(w io.Writer, r *diffResult) error {
	var b strings.Builder
	fmt.Fprintln(&b, setLine("base", &r.Base))
	fmt.Fprintln(&b, setLine("head", &r.Head))
	fmt.Fprintln(&b, r.verdict())
	for i := range r.Findings {
		f := &r.Findings[i]
		fmt.Fprintf(&b, "%3d. %s  %s  n %d/%d  %s\n", i+1, sceneLabel(f.Scene), f.what(), f.BaseN, f.HeadN, pText(f.P))
		if f.Path != "" {
			fmt.Fprintf(&b, "     %s\n", f.Path)
		}
	}
	if len(r.OnlyBase) > 0 {
		fmt.Fprintf(&b, "scenes only in base: %s\n", strings.Join(r.OnlyBase, ", "))
	}
	if len(r.OnlyHead) > 0 {
		fmt.Fprintf(&b, "scenes only in head: %s\n", strings.Join(r.OnlyHead, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell escapes a table cell of GitHub-flavoured Markdown.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "`", "'")
}

func writeDiffMD(w io.Writer, r *diffResult) error {
	var b strings.Builder
	icon := "✅"
	if r.Regressions > 0 {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s matrixexec diff: %s\n\n", icon, mdCell(r.verdict()))
	fmt.Fprintf(&b, "- %s\n- %s\n\n", mdCell(setLine("base", &r.Base)), mdCell(setLine("head", &r.Head)))
	if len(r.Findings) > 0 {
		b.WriteString("| # | scene | change | base | head | Δ ms | n | p | path |\n|---|---|---|---|---|---|---|---|---|\n")
		for i := range r.Findings {
			f := &r.Findings[i]
			change, base, head := "", "", ""
			switch f.Kind {
			case findScene:
				change = "median"
				base, head = fmt.Sprintf("%.1f ms", f.BaseMs), fmt.Sprintf("%.1f ms", f.HeadMs)
			case findNew, findGone, findCalls:
				change = "`" + mdCell(f.Function) + "` " + f.Kind
				base = callsText(f.BaseCalls) + fmt.Sprintf(", %.1f ms", f.BaseMs)
				head = callsText(f.HeadCalls) + fmt.Sprintf(", %.1f ms", f.HeadMs)
			default:
				change = "`" + mdCell(f.Function) + "` time"
				base, head = fmt.Sprintf("%.1f ms", f.BaseMs), fmt.Sprintf("%.1f ms", f.HeadMs)
			}
			path := ""
			if f.Path != "" {
				path = "`" + mdCell(f.Path) + "`"
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %+.1f | %d/%d | %s | %s |\n",
				i+1, mdCell(sceneLabel(f.Scene)), change, base, head, f.DeltaMs, f.BaseN, f.HeadN, pText(f.P), path)
		}
	}
	if n := len(r.OnlyBase) + len(r.OnlyHead); n > 0 {
		fmt.Fprintf(&b, "\n%d scenes in one set only (%d base, %d head).\n", n, len(r.OnlyBase), len(r.OnlyHead))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
