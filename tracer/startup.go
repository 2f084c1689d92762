package tracer

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// StartupTracerName is the name of the start-up tracer.
const StartupTracerName = "StartupTracer"

// Start-up thresholds (Matrix's Constants.DEFAULT_STARTUP_THRESHOLD_MS_COLD
// and _WARM).
const (
	// DefaultColdStartupThreshold is the cold start-up duration over which
	// a STARTUP call tree is reported.
	DefaultColdStartupThreshold = 10 * time.Second
	// DefaultWarmStartupThreshold is the same for a warm start-up.
	DefaultWarmStartupThreshold = 4 * time.Second
)

// WarmStartDispatchName is the name of the dispatch ReloadFunc runs its
// function in.
const WarmStartDispatchName = "warm-start"

// Environment variables of the start-up tracer, read by ConfigFromEnv and,
// through EnvDynamicConfig, while the tracer runs.
const (
	// EnvStartupTracer turns the start-up tracer on or off.
	EnvStartupTracer = "MATRIX_STARTUP_TRACER"
	// EnvColdStartupMs is the cold start-up threshold in ms.
	EnvColdStartupMs = "MATRIX_COLD_STARTUP_MS"
	// EnvWarmStartupMs is the warm start-up threshold in ms.
	EnvWarmStartupMs = "MATRIX_WARM_STARTUP_MS"
)

// Keys of DynamicConfig the start-up tracer consults when it reports
// (EnvDynamicConfig maps them to MATRIX_STARTUP_TRACER,
// MATRIX_COLD_STARTUP_MS and MATRIX_WARM_STARTUP_MS).
const (
	// DynStartupTracer switches the start-up reports on or off.
	DynStartupTracer = "startup_tracer"
	// DynColdStartupMs is the cold start-up threshold in ms.
	DynColdStartupMs = "cold_startup_ms"
	// DynWarmStartupMs is the warm start-up threshold in ms.
	DynWarmStartupMs = "warm_startup_ms"
)

// Values of the "scene" field of start-up reports: what made the process
// ready.
const (
	// StartupSceneHTTP: a net/http, fasthttp or hertz server entered its
	// accept loop ((*http.Server).Serve, (*fasthttp.Server).Serve,
	// hertz's (*route.Engine).Run), or, if the
	// tracer started after that, the first request served (any
	// beat.KindHTTP dispatch).
	StartupSceneHTTP = "http"
	// StartupSceneReady: a call of Ready.
	StartupSceneReady = "Ready"
	// StartupSceneReloadFunc: the end of the function run by ReloadFunc.
	StartupSceneReloadFunc = "ReloadFunc"
)

// Values of the "process_start_source" field of a cold Trace_StartUp
// report: where the process' start time comes from.
const (
	// ProcessStartProc: Linux /proc/self/stat starttime (clock ticks since
	// boot, 10 ms resolution) against the boot-time clock
	// (clock_gettime(CLOCK_BOOTTIME)).
	ProcessStartProc = "proc_boottime"
	// ProcessStartProcBtime: /proc/self/stat starttime against btime of
	// /proc/stat (whole seconds: up to 1 s early). Used only when the
	// boot-time clock cannot be read.
	ProcessStartProcBtime = "proc_btime"
	// ProcessStartRuntime: the OS start time is not available (not Linux,
	// or /proc unreadable): the process is taken to start when the Go
	// runtime initialised, so process_to_runtime is 0.
	ProcessStartRuntime = "runtime_init"
)

// StartupConfig configures the start-up tracer. Zero durations mean their
// defaults.
type StartupConfig struct {
	// Cold is the cold start-up duration (process start → ready) over
	// which a STARTUP call tree is reported. Default
	// DefaultColdStartupThreshold (10 s).
	Cold time.Duration
	// Warm is the same for a warm start-up (Reload → Ready). Default
	// DefaultWarmStartupThreshold (4 s).
	Warm time.Duration
	// Dynamic, if set, is consulted at each report for startup_tracer,
	// cold_startup_ms and warm_startup_ms, which then override the values
	// above and the setters.
	Dynamic DynamicConfig
}

