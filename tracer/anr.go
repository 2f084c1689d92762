package tracer

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// ANRTracerName is the name of the lag/ANR watchdog (Matrix's
// LooperAnrTracer).
const ANRTracerName = "LooperAnrTracer"

// Defaults of the lag/ANR watchdog (Matrix's Constants).
const (
	// DefaultLagThreshold is how long a dispatch runs before it is
	// reported as LAG.
	DefaultLagThreshold = 2 * time.Second
	// DefaultANRThreshold is how long a dispatch runs before it is
	// reported as ANR.
	DefaultANRThreshold = 5 * time.Second
	// DefaultWatchdogLateLimit is how late a watchdog tick may be before
	// its ANR reports are dropped (the process itself was frozen).
	DefaultWatchdogLateLimit = 6 * time.Second
	// DefaultWatchdogPeriod is how often the watchdog wakes.
	DefaultWatchdogPeriod = 100 * time.Millisecond
)

// Environment variables of the watchdog, read by ConfigFromEnv and by
// EnvDynamicConfig.
const (
	// EnvANR turns the lag/ANR watchdog on or off.
	EnvANR = "MATRIX_ANR"
	// EnvLagMs is the LAG threshold in ms.
	EnvLagMs = "MATRIX_LAG_MS"
	// EnvANRMs is the ANR threshold in ms.
	EnvANRMs = "MATRIX_ANR_MS"
)

// Bits of beat.Dispatch.Reported the watchdog uses: each stuck dispatch
// gets at most one LAG and one ANR issue.
const (
	reportedLag uint32 = 1 << 0
	reportedANR uint32 = 1 << 1
)

// historySize is the number of watchdog ticks whose GC and dispatch
// counters are kept (at the default period, the last 102 s).
const historySize = 1024

// noteNoThreadStack explains an empty threadStack.
const noteNoThreadStack = "no threadStack: the goroutine was not found in the stack dump (it ended, or the dump exceeded 64 MiB)"

// noteDumpLimited explains an empty threadStack when the dump was
// rate-limited.
const noteDumpLimited = "no threadStack: the dispatch began after the last stack dump, and dumps are taken at most once per second"

// stackDumpInterval is the least time between two stack dumps: each one
// stops the world, so under an outage (many stuck dispatches) the
// watchdog must not add a dump per tick.
const stackDumpInterval = time.Second

// ANRConfig configures an ANRTracer. Zero durations mean their defaults.
type ANRConfig struct {
	// Lag is how long a dispatch runs before it is reported as LAG.
	// Default DefaultLagThreshold (2 s).
	Lag time.Duration
	// ANR is how long a dispatch runs before it is reported as ANR.
	// Default DefaultANRThreshold (5 s).
	ANR time.Duration
	// LateLimit: a watchdog tick that woke at least this late drops the
	// ANR reports it would make. Default DefaultWatchdogLateLimit (6 s).
	LateLimit time.Duration
	// Period is how often the watchdog wakes; reports come at most this
	// much after their threshold. Default DefaultWatchdogPeriod (100 ms).
	Period time.Duration
	// Dynamic, if set, is consulted on every tick for lag_ms, anr_ms and
	// anr_enabled, which then override the values above and the setters.
	Dynamic DynamicConfig
	// SceneReportsPerMinute bounds the LAG reports, and apart the ANR
	// reports, of each scene to this many a minute: the first half as
	// they come, then the first of each of the intervals the rest of the
	// minute is cut into; the next report of the scene counts those held
	// back (heldBack). Default DefaultSceneReportsPerMinute (6); negative:
	// no bound.
	SceneReportsPerMinute int
}

