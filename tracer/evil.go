package tracer

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// EvilMethodTracerName is the name of the slow-call tracer.
const EvilMethodTracerName = "EvilMethodTracer"

// Frame is one line of a slow call's stack with the function's name and
// position, so that a report is readable without the mapping file.
type Frame struct {
	// Depth, ID, Count and Cost are the report line "depth,id,count,cost".
	Depth int    `json:"depth"`
	ID    uint32 `json:"id"`
	Count int    `json:"count"`
	Cost  int64  `json:"cost"`
	// Func is the function as "import/path.Name" ("DISPATCH" for the
	// dispatch itself), or "" when the binary does not know the id.
	Func string `json:"func"`
	// File and Line are where the function is declared, when known; for
	// a wait or an inline frame, the line it was at.
	File string `json:"file"`
	Line int    `json:"line"`
	// Start is when the node began (its first call, for a node that
	// folds several) in ms after the dispatch began, so that Start+Cost
	// places the node in time; for the tree of package initialisation,
	// after the first recorded function began (analysis.Result.Starts).
	Start int64 `json:"start"`
	// Kind is "" for a call, FrameWait for an interval in which the
	// goroutine did not run (ID 1048575), FrameInline for a function
	// without a hook named through a wait under it (ID 0),
	// FrameGoroutine, or a boundary (ID 1048575): FrameDB, FrameHTTP,
	// FrameRPC, FramePublish, or FrameSampled for a function without a
	// hook found by sampling (ID 0).
	Kind string `json:"kind,omitempty"`
	// Reason is a wait's reason as goroutine dumps spell it ("sleep",
	// "chan receive", "sync.Mutex.Lock", …), or "syscall" or "runnable".
	Reason string `json:"reason,omitempty"`
	// For says what a wait waited for, when the tracer can tell from
	// where it blocked: WaitForPool.
	For string `json:"for,omitempty"`
	// Bound holds the attributes of a boundary (Kind FrameDB, FrameHTTP,
	// FrameRPC or FramePublish).
	Bound *Bound `json:"bound,omitempty"`
	// WokenBy names the goroutine that ended a wait by waking it (a
	// worker's send, an unlock, a signal), when another goroutine did.
	WokenBy *Waker `json:"woken_by,omitempty"`
	// Handoff marks a goroutine frame (FrameGoroutine) as a goroutine that
	// existed before and was handed work by the dispatch: a parked worker
	// woken by a send of the dispatch's goroutine. Func, File and Line are
	// where it was parked; its children are what it did for the dispatch.
	Handoff bool `json:"handoff,omitempty"`
	// Samples is, for a sampled frame (FrameSampled), how many stack
	// samples were taken in it or in its callees.
	Samples int `json:"samples,omitempty"`
	// AllocBytes is what the dispatch's allocation samples taken in the
	// frame and under it stand for (one per 512 KiB a goroutine
	// allocated once the dispatch was sampled): an estimate, where the
	// report's allocBytes is exact.
	AllocBytes uint64 `json:"allocBytes,omitempty"`
}