// DefaultStartupConfig returns Matrix's thresholds: 10 s cold, 4 s warm.
func DefaultStartupConfig() StartupConfig {
	return StartupConfig{Cold: DefaultColdStartupThreshold, Warm: DefaultWarmStartupThreshold}
}

// validate reports negative thresholds (TracePlugin.Init calls it).
func (c StartupConfig) validate() error {
	var errs []error
	if c.Cold < 0 {
		errs = append(errs, fmt.Errorf("tracer: negative StartupThresholds.Cold %v", c.Cold))
	}
	if c.Warm < 0 {
		errs = append(errs, fmt.Errorf("tracer: negative StartupThresholds.Warm %v", c.Warm))
	}
	return errors.Join(errs...)
}

// startupConfigFromEnv applies MATRIX_STARTUP_TRACER, MATRIX_COLD_STARTUP_MS
// and MATRIX_WARM_STARTUP_MS to cfg.
func startupConfigFromEnv(p *envParser, cfg *TraceConfig) {
	p.switchVar(EnvStartupTracer, &cfg.Startup)
	p.msVar(EnvColdStartupMs, &cfg.StartupThresholds.Cold)
	p.msVar(EnvWarmStartupMs, &cfg.StartupThresholds.Warm)
}

// StartupTracer is the start-up tracer, Matrix's StartupTracer.
//
// # Cold start-up
//
// A Go process starts in four moments:
//
//	process start  the OS's start time of the process (Linux: /proc/self/stat;
//	               elsewhere the runtime's initialisation stands in for it,
//	               see process_start_source)
//	runtime init   the Go runtime initialised (beat.Startup().RuntimeInit)
//	main entered   every package init is done and main.main begins
//	               (beat.Startup().MainEntered)
//	ready          a net/http server entered its accept loop
//	               ((*http.Server).Serve, ListenAndServe, …: the service can
//	               serve), or the first call of Ready, whichever comes first.
//	               Waiting for the first request is never start-up. (If no
//	               tracer was running when Serve was entered, the end of the
//	               first request served stands in.)
//
// Once ready, every StartupTracer that runs (or starts later) reports one
// issue tagged TagStartUp, with the phases in ms under Matrix's names:
//
//	application_create     process start → main entered (the init phase)
//	first_activity_create  main entered → ready
//	startup_duration       process start → ready (the sum of the two above)
//	is_warm_start_up       false
//	process_to_runtime     process start → runtime init
//	init                   runtime init → main entered (package initialisation)
//	scene                  what made the process ready: "http" or "Ready"
//	process_start_source   "proc_boottime", "proc_btime" or "runtime_init"
//	process_start          the process start time (RFC 3339)
//	main_entered           false if main.main was not entered before ready
//	note                   why a phase is missing or approximate, if one is
//
// If main.main was not entered before ready (it is not instrumented, or
// Ready was called during package initialisation), the whole start-up
// counts as application_create and first_activity_create is 0; note says so.
//
// When startup_duration is over the cold threshold (10 s), also an issue
// tagged TagEvilMethod, detail DetailStartup, with the call tree of the init
// phase: the calls the runtime recorded on the main goroutine from its own
// initialisation to main.main (beat.Startup().Records), analysed in
// non-strict mode, so a slow init function, or a slow package-level
// initialiser of a dependency, shows by name:
//
//	detail, cost, stack, stackKey, frames  as in a slow-call report; cost is
//	             startup_duration (or the costliest frame, if larger); the root
//	             DISPATCH frame stands for package initialisation
//	scene, subType (1 cold, 2 warm), is_warm_start_up, startup_duration,
//	application_create, first_activity_create, init
//	recorded     false when there is no call tree; note then says why
//
// The init phase is recorded only when the program started with
// MATRIX_REPORT set (and MATRIX_STARTUP not "off"): zero-code mode.
//
// In a test binary (go test), serving HTTP does not make the process ready
// (tests start servers of their own): only Ready does.
//
// # Warm start-up
//
// Go has no activity to re-create: a warm start-up is a re-initialisation
// inside a running process, a configuration reload or an in-process
// restart. Reload marks its beginning and the next Ready its end;
// ReloadFunc runs it as a function. Each gives one TagStartUp issue with
// is_warm_start_up true, startup_duration = Reload → Ready, scene "Ready" or
// "ReloadFunc", and application_create, first_activity_create, init and
// process_to_runtime 0 (as Matrix reports a warm start). Over the warm
// threshold (4 s), also a STARTUP issue with subType 2 — with the call tree
// of the function when it ran under ReloadFunc. (Matrix: a warm start-up
// never carried a stack; ReloadFunc records it as a dispatch, so it does.)
//
// # Costs
//
// The tracer observes every dispatch (beat.Observer): DispatchBegin does
// nothing; DispatchEnd is one atomic load once the process is ready. Ready
// is two atomic loads once the process is ready and no warm start-up is in
// progress. The analysis runs on the tracer's own goroutine, once per
// start-up.
type StartupTracer struct {
	cold, warm atomic.Int64 // ns, set in code
	enabled    atomic.Bool
	dyn        DynamicConfig
	events     chan startupEvent
	dropped    atomic.Uint64

	// Injected by tests.
	info      func() beat.StartupInfo
	procStart func() (time.Time, string)
	testBin   func() bool

	// coldQueued: the cold start has been handed to this tracer (guarded
	// by startup.mu), so it is reported once per tracer.
	coldQueued bool

	mu sync.Mutex
	w  worker // the analysis goroutine
}