// ANRStats are the watchdog's counters since the tracer was made.
type ANRStats struct {
	// Ticks is the number of times the watchdog woke.
	Ticks uint64
	// Lags and ANRs are the LAG and ANR issues made.
	Lags, ANRs uint64
	// DroppedLate is the number of ANR reports dropped because the tick
	// that would have made them woke LateLimit or more late.
	DroppedLate uint64
	// HeldBack is the number of LAG and ANR reports held back by the
	// bound per scene and minute (ANRConfig.SceneReportsPerMinute).
	HeldBack uint64
	// Panics is the number of ticks that panicked (and were recovered).
	Panics uint64
	// MaxLate is the lateness of the latest tick so far.
	MaxLate time.Duration
	// StackDumps is the number of stack dumps taken (at most one per
	// second).
	StackDumps uint64
}

// ANRTracer is the lag and ANR watchdog, Matrix's LooperAnrTracer. One
// goroutine wakes every period (no timer per dispatch; nothing on the
// dispatching goroutines) and looks at every running dispatch
// (beat.Running). A dispatch still running after the lag threshold is
// reported once as an issue tagged TagEvilMethod, detail DetailLag:
//
//	detail       "LAG"
//	cost         ms the dispatch has run so far
//	scene        the dispatch's scene (route pattern, …), else its name
//	name, kind   the name it was begun with; custom, http, test, benchmark, frame
//	threadId     the dispatching goroutine's id (Matrix's field name)
//	goroutine    the same id
//	dispatchId   the dispatch's number in the process (beat.Dispatch.ID), which
//	             its ANR report and its final slow-call report carry too
//	threadStack  the dispatching goroutine's stack as a panic prints it,
//	             without argument values, code offsets or addresses:
//	             ("goroutine 42 [chan receive, 1 minutes]:\nmain.f(...)\n\t/src/main.go:12\n…")
//	serving      whether the process is still serving: other dispatches
//	             ended since this one began (false: everything is stuck)
//	served       how many dispatches ended since this one began
//	running      dispatches in progress, this one included
//	goroutines   runtime.NumGoroutine()
//	heldBack     the LAG reports of the scene held back since its previous
//	             one (ANRConfig.SceneReportsPerMinute), when there were any
//
// There is no call tree to key a LAG on: its issue key is the innermost
// function of threadStack outside the standard library (where the program
// is stuck, "main.(*inventory).reserve"), else the scene.
//
// Still running after the ANR threshold, it is reported once more, detail
// DetailANR, with the fields above plus:
//
//	stack, stackKey, frames  the partial call tree (strict mode, methods still
//	             open closed at "now"), as in a slow-call report
//	recorded     false when there is no call tree; note then says why
//	memory       {heapBytes, stackBytes, totalBytes, heapGoalBytes} from runtime/metrics
//	processPriority, processNice  /proc/self/stat fields 18 and 19 (Linux only)
//	gcPauseMs    GC stop-the-world time since the dispatch began, ms
//	gcCycles     GC cycles completed since the dispatch began
//
// The issue key of an ANR is its stackKey. (Matrix: the ANR issue key is
// always "0", which clusters every ANR together; we key it like a slow call.)
//
// A tick that woke LateLimit (6 s) or more after it was due means the whole
// process was frozen (stopped, starved, swapped): as Matrix does, the ANR
// reports of that tick are dropped for good and counted (ANRStats.DroppedLate).
//
// serving, served, gcPauseMs and gcCycles are measured from the first tick
// at or after the dispatch began (at most one period late; for a dispatch
// older than the kept history, 1024 ticks, from the oldest tick kept).
//
// Costs: a tick reads three runtime/metrics counters and walks the running
// dispatches (beat.Running, which holds no lock while the tick looks),
// comparing their start time. Only when it reports does it do more: the stack dump
// (runtime.Stack of all goroutines, which stops the world for the time it
// takes to format them; at most one per second: a dispatch that began
// before the last dump, taken less than a second ago, is shown by that
// dump, one that began after it waits for the next or, if it is reported
// before then, has no threadStack and a note saying why), and for an ANR the copy of the
// dispatch's records (beat gives a consistent prefix of a running
// dispatch's records) and the analysis, on the
// watchdog goroutine. Issues go through the Reporter, which never blocks.
type ANRTracer struct {
	lag, anr  atomic.Int64 // ns, set in code
	enabled   atomic.Bool
	lateLimit time.Duration
	period    time.Duration
	dyn       DynamicConfig

	ticks, lags, anrs, droppedLate, panics, dumps, heldBack atomic.Uint64
	maxLate                                                 atomic.Int64

	// The bounds of LAG and ANR reports per scene and minute (nil: none),
	// on a clock of ns since base.
	lagBound, anrBound *reportBound
	base               time.Time

	mu sync.Mutex
	w  worker // the watchdog goroutine
}