// Waker is the goroutine that woke a waiting goroutine, and where it was:
// the innermost function of user code it was running (inlined or not) and
// the line there.
type Waker struct {
	// Goroutine is the waker's goroutine id.
	Goroutine uint64 `json:"goroutine"`
	Func      string `json:"func,omitempty"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
}

// Bound is a call out of the program that a report names (a boundary
// frame): a database statement, an HTTP or a gRPC client call. Its frame's
// children are the calls and waits inside it, and its Func names it:
// "db <statement>", "http <method> <scheme>://<host>", "rpc <method>
// <host>".
type Bound struct {
	// System is the database system, as OpenTelemetry's db.system.name
	// names it ("sqlite", "postgresql", "mysql", …), when the driver is
	// known; or the messaging system a message was published to ("nats").
	System string `json:"system,omitempty"`
	// Statement is the statement, normalised: every literal is "?",
	// arguments never appear, and it is cut at 120 characters (package
	// sqlnorm has the rules).
	Statement string `json:"statement,omitempty"`
	// Method is an HTTP request's method, or a gRPC call's full method
	// ("/shop.Orders/Get").
	Method string `json:"method,omitempty"`
	// Scheme is an HTTP request's scheme.
	Scheme string `json:"scheme,omitempty"`
	// Host is the host (with the port, if given) an HTTP request, a gRPC
	// call or a published message went to: never a path, a query string
	// or a message's subject.
	Host string `json:"host,omitempty"`
	// SpanID is the id of the call's span, in 16 hex digits, when the
	// call passed the dispatch's trace context on (a request, a gRPC call
	// or a message sent with a traceparent the recorder added): the called
	// service's spans, or the consumer's, have it as their parent.
	SpanID string `json:"span_id,omitempty"`
}

// EvilMethodTracer is the slow-call tracer, Matrix's EvilMethodTracer. It
// observes every dispatch (beat.Observer); one that took at least the
// threshold is reported as an issue tagged TagEvilMethod, detail
// DetailNormal, with content:
//
//	detail     "NORMAL"
//	cost       reported cost in ms (max of the wall time and the costliest frame)
//	stack      the trimmed call tree, one line "depth,id,count,cost\n" per frame
//	stackKey   "<id>|" of the function that best explains the cost ("" if no stack)
//	frames     the stack lines as objects {depth,id,count,cost,func,file,line}
//	scene      the dispatch's scene (route pattern, …), else its name
//	name       the name the dispatch was begun with
//	kind       where it came from: custom, http, test, benchmark, frame
//	threadId   the dispatching goroutine's id (Matrix's field name)
//	goroutine  the same id
//	dispatchId the dispatch's number in the process (beat.Dispatch.ID); the
//	           LAG and ANR reports of the same dispatch carry it too
//	recorded   false when the dispatch has no call tree; note then says why
//	cpu        process CPU time used during the dispatch, ms (unix only)
//	usage      cpu / wall time as a percentage, "37.50%" (unix only)
//	traceparent  the request's W3C trace context, when it had a valid one
//	trace_id   else the id of the trace the dispatch made (beat.Dispatch.TraceID)
//	heldBack   the dispatches of the scene held back since its previous
//	           report (SetSceneReportsPerMinute), when there were any
//	repeat     the costliest N+1 pattern of the tree, when it has one: a
//	           function, or a statement or client call (bound), repeated
//	           by one call of another (RepeatFields; see TraceConfig.Repeats)
//
// Go has no per-goroutine CPU clock (a goroutine moves between threads):
// cpu and usage are process-wide (getrusage RUSAGE_SELF), so other
// goroutines' work during the dispatch counts too, and usage can exceed
// 100%. The reading at the start may be shared with other dispatches that
// began within 1% of the threshold of it (a reading is a syscall, ten
// times the cost of the rest of a dispatch); cpu and usage then cover that
// slightly different interval, consistently. Reports never contain request
// data (no URL path, query, body or argument): only function ids and
// names, durations and the scene; of the request's headers only the Host
// (the authority, as host, which names the server in exported spans) and
// the trace context (traceparent, tracestate) so that an exported report
// joins the caller's trace.
//
// Cost: DispatchBegin takes the cached CPU reading (a syscall at most once
// per 1% of the threshold). DispatchEnd of a dispatch under the threshold is
// the comparison plus releasing that reading; neither allocates. A slow
// dispatch's records are copied on the dispatching goroutine (into a pooled
// buffer) and analysed on the tracer's own goroutine. At most the backlog's
// worth of slow dispatches wait for analysis; more are dropped and counted
// (Dropped). Slow dispatches beyond a scene's reports per minute are only
// counted; the costliest of an interval is copied when it becomes the
// costliest, and the analysis goroutine looks once a second for those
// whose interval ended.
type EvilMethodTracer struct {
	threshold atomic.Int64 // ns
	scenes    atomic.Pointer[sceneTable]
	bound     atomic.Pointer[reportBound] // nil: every slow call reported
	repeats   atomic.Pointer[analysis.RepeatRule]
	jobs      chan *evilJob
	dropped   atomic.Uint64

	mu sync.Mutex
	w  worker // the analysis goroutine

	// Last: it holds no pointers, so that the collector, which scans the
	// tracer up to its last pointer, need not look at it.
	clock cpuClock
}

// NewEvilMethodTracer returns a slow-call tracer reporting dispatches that
// take threshold or longer (DefaultEvilThreshold if threshold <= 0), with up
// to backlog slow dispatches waiting for analysis (DefaultAnalysisBacklog if
// backlog <= 0).
func NewEvilMethodTracer(threshold time.Duration, backlog int) *EvilMethodTracer {
	if backlog <= 0 {
		backlog = DefaultAnalysisBacklog
	}
	t := &EvilMethodTracer{jobs: make(chan *evilJob, backlog)}
	t.SetThreshold(threshold)
	t.SetSceneReportsPerMinute(0)
	return t
}

// SetSceneReportsPerMinute bounds the slow-call reports of each scene to n
// a minute, whatever their cost (DefaultSceneReportsPerMinute if n is 0;
// none if n < 0): the first half of them as they come, then the costliest
// dispatch of each of the intervals the rest of the minute is cut into,
// reported when its interval ends. The next report of the scene counts
// the dispatches held back (heldBack). See the package's file bound.go
// for the rule.
func (t *EvilMethodTracer) SetSceneReportsPerMinute(n int) {
	if n < 0 {
		t.bound.Store(nil)
		return
	}
	t.bound.Store(newReportBound(n))
}

// Name returns EvilMethodTracerName.
func (t *EvilMethodTracer) Name() string { return EvilMethodTracerName }

// SetThreshold changes the threshold at run time (DefaultEvilThreshold if
// threshold <= 0).
func (t *EvilMethodTracer) SetThreshold(threshold time.Duration) {
	if threshold <= 0 {
		threshold = DefaultEvilThreshold
	}
	t.threshold.Store(int64(threshold))
}

// SetSlowForScene also reports, under the threshold, the dispatches that
// are slow for their scene (see SceneConfig): at least floor and over the
// 99th percentile of the scene's recent dispatches. A floor of 0 or less
// turns this off: the threshold alone applies.
func (t *EvilMethodTracer) SetSlowForScene(floor time.Duration, cfg SceneConfig) {
	if floor <= 0 {
		t.scenes.Store(nil)
		return
	}
	t.scenes.Store(newSceneTable(floor, cfg))
}

// SetRepeatRule sets what makes an N+1 pattern in a slow call's tree (see
// TraceConfig.Repeats): the report then names the costliest (repeat). A
// MinCalls of 0 or less finds none, as before the first call.
func (t *EvilMethodTracer) SetRepeatRule(rule analysis.RepeatRule) {
	t.repeats.Store(&rule)
}

// Threshold returns the current threshold.
func (t *EvilMethodTracer) Threshold() time.Duration { return time.Duration(t.threshold.Load()) }

// Dropped returns the number of slow dispatches not analysed because the
// backlog was full.
func (t *EvilMethodTracer) Dropped() uint64 { return t.dropped.Load() }

// Start starts the analysis goroutine, which reports to r. Starting a
// started tracer does nothing.
func (t *EvilMethodTracer) Start(r Reporter) error {
	if r == nil {
		return errors.New("tracer: EvilMethodTracer started without a reporter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stop, done, ok := t.w.begin()
	if !ok {
		return nil
	}
	beat.Go(func() { t.run(r, stop, done) })
	return nil
}

// Stop analyses and reports the slow dispatches still waiting, then stops
// the analysis goroutine and waits for it.
func (t *EvilMethodTracer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.halt()
}

// DispatchBegin notes the process CPU time at the start of d.
func (t *EvilMethodTracer) DispatchBegin(d *beat.Dispatch) {
	if !cpuSupported {
		return
	}
	if r, ok := t.clock.read(time.Duration(d.StartNano()), cpuMaxAge(t.Threshold())); ok {
		d.SetCPUMark(r.ns, r.at)
	}
}

// DispatchEnd hands d to the analysis goroutine if it took at least the
// threshold. It runs on the dispatching goroutine, where the copy of the
// records is exact.
func (t *EvilMethodTracer) DispatchEnd(d *beat.Dispatch) {
	cost := d.Cost()
	threshold := time.Duration(t.threshold.Load())
	var v verdict
	abandoned := d.Abandoned()
	if st := t.scenes.Load(); st != nil && !abandoned {
		scene := d.Scene()
		if scene == "" {
			scene = d.Name()
		}
		v = st.observe(scene, cost, cost >= threshold, d.StartNano(), beat.Proc())
		if cost >= threshold {
			v = verdict{report: true, why: "at least the threshold of " + msText(threshold)}
		}
	} else {
		v.report = cost >= threshold
	}
	if !v.report || abandoned {
		return
	}
	if b := t.bound.Load(); b != nil {
		scene := d.Scene()
		if scene == "" {
			scene = d.Name()
		}
		act, heldBack, dropped := b.admit(scene, cost, d.StartNano()+int64(cost), func() any { return t.job(d, cost, v) })
		if dropped != nil {
			putJob(dropped.(*evilJob))
		}
		if act != boundReport {
			return
		}
		v.heldBack = heldBack
	}
	t.queue(t.job(d, cost, v))
}

// evilJob is what the analysis goroutine needs of one slow dispatch.
type evilJob struct {
	recs     []uint64
	rec      recording // how the dispatch was recorded
	name     string
	scene    string
	traceCtx string         // the request's traceparent, unvalidated
	state    string         // and its tracestate
	traceID  string         // the dispatch's own trace id, if it made one
	req      DispatchFields // the HTTP request's fields, if any
	kind     beat.Kind
	goid     uint64
	id       uint64 // beat.Dispatch.ID
	cost     time.Duration
	endMs    uint64
	end      time.Time
	repeats  analysis.RepeatRule // what makes an N+1 pattern
	why      string              // why it was taken, in "slow for its scene" mode
	heldBack uint64              // its scene's slow dispatches not reported before it
	cpuNs    int64               // process CPU time
	cpuWall  time.Duration       // over this wall time
	hasCPU   bool
	alloc    [2]uint64     // bytes and objects the dispatch allocated
	stopped  time.Duration // the world stood still during it
	stopOK   bool          // every stop since it began is known
}

var jobPool = sync.Pool{New: func() any { return new(evilJob) }}

func putJob(j *evilJob) {
	recs := j.recs[:0]
	*j = evilJob{recs: recs}
	jobPool.Put(j)
}

// job copies what the analysis needs of the slow dispatch d; it runs on
// the dispatching goroutine, where the copy of the records is exact.
func (t *EvilMethodTracer) job(d *beat.Dispatch, cost time.Duration, v verdict) *evilJob {
	j := jobPool.Get().(*evilJob)
	j.why, j.heldBack = v.why, v.heldBack
	if rule := t.repeats.Load(); rule != nil {
		j.repeats = *rule
	}
	if ns, at, ok := d.CPUMark(); ok {
		if end, ok := t.clock.refresh(); ok && end.ns >= ns && end.at > at {
			j.cpuNs, j.cpuWall, j.hasCPU = end.ns-ns, end.at-at, true
		}
	}
	j.recs = d.Records(j.recs[:0])
	j.rec = dispatchRecording(d)
	j.alloc[0], j.alloc[1] = d.Allocated()
	j.stopped, j.stopOK = d.Stopped()
	j.name, j.scene, j.kind, j.goid, j.id = d.Name(), d.Scene(), d.Kind(), d.Goid(), d.ID()
	j.traceCtx, j.state, j.traceID = d.TraceParent(), d.TraceState(), d.TraceID()
	j.req = requestOf(d)
	j.cost, j.endMs, j.end = cost, d.EndMs(), d.Start().Add(cost)
	return j
}

// queue hands j to the analysis goroutine, or drops and counts it when the
// backlog is full.
func (t *EvilMethodTracer) queue(j *evilJob) {
	select {
	case t.jobs <- j:
	default:
		t.dropped.Add(1)
		putJob(j)
	}
}

func (t *EvilMethodTracer) run(r Reporter, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var recs []analysis.Record // reused for every job
	handle := func(j *evilJob) {
		if cap(recs) < len(j.recs) {
			recs = make([]analysis.Record, 0, len(j.recs))
		}
		is := evilIssue(j, recs)
		putJob(j)
		r.Report(is)
	}
	// The dispatches the bound kept are reported once their interval
	// ends: looked at once a second.
	kept := func(all bool) {
		if b := t.bound.Load(); b != nil {
			b.due(beat.Nanotime(), all, func(k any, heldBack uint64) {
				j := k.(*evilJob)
				j.heldBack = heldBack
				handle(j)
			})
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case j := <-t.jobs:
			handle(j)
		case <-tick.C:
			kept(false)
		case <-stop:
			for {
				select {
				case j := <-t.jobs:
					handle(j)
				default:
					kept(true)
					return
				}
			}
		}
	}
}

// evilIssue analyses the records of one slow dispatch (strict mode, open
// methods closed at the dispatch's end) and builds its issue; recs is a
// buffer for the records, reused when large enough.
func evilIssue(j *evilJob, recs []analysis.Record) Issue {
	tree := buildTree(j.recs, recs, analysis.Strict, j.endMs, j.cost.Milliseconds(), j.repeats)
	scene := j.scene
	if scene == "" {
		scene = j.name
	}
	r := &EvilReport{
		Detail:      DetailNormal,
		Scene:       scene,
		Dispatch:    DispatchFields{Name: j.name, Kind: j.kind.String(), ThreadID: j.goid, Goroutine: j.goid, ID: j.id}.withRequest(j.req, j.end.Add(-j.cost)),
		TraceParent: validTraceParent(j.traceCtx),
		TraceState:  reportTraceState(j.traceCtx, j.state),
		TraceID:     j.traceID,
		Why:         j.why,
		HeldBack:    j.heldBack,
		AllocBytes:  j.alloc[0],
		AllocCount:  j.alloc[1],
	}
	tree.fill(r, treeNote(j.rec, len(j.recs) > 0))
	if len(tree.frames) > 0 {
		r.Parts = partsOf(tree.frames, r.Cost, tree.own)
		if j.stopOK {
			ms := float64(j.stopped.Microseconds()) / 1000
			r.Parts.Stopped = &ms
		}
	}
	if j.hasCPU {
		cpu := j.cpuNs / int64(time.Millisecond)
		r.CPU = &cpu
		if j.cpuWall > 0 {
			r.Usage = strconv.FormatFloat(100*float64(j.cpuNs)/float64(j.cpuWall), 'f', 2, 64) + "%"
		}
	}
	return newReportIssue(TagEvilMethod, tree.key, j.end, r)
}