// startupBacklog bounds the start-up events waiting for a tracer's goroutine.
const startupBacklog = 16

// NewStartupTracer returns a start-up tracer configured by cfg, switched on.
func NewStartupTracer(cfg StartupConfig) *StartupTracer {
	t := &StartupTracer{
		dyn:       cfg.Dynamic,
		events:    make(chan startupEvent, startupBacklog),
		info:      beat.Startup,
		procStart: processStart,
		testBin:   isTestBinary,
	}
	t.SetColdThreshold(cfg.Cold)
	t.SetWarmThreshold(cfg.Warm)
	t.enabled.Store(true)
	return t
}

// Name returns StartupTracerName.
func (t *StartupTracer) Name() string { return StartupTracerName }

// SetColdThreshold changes the cold threshold at run time
// (DefaultColdStartupThreshold if threshold <= 0).
func (t *StartupTracer) SetColdThreshold(threshold time.Duration) {
	storeThreshold(&t.cold, threshold, DefaultColdStartupThreshold)
}

// SetWarmThreshold changes the warm threshold at run time
// (DefaultWarmStartupThreshold if threshold <= 0).
func (t *StartupTracer) SetWarmThreshold(threshold time.Duration) {
	storeThreshold(&t.warm, threshold, DefaultWarmStartupThreshold)
}

// SetEnabled switches the tracer's reports on or off at run time.
func (t *StartupTracer) SetEnabled(on bool) { t.enabled.Store(on) }

// Settings returns whether the tracer reports and its thresholds, the
// DynamicConfig applied.
func (t *StartupTracer) Settings() (enabled bool, cold, warm time.Duration) {
	enabled = t.enabled.Load()
	cold, warm = time.Duration(t.cold.Load()), time.Duration(t.warm.Load())
	if on, ok := dynSwitch(t.dyn, DynStartupTracer); ok {
		enabled = on
	}
	if d, ok := dynMillis(t.dyn, DynColdStartupMs); ok {
		cold = d
	}
	if d, ok := dynMillis(t.dyn, DynWarmStartupMs); ok {
		warm = d
	}
	return enabled, cold, warm
}

// Dropped returns the start-up events lost because the tracer's backlog
// was full (warm starts in a tight loop).
func (t *StartupTracer) Dropped() uint64 { return t.dropped.Load() }