// NewANRTracer returns a lag/ANR watchdog configured by cfg, switched on.
func NewANRTracer(cfg ANRConfig) *ANRTracer {
	if cfg.LateLimit <= 0 {
		cfg.LateLimit = DefaultWatchdogLateLimit
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultWatchdogPeriod
	}
	t := &ANRTracer{lateLimit: cfg.LateLimit, period: cfg.Period, dyn: cfg.Dynamic, base: time.Now()}
	if cfg.SceneReportsPerMinute >= 0 {
		t.lagBound = newReportBound(cfg.SceneReportsPerMinute)
		t.anrBound = newReportBound(cfg.SceneReportsPerMinute)
	}
	t.SetLagThreshold(cfg.Lag)
	t.SetANRThreshold(cfg.ANR)
	t.enabled.Store(true)
	return t
}

// Name returns ANRTracerName.
func (t *ANRTracer) Name() string { return ANRTracerName }

// SetLagThreshold changes the LAG threshold at run time
// (DefaultLagThreshold if lag <= 0). A lag_ms in the DynamicConfig wins.
func (t *ANRTracer) SetLagThreshold(lag time.Duration) {
	storeThreshold(&t.lag, lag, DefaultLagThreshold)
}

// SetANRThreshold changes the ANR threshold at run time
// (DefaultANRThreshold if anr <= 0). An anr_ms in the DynamicConfig wins.
func (t *ANRTracer) SetANRThreshold(anr time.Duration) {
	storeThreshold(&t.anr, anr, DefaultANRThreshold)
}

// SetEnabled switches the watchdog on or off at run time; while off, a
// tick only reads its settings. An anr_enabled in the DynamicConfig wins.
func (t *ANRTracer) SetEnabled(on bool) { t.enabled.Store(on) }

// Settings returns the settings in force: the DynamicConfig's values where
// it has valid ones, else those set in code.
func (t *ANRTracer) Settings() (enabled bool, lag, anr time.Duration) {
	enabled = t.enabled.Load()
	if on, ok := dynSwitch(t.dyn, DynANREnabled); ok {
		enabled = on
	}
	lag = time.Duration(t.lag.Load())
	if d, ok := dynMillis(t.dyn, DynLagMs); ok {
		lag = d
	}
	anr = time.Duration(t.anr.Load())
	if d, ok := dynMillis(t.dyn, DynANRMs); ok {
		anr = d
	}
	return enabled, lag, anr
}

// Stats returns the watchdog's counters.
func (t *ANRTracer) Stats() ANRStats {
	return ANRStats{
		Ticks: t.ticks.Load(), Lags: t.lags.Load(), ANRs: t.anrs.Load(),
		DroppedLate: t.droppedLate.Load(), HeldBack: t.heldBack.Load(), Panics: t.panics.Load(),
		MaxLate:    time.Duration(t.maxLate.Load()),
		StackDumps: t.dumps.Load(),
	}
}

