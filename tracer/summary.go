package tracer

import (
	"errors"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// Recording everything, compactly.
//
// The slow-call tracer reports the dispatches that were slow; a
// comparison of two runs (matrixexec diff) needs all of them. The summary
// tracer keeps, for every dispatch, its call tree folded into a summary of
// its scene: the number of dispatches and the histogram of their costs in
// ms, and for each path of the tree (the functions from the dispatch down,
// see FramePath) the calls, the total and self time, and the histogram of
// the path's time per dispatch it appears in. When it stops (at the
// program's exit) it reports one issue per scene, tagged TagSummary. A
// test suite's run is then a few lines per test, whatever the number of
// its dispatches, rather than a tree per dispatch.

// TagSummary marks the summary of the dispatches of one scene
// (SummaryTracer).
const TagSummary = "Trace_Summary"

// SummaryTracerName is the name of the summary tracer.
const SummaryTracerName = "SummaryTracer"

// PathSep separates the frames of a path (FramePath), as in the folded
// stacks of flame graphs.
const PathSep = ";"

// Bounds of a summary.
const (
	// DefaultSummaryBacklog is the number of dispatches whose records
	// wait for the summary tracer before more are dropped and counted.
	DefaultSummaryBacklog = 1024
	// MaxSummaryScenes is the number of scenes summarised; dispatches of
	// more scenes are counted in Dropped.
	MaxSummaryScenes = 10000
	// MaxSummaryPaths is the number of paths kept per scene; the time of
	// paths beyond is in their ancestors' total, and PathsLeftOut counts
	// them.
	MaxSummaryPaths = 2000
)

// FrameName is what a frame is called in a path: its function ("id N"
// when the binary did not know it), "[reason]" for a wait, "go function"
// for a goroutine the dispatch started. matrixexec diff names the frames
// of ordinary reports with it too, so that paths of both compare.
func FrameName(f *Frame) string {
	switch f.Kind {
	case FrameWait:
		r := f.Reason
		if r == "" {
			r = "wait"
		}
		return "[" + r + "]"
	case FrameGoroutine:
		if f.Func == "" {
			return "go id " + strconv.FormatUint(uint64(f.ID), 10)
		}
		return "go " + f.Func
	}
	if f.Func == "" {
		if f.ID == abi.DispatchID {
			return "DISPATCH"
		}
		return "id " + strconv.FormatUint(uint64(f.ID), 10)
	}
	return f.Func
}

// PathNode is one frame of a call tree as a path: the frame names from the
// root down, joined by PathSep, and its time.
type PathNode struct {
	Path  string
	Count int
	Cost  int64
	// Self is Cost minus the cost of the node's children (goroutines it
	// started excepted), never negative.
	Self int64
}

// FramePaths turns a call tree's frames (pre-order with depths, as in a
// report) into one PathNode per distinct path, the nodes of one path (a
// function called from two places under the same path) added up, in the
// order their paths first appear.
func FramePaths(frames []Frame) []PathNode {
	type open struct {
		depth int
		idx   int // in nodes
		path  string
	}
	var nodes []PathNode
	index := map[string]int{}
	var st []open
	for i := range frames {
		f := &frames[i]
		for len(st) > 0 && st[len(st)-1].depth >= f.Depth {
			st = st[:len(st)-1]
		}
		path := FrameName(f)
		if len(st) > 0 {
			parent := st[len(st)-1]
			path = parent.path + PathSep + path
			if f.Kind != FrameGoroutine {
				p := &nodes[parent.idx]
				p.Self = max(p.Self-max(f.Cost, 0), 0)
			}
		}
		idx, ok := index[path]
		if !ok {
			idx = len(nodes)
			index[path] = idx
			nodes = append(nodes, PathNode{Path: path})
		}
		nd := &nodes[idx]
		nd.Count += max(f.Count, 0)
		nd.Cost += max(f.Cost, 0)
		nd.Self += max(f.Cost, 0)
		st = append(st, open{f.Depth, idx, path})
	}
	return nodes
}

// SummaryReport is the content of an issue tagged TagSummary: the
// dispatches of one scene since the program started.
type SummaryReport struct {
	Scene string `json:"scene"`
	// Dispatches is the number of dispatches summarised, Costs the
	// histogram of their costs: [ms, dispatches] pairs, by ms.
	Dispatches int        `json:"dispatches"`
	Costs      [][2]int64 `json:"costs"`
	// Untraced counts the dispatches without a call tree (no buffer, or
	// one that wrapped): they are in Costs and not in Paths.
	Untraced int `json:"untraced,omitempty"`
	// Paths are the paths of the call trees, by path.
	Paths []SummaryPath `json:"paths"`
	// PathsLeftOut counts the paths beyond MaxSummaryPaths.
	PathsLeftOut int `json:"pathsLeftOut,omitempty"`
	// Dropped counts the dispatches of the whole process that were not
	// summarised (a full backlog, too many scenes).
	Dropped uint64 `json:"dropped,omitempty"`
}

// SummaryPath is one path of a scene's call trees.
type SummaryPath struct {
	Path string `json:"path"`
	// Calls is the number of calls over all dispatches, Dispatches the
	// number of dispatches whose tree has the path.
	Calls      int64 `json:"calls"`
	Dispatches int   `json:"dispatches"`
	// TotalMs and SelfMs add up the path's time and self time.
	TotalMs int64 `json:"totalMs"`
	SelfMs  int64 `json:"selfMs"`
	// Costs is the histogram of the path's time in the dispatches that
	// have it: [ms, dispatches] pairs, by ms.
	Costs [][2]int64 `json:"costs"`
}

// SummaryTracer summarises every dispatch (see TagSummary). It observes
// every dispatch (beat.Observer): DispatchEnd copies the records on the
// dispatching goroutine, and the tracer's goroutine builds the tree and
// adds it to its scene's summary. At most DefaultSummaryBacklog dispatches
// wait; more are dropped and counted (Dropped, and the reports' dropped).
type SummaryTracer struct {
	jobs    chan *evilJob
	dropped atomic.Uint64

	mu     sync.Mutex
	w      worker
	scenes map[string]*sceneSummary // owned by the goroutine until it returns
}

type sceneSummary struct {
	n        int
	costs    map[int64]int
	untraced int
	paths    map[string]*pathSummary
	leftOut  int
}

type pathSummary struct {
	calls      int64
	dispatches int
	total      int64
	self       int64
	costs      map[int64]int
}

// NewSummaryTracer returns a summary tracer with room for backlog waiting
// dispatches (DefaultSummaryBacklog if backlog <= 0).
func NewSummaryTracer(backlog int) *SummaryTracer {
	if backlog <= 0 {
		backlog = DefaultSummaryBacklog
	}
	return &SummaryTracer{jobs: make(chan *evilJob, backlog)}
}

// Name returns SummaryTracerName.
func (t *SummaryTracer) Name() string { return SummaryTracerName }

// Dropped returns the number of dispatches not summarised.
func (t *SummaryTracer) Dropped() uint64 { return t.dropped.Load() }

// Start starts the tracer's goroutine, which reports to r when it stops.
func (t *SummaryTracer) Start(r Reporter) error {
	if r == nil {
		return errors.New("tracer: SummaryTracer started without a reporter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stop, done, ok := t.w.begin()
	if !ok {
		return nil
	}
	t.scenes = map[string]*sceneSummary{}
	beat.Go(func() { t.run(r, stop, done) })
	return nil
}

// Stop summarises the dispatches still waiting, reports one issue per
// scene and stops the goroutine.
func (t *SummaryTracer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.halt()
}

// DispatchBegin does nothing.
func (t *SummaryTracer) DispatchBegin(*beat.Dispatch) {}

// DispatchEnd hands a copy of d's records to the tracer's goroutine.
func (t *SummaryTracer) DispatchEnd(d *beat.Dispatch) {
	if d.Abandoned() {
		return
	}
	j := jobPool.Get().(*evilJob)
	j.recs = d.Records(j.recs[:0])
	j.rec = dispatchRecording(d)
	j.name, j.scene = d.Name(), d.Scene()
	j.cost, j.endMs = d.Cost(), d.EndMs()
	select {
	case t.jobs <- j:
	default:
		t.dropped.Add(1)
		putJob(j)
	}
}

func (t *SummaryTracer) run(r Reporter, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var recs []analysis.Record
	handle := func(j *evilJob) {
		if cap(recs) < len(j.recs) {
			recs = make([]analysis.Record, 0, len(j.recs))
		}
		t.add(j, recs)
		putJob(j)
	}
	for {
		select {
		case j := <-t.jobs:
			handle(j)
		case <-stop:
			for {
				select {
				case j := <-t.jobs:
					handle(j)
				default:
					t.report(r)
					return
				}
			}
		}
	}
}

// add adds one dispatch to its scene's summary.
func (t *SummaryTracer) add(j *evilJob, recs []analysis.Record) {
	scene := j.scene
	if scene == "" {
		scene = j.name
	}
	s := t.scenes[scene]
	if s == nil {
		if len(t.scenes) >= MaxSummaryScenes {
			t.dropped.Add(1)
			return
		}
		s = &sceneSummary{costs: map[int64]int{}, paths: map[string]*pathSummary{}}
		t.scenes[scene] = s
	}
	s.n++
	if len(j.recs) == 0 || j.rec != recDispatch {
		s.untraced++
		s.costs[j.cost.Milliseconds()]++
		return
	}
	tree := buildWholeTree(j.recs, recs, analysis.Strict, j.endMs, j.cost.Milliseconds())
	s.costs[tree.res.Cost]++
	for _, nd := range FramePaths(tree.frames) {
		p := s.paths[nd.Path]
		if p == nil {
			if len(s.paths) >= MaxSummaryPaths {
				s.leftOut++
				continue
			}
			p = &pathSummary{costs: map[int64]int{}}
			s.paths[nd.Path] = p
		}
		p.calls += int64(nd.Count)
		p.dispatches++
		p.total += nd.Cost
		p.self += nd.Self
		p.costs[nd.Cost]++
	}
}

// summaryReportWait bounds how long the reports at Stop wait for room in
// the delivery queue.
const summaryReportWait = 5 * time.Second

// report reports the summary of every scene, by scene, waiting for room
// in the queue (a test suite has more scenes than it holds).
func (t *SummaryTracer) report(r Reporter) {
	names := make([]string, 0, len(t.scenes))
	for name := range t.scenes {
		names = append(names, name)
	}
	slices.Sort(names)
	deadline := time.Now().Add(summaryReportWait)
	now := time.Now()
	for _, name := range names {
		is := newReportIssue(TagSummary, name, now, t.scenes[name].report(name, t.dropped.Load()))
		for !r.Report(is) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

func (s *sceneSummary) report(scene string, dropped uint64) *SummaryReport {
	rep := &SummaryReport{Scene: scene, Dispatches: s.n, Costs: histPairs(s.costs), Untraced: s.untraced,
		PathsLeftOut: s.leftOut, Dropped: dropped, Paths: make([]SummaryPath, 0, len(s.paths))}
	for path, p := range s.paths {
		rep.Paths = append(rep.Paths, SummaryPath{Path: path, Calls: p.calls, Dispatches: p.dispatches,
			TotalMs: p.total, SelfMs: p.self, Costs: histPairs(p.costs)})
	}
	sort.Sort(pathsByName(rep.Paths))
	return rep
}

// pathsByName sorts summary paths by path. (sort.Sort rather than
// slices.SortFunc: sort.Sort is one copy of the sorting code for every
// element type, which a program with net/http links already, while each
// element type given to slices.SortFunc is a copy of its own, kilobytes in
// every binary that links the tracer, and in its link. The same goes for
// the sorts below.)
type pathsByName []SummaryPath

func (p pathsByName) Len() int           { return len(p) }
func (p pathsByName) Less(i, j int) bool { return p[i].Path < p[j].Path }
func (p pathsByName) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }

// histPairs returns a histogram as [value, count] pairs by value.
func histPairs(h map[int64]int) [][2]int64 {
	out := make([][2]int64, 0, len(h))
	for v, n := range h {
		out = append(out, [2]int64{v, int64(n)})
	}
	sort.Sort(pairsByValue(out))
	return out
}

// pairsByValue sorts [value, count] pairs by value (see pathsByName).
type pairsByValue [][2]int64

func (p pairsByValue) Len() int           { return len(p) }
func (p pairsByValue) Less(i, j int) bool { return p[i][0] < p[j][0] }
func (p pairsByValue) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