// Start starts the tracer's goroutine, which reports to r, and registers
// the tracer for the start-up events. If the process is already ready and
// this tracer has not reported the cold start yet, it reports it now.
// Starting a started tracer does nothing.
func (t *StartupTracer) Start(r Reporter) error {
	if r == nil {
		return errors.New("tracer: StartupTracer started without a reporter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stop, done, ok := t.w.begin()
	if !ok {
		return nil
	}
	beat.Go(func() { t.run(r, stop, done) })
	startup.register(t)
	serveHookOnce.Do(func() { rtSetServeHook(serving) })
	return nil
}

var serveHookOnce sync.Once

// serving is run by (*http.Server).Serve as it enters its accept loop: the
// cold start-up ends there, if a tracer that reports it is registered
// (outside test binaries, whose tests start servers of their own).
func serving() {
	if coldReady.Load() || !startup.anyEnabled() {
		return
	}
	startup.ready(startupNow(), StartupSceneHTTP)
}

// Stop unregisters the tracer, reports the events still waiting, and stops
// its goroutine.
func (t *StartupTracer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.w.running() {
		return
	}
	startup.unregister(t)
	t.w.halt()
}

// DispatchBegin does nothing.
func (t *StartupTracer) DispatchBegin(*beat.Dispatch) {}

// DispatchEnd makes the process ready at the end of the first HTTP
// dispatch (outside test binaries), when no server was seen entering its
// accept loop: the tracer started after it did.
func (t *StartupTracer) DispatchEnd(d *beat.Dispatch) {
	if coldReady.Load() || d.Kind() != beat.KindHTTP || d.Abandoned() || !t.enabled.Load() || t.testBin() {
		return
	}
	startup.ready(d.Start().Add(d.Cost()), StartupSceneHTTP)
}

// send hands ev to the tracer's goroutine, or drops and counts it.
func (t *StartupTracer) send(ev startupEvent) {
	select {
	case t.events <- ev:
	default:
		t.dropped.Add(1)
	}
}

func (t *StartupTracer) run(r Reporter, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	handle := func(ev startupEvent) {
		for _, is := range t.issues(ev) {
			r.Report(is)
		}
	}
	for {
		select {
		case ev := <-t.events:
			handle(ev)
		case <-stop:
			for {
				select {
				case ev := <-t.events:
					handle(ev)
				default:
					return
				}
			}
		}
	}
}

// issues builds the issues of one event, the settings applied.
func (t *StartupTracer) issues(ev startupEvent) []Issue {
	enabled, cold, warm := t.Settings()
	if !enabled {
		return nil
	}
	if ev.warm {
		return warmIssues(ev, warm)
	}
	proc, source := t.procStart()
	return coldIssues(coldInput{
		info:      t.info(),
		procStart: proc,
		source:    source,
		ready:     ev.at,
		scene:     ev.scene,
		threshold: cold,
	})
}

// startupEvent is a start-up that became ready.
type startupEvent struct {
	warm  bool
	from  time.Time // warm: when Reload was called
	at    time.Time // when the process became ready
	scene string
	// A warm start run by ReloadFunc: its records (from the enter of a
	// DISPATCH, analysed in strict mode), their end in record time, and
	// how they were recorded (see treeNote).
	recs  []uint64
	endMs uint64
	rec   recording
}

// Ready says the program is ready to do its work. The first call (or the
// first request served by the net/http server, if that comes first) ends
// the cold start-up; later calls end the warm start-up Reload began, if one
// is in progress, and otherwise do nothing. Ready is safe to call from any
// goroutine, any number of times, in any build; after the first call it
// costs two atomic loads.
func Ready() {
	if coldReady.Load() && !warmPending.Load() {
		return
	}
	startup.ready(startupNow(), StartupSceneReady)
}

// Reload marks the beginning of a warm start-up: a configuration reload or
// an in-process restart, which the next Ready ends. It is ignored before
// the cold start-up is ready and while a warm start-up is in progress (the
// first Reload counts). A warm start-up marked this way is timed but has
// no call tree: use ReloadFunc for that.
func Reload() { startup.beginWarm(startupNow(), false) }

// ReloadFunc runs fn as a warm start-up: it calls Reload, runs fn as a
// dispatch named WarmStartDispatchName on the calling goroutine (or, if the
// goroutine is inside a dispatch already, as part of it), and ends the warm
// start-up when fn returns or panics. Its STARTUP report, if it is over the
// warm threshold, carries fn's call tree. Ready calls made while fn runs do
// not end it. Before the cold start-up is ready, or while another
// ReloadFunc runs, fn just runs.
//
// The slow-call tracer and the lag/ANR watchdog see the dispatch like any
// other: a slow reload is also a slow call.
func ReloadFunc(fn func()) {
	from := startupNow()
	if !startup.beginWarm(from, true) {
		fn()
		return
	}
	// Begin joins the dispatch the goroutine is in, if any (and then
	// returns it), else begins one of its own.
	outer := beat.Current()
	d := beat.Begin(beat.KindCustom, WarmStartDispatchName)
	nested := d != nil && d == outer
	beginMs, pre := beat.Now(), 0
	if nested && d.Recorded() {
		pre = len(d.Records(nil))
	}
	defer func() {
		ev := startupEvent{warm: true, at: startupNow(), scene: StartupSceneReloadFunc, endMs: beat.Now()}
		switch {
		case d == nil:
			ev.rec = recOff
		case nested:
			// fn's records are the ones written since it began, framed
			// as a dispatch of their own.
			var all []uint64
			if pre > 0 {
				all = d.Records(nil)
			}
			if pre > 0 && len(all) >= pre {
				ev.recs = make([]uint64, 0, len(all)-pre+2)
				ev.recs = append(ev.recs, uint64(analysis.MakeRecord(true, analysis.Dispatch, beginMs)))
				ev.recs = append(ev.recs, all[pre:]...)
				ev.recs = append(ev.recs, uint64(analysis.MakeRecord(false, analysis.Dispatch, max(ev.endMs, beginMs))))
			}
			ev.rec = dispatchRecording(d)
		default:
			if d.Recorded() {
				ev.recs = d.Records(nil)
			}
			ev.rec = dispatchRecording(d)
		}
		d.End()
		startup.endWarm(ev)
	}()
	fn()
}

// Notes of start-up reports.
const (
	noteWarmNoTree   = "no call tree: the warm start-up was marked with Reload and Ready; run it with tracer.ReloadFunc to record its call tree"
	noteNotRecording = "no call tree: the recorder was not running"
	noteNoStartupRec = "no call tree: package initialisation is recorded only when the program starts with MATRIX_REPORT set (and MATRIX_STARTUP not off)"
	noteNoMain       = "main.main was not entered before ready (not built with matrixexec, or Ready called during package initialisation): the whole start-up counts as application_create"
	noteNoProcStart  = "the OS start time of the process is not available here: phases start at the Go runtime's initialisation"
)

// noteStartupWrap is the note of a start-up that overflowed the start-up
// ring.
var noteStartupWrap = fmt.Sprintf("no call tree: package initialisation made more calls than the start-up ring holds (%d records)", abi.StartupRingSize)

// startupPhases are the phases of a cold start-up in ms.
type startupPhases struct {
	processToRuntime    int64 // process start → runtime init
	init                int64 // runtime init → main entered
	applicationCreate   int64 // process start → main entered
	firstActivityCreate int64 // main entered → ready
	startupDuration     int64 // process start → ready
	mainEntered         bool  // main.main was entered before ready
}

// computePhases computes the phases from the four moments of a cold
// start-up. A zero proc means the process start is unknown (runtime init
// stands in); a zero main, or one after ready, means main.main was not
// entered before ready. Every boundary is rounded down to whole ms since
// the process start before the differences are taken, so
// applicationCreate + firstActivityCreate == startupDuration and
// processToRuntime + init == applicationCreate exactly; out-of-order
// moments are clamped, so no phase is negative.
func computePhases(proc, rt, main, ready time.Time) startupPhases {
	if rt.IsZero() {
		rt = proc
	}
	if proc.IsZero() || proc.After(rt) {
		proc = rt
	}
	if proc.IsZero() {
		proc = ready
	}
	ms := func(t time.Time) int64 {
		d := t.Sub(proc)
		if d < 0 {
			return 0
		}
		return d.Milliseconds()
	}
	rtMs := ms(rt)
	readyMs := max(ms(ready), rtMs)
	mainMs := readyMs
	p := startupPhases{processToRuntime: rtMs, startupDuration: readyMs}
	if !main.IsZero() && !main.After(ready) {
		p.mainEntered = true
		mainMs = min(max(ms(main), rtMs), readyMs)
	}
	p.init = mainMs - rtMs
	p.applicationCreate = mainMs
	p.firstActivityCreate = readyMs - mainMs
	return p
}

// coldInput is what a cold start-up report is made of.
type coldInput struct {
	info      beat.StartupInfo
	procStart time.Time // zero if unknown
	source    string    // ProcessStart*
	ready     time.Time
	scene     string
	threshold time.Duration
}

// coldIssues builds the TagStartUp issue of a cold start-up and, over the
// threshold, its STARTUP issue.
func coldIssues(in coldInput) []Issue {
	proc, source := in.procStart, in.source
	if proc.IsZero() {
		proc, source = in.info.RuntimeInit, ProcessStartRuntime
	}
	p := computePhases(proc, in.info.RuntimeInit, in.info.MainEntered, in.ready)
	var notes []string
	if source == ProcessStartRuntime {
		notes = append(notes, noteNoProcStart)
	}
	if !p.mainEntered {
		notes = append(notes, noteNoMain)
	}
	if proc.IsZero() || proc.After(in.ready) {
		proc = in.ready
	}
	report := &StartupReport{
		ApplicationCreate:   p.applicationCreate,
		FirstActivityCreate: p.firstActivityCreate,
		StartupDuration:     p.startupDuration,
		ProcessToRuntime:    p.processToRuntime,
		Init:                p.init,
		Scene:               in.scene,
		Process:             &ProcessFields{Source: source, Start: proc.Format(time.RFC3339Nano), MainEntered: p.mainEntered},
		Note:                strings.Join(notes, "; "),
	}
	issues := []Issue{newReportIssue(TagStartUp, "cold", in.ready, report)}
	// Matrix: allCost > coldStartupThresholdMs.
	if time.Duration(p.startupDuration)*time.Millisecond <= in.threshold {
		return issues
	}
	rec := recStartup
	if in.info.Wrapped {
		rec = recStartupWrapped
	}
	note := treeNote(rec, len(in.info.Records) > 0)
	tree := buildTree(in.info.Records, nil, analysis.NonStrict, 0, p.init, analysis.RepeatRule{})
	sc := &EvilReport{
		Detail: DetailStartup,
		Scene:  in.scene,
		Startup: &StartupFields{
			SubType:             1,
			StartupDuration:     p.startupDuration,
			ApplicationCreate:   &p.applicationCreate,
			FirstActivityCreate: &p.firstActivityCreate,
			Init:                &p.init,
		},
	}
	tree.fill(sc, note)
	sc.Cost = max(p.startupDuration, tree.res.Cost) // the start-up's, when longer than its tree
	return append(issues, newReportIssue(TagEvilMethod, tree.key, in.ready, sc))
}

// warmIssues builds the TagStartUp issue of a warm start-up and, over the
// threshold, its STARTUP issue.
func warmIssues(ev startupEvent, threshold time.Duration) []Issue {
	d := ev.at.Sub(ev.from)
	if ev.from.IsZero() || d < 0 {
		d = 0
	}
	cost := d.Milliseconds()
	issues := []Issue{newReportIssue(TagStartUp, "warm", ev.at, &StartupReport{StartupDuration: cost, IsWarmStartUp: true, Scene: ev.scene})}
	if d <= threshold {
		return issues
	}
	tree := buildTree(ev.recs, nil, analysis.Strict, ev.endMs, cost, analysis.RepeatRule{})
	note := treeNote(ev.rec, len(tree.res.Items) > 0)
	sc := &EvilReport{
		Detail:  DetailStartup,
		Scene:   ev.scene,
		Startup: &StartupFields{SubType: 2, IsWarmStartUp: true, StartupDuration: cost},
	}
	tree.fill(sc, note)
	return append(issues, newReportIssue(TagEvilMethod, tree.key, ev.at, sc))
}