// Start starts the watchdog goroutine, which reports to r. Starting a
// started tracer does nothing.
func (t *ANRTracer) Start(r Reporter) error {
	if r == nil {
		return errors.New("tracer: LooperAnrTracer started without a reporter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stop, done, ok := t.w.begin()
	if !ok {
		return nil
	}
	wd := newWatchdog(t, r)
	beat.Go(func() { t.run(wd, stop, done) })
	return nil
}

// Stop stops the watchdog goroutine and waits for it (at most the time
// one tick takes).
func (t *ANRTracer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.halt()
}

func (t *ANRTracer) run(w *watchdog, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	timer := time.NewTimer(t.period)
	defer timer.Stop()
	due := time.Now().Add(t.period)
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		now := time.Now()
		w.safeTick(now, max(now.Sub(due), 0))
		due = time.Now().Add(t.period)
		timer.Reset(t.period)
	}
}

// tickSample is what a tick remembers: the counters that let a later
// report say what happened since a dispatch began.
type tickSample struct {
	at        time.Duration // since the watchdog's base time
	completed uint64        // dispatches ended
	gc        gcCounters
}

// history is a ring of the last historySize tick samples, oldest first.
type history struct {
	s [historySize]tickSample
	n int // samples pushed
}

func (h *history) push(x tickSample) {
	h.s[h.n%historySize] = x
	h.n++
}

// since returns the first sample taken at or after at, the newest if
// there is none, the oldest if all are after at. ok is false when empty.
func (h *history) since(at time.Duration) (s tickSample, ok bool) {
	if h.n == 0 {
		return tickSample{}, false
	}
	lo := max(0, h.n-historySize)
	k := sort.Search(h.n-lo, func(k int) bool { return h.s[(lo+k)%historySize].at >= at })
	if k == h.n-lo {
		k--
	}
	return h.s[(lo+k)%historySize], true
}

// watchdog is the state of one run of the watchdog goroutine.
type watchdog struct {
	t      *ANRTracer
	r      Reporter
	m      *metricsReader
	base   time.Time
	hist   *history
	dump   []byte    // the last stack dump, or nil
	dumpAt time.Time // when it was taken
	cands  []stuck
	// completed is the number of dispatches ended at the last tick.
	completed uint64
}

// stuck is what a tick copied of one dispatch to report.
type stuck struct {
	lag, anr    bool // report LAG, ANR
	droppedANR  bool // ANR due but dropped: the tick was late
	name, scene string
	traceCtx    string         // the request's traceparent, unvalidated
	traceState  string         // and its tracestate
	traceID     string         // the dispatch's own trace id, if it made one
	req         DispatchFields // the HTTP request's fields, if any
	kind        beat.Kind
	goid        uint64
	id          uint64 // beat.Dispatch.ID
	start       time.Time
	age         time.Duration
	rec         recording
	recs        []uint64
	nowMs       uint64
	// The reports held back by the bound before this LAG and this ANR.
	lagHeldBack, anrHeldBack uint64
}

func newWatchdog(t *ANRTracer, r Reporter) *watchdog {
	return &watchdog{t: t, r: r, m: newMetricsReader(), base: time.Now(), hist: new(history)}
}

// safeTick runs one tick; a panic in it (a broken DynamicConfig, a bug)
// is counted, never passed to the program.
func (w *watchdog) safeTick(now time.Time, late time.Duration) {
	defer func() {
		if recover() != nil {
			w.t.panics.Add(1)
		}
	}()
	w.tick(now, late)
}

// tick looks at every running dispatch once: now is when the tick woke,
// late how much after it was due.
func (w *watchdog) tick(now time.Time, late time.Duration) {
	t := w.t
	t.ticks.Add(1)
	for {
		old := t.maxLate.Load()
		if int64(late) <= old || t.maxLate.CompareAndSwap(old, int64(late)) {
			break
		}
	}
	enabled, lag, anr := t.Settings()
	if !enabled {
		return
	}
	if w.dump != nil && now.Sub(w.dumpAt) >= stackDumpInterval && cap(w.dump) > stackDumpKeep {
		w.dump = nil // a large dump is not kept once it is stale
	}
	gc, procs := w.m.gc()
	began := beat.ReadStats().Dispatches
	frozen := late >= t.lateLimit
	due := min(lag, anr)
	running := uint64(0)
	w.cands = w.cands[:0]
	// Copy and decide during the walk; report after it.
	beat.Running(func(d *beat.Dispatch) {
		running++
		age := now.Sub(d.Start())
		if age < due {
			return
		}
		s := stuck{
			lag: age >= lag && d.Reported(reportedLag),
			anr: age >= anr && d.Reported(reportedANR),
		}
		if !s.lag && !s.anr {
			return
		}
		if s.anr && frozen {
			s.anr, s.droppedANR = false, true
		}
		s.name, s.scene, s.kind, s.goid, s.id, s.start, s.age = d.Name(), d.Scene(), d.Kind(), d.Goid(), d.ID(), d.Start(), age
		s.traceCtx, s.traceState, s.traceID = d.TraceParent(), d.TraceState(), d.TraceID()
		s.req = requestOf(d)
		if s.anr {
			s.rec = dispatchRecording(d)
			s.recs = d.Records(nil)
			s.nowMs = beat.Now()
		}
		w.cands = append(w.cands, s)
	})
	// Dispatches ended = begun − running; a dispatch that began between
	// the two reads can make it one short for a tick, so keep it monotonic.
	if began >= running {
		w.completed = max(w.completed, began-running)
	}
	w.hist.push(tickSample{at: now.Sub(w.base), completed: w.completed, gc: gc})
	if len(w.cands) == 0 {
		return
	}
	w.report(now, gc, procs, int(running))
	clear(w.cands) // drop the records
}

// report turns the dispatches a tick found stuck into issues.
func (w *watchdog) report(now time.Time, gc gcCounters, procs, running int) {
	t := w.t
	needStack, covered := false, true
	for _, s := range w.cands {
		if s.droppedANR {
			t.droppedLate.Add(1)
		}
		if s.lag || s.anr {
			needStack = true
			covered = covered && w.dumpCovers(now, s.start)
		}
	}
	if !needStack {
		return
	}
	if !covered && (w.dump == nil || now.Sub(w.dumpAt) >= stackDumpInterval) {
		w.dump, _ = stackDump(w.dump)
		w.dumpAt = now
		t.dumps.Add(1)
	}
	goroutines := runtime.NumGoroutine()
	var memory map[string]uint64
	prio, nice, hasPrio := 0, 0, false
	for _, s := range w.cands {
		if !s.lag && !s.anr {
			continue
		}
		base, _ := w.hist.since(s.start.Sub(w.base))
		served := w.completed - min(base.completed, w.completed)
		scene := s.scene
		if scene == "" {
			scene = s.name
		}
		block, note := "", noteDumpLimited
		if w.dumpCovers(now, s.start) {
			block, note = scrubStack(goroutineBlock(w.dump, s.goid)), noteNoThreadStack
		}
		common := func(detail string) *EvilReport {
			r := &EvilReport{
				Detail:   detail,
				Cost:     s.age.Milliseconds(),
				Scene:    scene,
				Dispatch: DispatchFields{Name: s.name, Kind: s.kind.String(), ThreadID: s.goid, Goroutine: s.goid, ID: s.id}.withRequest(s.req, s.start),
				Watchdog: &WatchdogFields{
					ThreadStack: block,
					Serving:     served > 0,
					Served:      served,
					Running:     running,
					Goroutines:  goroutines,
				},
				TraceParent: validTraceParent(s.traceCtx),
				TraceState:  reportTraceState(s.traceCtx, s.traceState),
				TraceID:     s.traceID,
			}
			if block == "" {
				r.Note = note
			}
			return r
		}
		if s.lag && !t.admit(t.lagBound, scene, &s, now) {
			s.lag = false
		}
		if s.anr && !t.admit(t.anrBound, scene, &s, now) {
			s.anr = false
		}
		if s.lag {
			r := common(DetailLag)
			r.HeldBack = s.lagHeldBack
			key := blockedIn(block)
			if key == "" {
				key = scene
			}
			if w.r.Report(newReportIssue(TagEvilMethod, key, now, r)) {
				t.lags.Add(1)
			}
		}
		if s.anr {
			r := common(DetailANR)
			r.HeldBack = s.anrHeldBack
			if memory == nil {
				memory = w.m.memory()
				prio, nice, hasPrio = processPriority()
			}
			key := anrTree(r, s)
			mem := make(map[string]uint64, len(memory))
			for k, v := range memory {
				mem[k] = v
			}
			r.ANR = &ANRFields{
				Memory:    mem,
				GCPauseMs: gcPauseMs(base.gc, gc, procs),
				GCCycles:  gc.cycles - min(base.gc.cycles, gc.cycles),
			}
			if hasPrio {
				r.ANR.ProcessPriority, r.ANR.ProcessNice = &prio, &nice
			}
			// Matrix: the ANR issue key is always "0", so every ANR
			// falls into one cluster. The stack key clusters them by
			// the function that explains the hang, as for slow calls.
			if w.r.Report(newReportIssue(TagEvilMethod, key, now, r)) {
				t.anrs.Add(1)
			}
		}
	}
}

// admit applies bound (nil: none) to a LAG or ANR report of the stuck
// dispatch s of scene, found at now: it reports whether the report is
// made, and notes in s how many the bound held back before it.
func (t *ANRTracer) admit(bound *reportBound, scene string, s *stuck, now time.Time) bool {
	if bound == nil {
		return true
	}
	act, heldBack, _ := bound.admit(scene, s.age, int64(now.Sub(t.base)), nil)
	if act != boundReport {
		t.heldBack.Add(1)
		return false
	}
	if bound == t.lagBound {
		s.lagHeldBack = heldBack
	} else {
		s.anrHeldBack = heldBack
	}
	return true
}

// dumpCovers reports whether the last stack dump shows a dispatch that
// began at start as it is now: it was taken after the dispatch began, less
// than stackDumpInterval ago.
func (w *watchdog) dumpCovers(now, start time.Time) bool {
	return w.dump != nil && !w.dumpAt.Before(start) && now.Sub(w.dumpAt) < stackDumpInterval
}

// anrTree analyses the partial records of a stuck dispatch (strict mode,
// methods still open closed at the time of the copy) into content, and
// returns the stack key.
func anrTree(r *EvilReport, s stuck) string {
	tree := buildTree(s.recs, nil, analysis.Strict, s.nowMs, s.age.Milliseconds(), analysis.RepeatRule{})
	tree.fill(r, treeNote(s.rec, len(s.recs) > 0))
	return tree.key
}

// DefaultANRConfig returns Matrix's watchdog settings: LAG at 2 s, ANR at
// 5 s, reports of a tick 6 s late dropped, a tick every 100 ms.
func DefaultANRConfig() ANRConfig {
	return ANRConfig{
		Lag:       DefaultLagThreshold,
		ANR:       DefaultANRThreshold,
		LateLimit: DefaultWatchdogLateLimit,
		Period:    DefaultWatchdogPeriod,
	}
}

// validate reports negative durations.
func (c ANRConfig) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Lag", c.Lag}, {"ANR", c.ANR}, {"LateLimit", c.LateLimit}, {"Period", c.Period}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("tracer: negative Watchdog.%s %v", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// anrConfigFromEnv applies MATRIX_ANR, MATRIX_LAG_MS and MATRIX_ANR_MS to
// cfg and installs the environment as its DynamicConfig.
func anrConfigFromEnv(p *envParser, cfg *TraceConfig) {
	p.switchVar(EnvANR, &cfg.ANR)
	p.msVar(EnvLagMs, &cfg.Watchdog.Lag)
	p.msVar(EnvANRMs, &cfg.Watchdog.ANR)
	cfg.Dynamic = EnvDynamicConfig(p.getenv)
}
