package tracer

import (
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// TracePluginTag is the tag of the TracePlugin.
const TracePluginTag = "Trace"

// DefaultEvilThreshold is the slow-call threshold (Matrix's
// Constants.DEFAULT_EVIL_METHOD_THRESHOLD_MS).
const DefaultEvilThreshold = 700 * time.Millisecond

// Defaults of TraceConfig.Repeats: a function called at least 10 times by
// one call of another (or a statement, an HTTP or gRPC client call issued
// as often by it), in at least 20 % of the dispatch's time, is an N+1
// pattern.
const (
	DefaultRepeatMinCalls   = 10
	DefaultRepeatMinPercent = 20
)

// DefaultAnalysisBacklog is the number of slow dispatches whose records
// wait for analysis before more are dropped.
const DefaultAnalysisBacklog = 64

// TraceConfig configures a TracePlugin. The zero value has every tracer
// off; DefaultTraceConfig turns on the default ones. Zero sizes and
// durations mean their defaults.
type TraceConfig struct {
	// EvilMethod turns on the slow-call tracer (EvilMethodTracer).
	EvilMethod bool
	// EvilThreshold is the dispatch wall time from which a dispatch is
	// reported as a slow call. Default DefaultEvilThreshold (700 ms).
	EvilThreshold time.Duration
	// EvilFloor, if positive, also reports a dispatch under
	// EvilThreshold that is slow for its scene: at least EvilFloor and
	// over the 99th percentile of the scene's recent dispatches (see
	// SceneConfig). DefaultTraceConfig sets it to DefaultEvilFloor;
	// ConfigFromEnv sets it to 0, for a fixed threshold alone, when
	// MATRIX_EVIL_THRESHOLD_MS is set.
	EvilFloor time.Duration
	// EvilScenes configures the estimate of each scene's costs, and the
	// bound of reports per scene and minute (ReportsPerMinute).
	EvilScenes SceneConfig
	// Repeats is what makes an N+1 pattern in a slow call's tree: one
	// call of a function calls another at least MinCalls times, or
	// issues the same boundary (database statement, HTTP or gRPC client
	// call) as often, and those calls take at least MinPercent % of the
	// dispatch. The report
	// names the costliest (its repeat field). Zero fields mean their
	// defaults, DefaultRepeatMinCalls and DefaultRepeatMinPercent; a
	// negative MinCalls finds none.
	Repeats analysis.RepeatRule
	// AnalysisBacklog bounds the slow dispatches waiting for analysis
	// (each holds a copy of its records). Default DefaultAnalysisBacklog.
	AnalysisBacklog int

	// Beat sizes the recorder.
	Beat beat.Config
	// QueueSize is the capacity of the queue between the application
	// and the listeners. Default DefaultQueueSize (256).
	QueueSize int
	// StopTimeout bounds how long Stop waits for the listeners to take
	// the issues still queued. Default DefaultStopTimeout.
	StopTimeout time.Duration
	// Logger, if set, receives the plugin's own diagnostics (a listener
	// that panicked, issues dropped at Stop), one Printf each.
	Logger *log.Logger

	// FPS turns on the frame tracer (FrameTracer): Trace_FPS reports of
	// the frame loops (FrameLoop).
	FPS bool
	// Frame configures the frame tracer.
	Frame FrameConfig

	// ANR turns on the lag/ANR watchdog (ANRTracer, Matrix's
	// LooperAnrTracer): LAG and ANR reports of dispatches still running.
	ANR bool
	// Watchdog configures it (thresholds, period). A nil
	// Watchdog.Dynamic means Dynamic.
	Watchdog ANRConfig
	// Dynamic, if set, is consulted while the plugin runs (Matrix's
	// IDynamicConfig): see DynamicConfig for the keys. ConfigFromEnv
	// sets it to EnvDynamicConfig.
	Dynamic DynamicConfig

	// Startup turns on the start-up tracer (StartupTracer, Matrix's
	// StartupTracer): a Trace_StartUp report once the program is ready,
	// and the call tree of package initialisation when it was slow.
	Startup bool
	// StartupThresholds configures it (cold and warm thresholds). A nil
	// StartupThresholds.Dynamic means Dynamic.
	StartupThresholds StartupConfig

	// Summary turns on the summary tracer (SummaryTracer): every
	// dispatch's call tree folded into a summary of its scene, reported
	// at Stop (TagSummary), for matrixexec diff.
	Summary bool

	// Tracers are more tracers to run, after the built-in ones.
	Tracers []Tracer
}

// DefaultTraceConfig returns Matrix's defaults: the slow-call tracer on
// with a 700 ms threshold and, under it, dispatches slow for their scene
// from 100 ms (EvilFloor), the frame tracer on (a Trace_FPS report per
// scene every 10 s of frame time), and the lag/ANR watchdog on (LAG at 2 s,
// ANR at 5 s), and the start-up tracer on (STARTUP call tree over 10 s
// cold, 4 s warm).
func DefaultTraceConfig() TraceConfig {
	return TraceConfig{
		EvilMethod:      true,
		EvilThreshold:   DefaultEvilThreshold,
		EvilFloor:       DefaultEvilFloor,
		Repeats:         analysis.RepeatRule{MinCalls: DefaultRepeatMinCalls, MinPercent: DefaultRepeatMinPercent},
		AnalysisBacklog: DefaultAnalysisBacklog,
		Beat: beat.Config{BufferSize: beat.DefaultBufferSize, MaxBuffers: beat.DefaultMaxBuffers,
			MaxChildren: beat.DefaultMaxChildren, ChildBufferSize: beat.DefaultChildBufferSize},
		QueueSize:   DefaultQueueSize,
		StopTimeout: DefaultStopTimeout,
		FPS:         true,
		Frame:       DefaultFrameConfig(),
		ANR:         true,
		Watchdog:    DefaultANRConfig(),

		Startup:           true,
		StartupThresholds: DefaultStartupConfig(),
	}
}

// Environment variables read by ConfigFromEnv.
const (
	// EnvEvilThresholdMs is the slow-call threshold in ms.
	EnvEvilThresholdMs = "MATRIX_EVIL_THRESHOLD_MS"
	// EnvBufferSize is the number of records per recording buffer.
	EnvBufferSize = "MATRIX_BUFFER_SIZE"
	// EnvMaxBuffers is the number of dispatches recorded at once.
	EnvMaxBuffers = "MATRIX_MAX_BUFFERS"
	// EnvRecordMemoryMB bounds the recording buffers' memory, in MiB.
	EnvRecordMemoryMB = "MATRIX_RECORD_MEMORY_MB"
	// EnvMaxChildren is the number of goroutines started inside one
	// dispatch that record into it.
	EnvMaxChildren = "MATRIX_MAX_CHILDREN"
	// EnvChildBufferSize is the number of records per buffer of such a
	// goroutine.
	EnvChildBufferSize = "MATRIX_CHILD_BUFFER_SIZE"
	// EnvQueueSize is the number of issues queued for the listeners.
	EnvQueueSize = "MATRIX_QUEUE_SIZE"
	// EnvEvilFloorMs is the floor of "slow for its scene" in ms.
	EnvEvilFloorMs = "MATRIX_EVIL_FLOOR_MS"
	// EnvEvilSceneReportsPerMin bounds the reports per scene and minute,
	// of slow calls, LAG and ANR each.
	EnvEvilSceneReportsPerMin = "MATRIX_EVIL_SCENE_REPORTS_PER_MIN"
	// EnvEvilMethod turns the slow-call tracer on or off.
	EnvEvilMethod = "MATRIX_EVIL_METHOD"
	// EnvSummary turns the summary tracer on or off.
	EnvSummary = "MATRIX_SUMMARY"
	// EnvPropagate turns on or off the trace context that net/http's and
	// gRPC's clients pass on (beat.Config.NoPropagation).
	EnvPropagate = "MATRIX_PROPAGATE"
	// EnvSampleAfterMs is how long a dispatch runs, in ms, before the
	// stacks of its goroutines are sampled (beat.Config.SampleAfter); 0
	// turns sampling off.
	EnvSampleAfterMs = "MATRIX_SAMPLE_AFTER_MS"
	// EnvRepeatMinCalls is the number of calls of a function, or of one
	// boundary, by one call of a function that makes an N+1 pattern (0:
	// none).
	EnvRepeatMinCalls = "MATRIX_REPEAT_MIN_CALLS"
	// EnvRepeatMinPercent is the share of the dispatch, in %, those calls
	// must take.
	EnvRepeatMinPercent = "MATRIX_REPEAT_MIN_PERCENT"
)

// Upper bounds of the values ConfigFromEnv accepts.
const (
	maxEnvThresholdMs = 24 * 60 * 60 * 1000
	maxEnvBufferSize  = 1 << 24 // 128 MiB per buffer
	maxEnvMaxBuffers  = 1 << 12
	maxEnvRecordMB    = 1 << 16 // 64 GiB
	maxEnvMaxChildren = 1 << 12
	maxEnvQueueSize   = 1 << 20
)

// ConfigFromEnv returns DefaultTraceConfig changed by the environment
// variables that are set (getenv is os.Getenv, or a stub in tests):
//
//	MATRIX_EVIL_THRESHOLD_MS  slow-call threshold in ms (1..86400000); set,
//	                          it is the only rule (EvilFloor 0)
//	MATRIX_EVIL_FLOOR_MS      floor of "slow for its scene" in ms (1..86400000)
//	MATRIX_EVIL_SCENE_REPORTS_PER_MIN  reports per scene and minute, of
//	                          slow calls, LAG and ANR each (1..1000000)
//	MATRIX_REPEAT_MIN_CALLS   calls of a function (or of one statement or
//	                          client call) by one call of another that make
//	                          an N+1 pattern (0..1000000; 0: none)
//	MATRIX_REPEAT_MIN_PERCENT share of the dispatch those calls take, in %
//	                          (1..100)
//	MATRIX_BUFFER_SIZE        records per recording buffer (1..16777216)
//	MATRIX_MAX_BUFFERS        dispatches recorded at once (1..4096)
//	MATRIX_RECORD_MEMORY_MB   memory of the recording buffers in MiB
//	                          (1..65536; default 64)
//	MATRIX_MAX_CHILDREN       goroutines recorded per dispatch (0..4096)
//	MATRIX_CHILD_BUFFER_SIZE  records per such goroutine (1..16777216)
//	MATRIX_QUEUE_SIZE         issues queued for the listeners (1..1048576)
//	MATRIX_EVIL_METHOD        slow-call tracer on or off (on/off, true/false, 1/0)
//	MATRIX_SUMMARY            summary tracer on or off (default off)
//	MATRIX_SAMPLE_AFTER_MS    ms a dispatch runs before its goroutines' stacks
//	                          are sampled (0..86400000; 0: never; default 20)
//	MATRIX_PROPAGATE          net/http and gRPC client calls carry the
//	                          dispatch's trace context (traceparent) or not
//	                          (default on)
//	MATRIX_FPS                frame tracer on or off
//	MATRIX_FPS_SLICE_MS       frame time per Trace_FPS report in ms (1..86400000)
//	MATRIX_ANR                lag/ANR watchdog on or off
//	MATRIX_LAG_MS             LAG threshold in ms (1..86400000)
//	MATRIX_ANR_MS             ANR threshold in ms (1..86400000)
//	MATRIX_STARTUP_TRACER     start-up tracer on or off
//	MATRIX_COLD_STARTUP_MS    cold start-up threshold in ms (1..86400000)
//	MATRIX_WARM_STARTUP_MS    warm start-up threshold in ms (1..86400000)
//
// It also sets Dynamic to EnvDynamicConfig(getenv), so that the watchdog
// reads MATRIX_ANR, MATRIX_LAG_MS and MATRIX_ANR_MS again on every tick.
//
// Every bad value is reported, each naming its variable (the error joins
// them, see errors.Join), and leaves only its own setting at its default:
// the configuration returned is the one to run with, whatever the error.
func ConfigFromEnv(getenv func(string) string) (TraceConfig, error) {
	cfg := DefaultTraceConfig()
	p := &envParser{getenv: getenv}
	if p.msVar(EnvEvilThresholdMs, &cfg.EvilThreshold) {
		cfg.EvilFloor = 0
	}
	if cfg.EvilFloor > 0 {
		p.msVar(EnvEvilFloorMs, &cfg.EvilFloor)
	}
	p.intVar(EnvEvilSceneReportsPerMin, 1, 1000000, &cfg.EvilScenes.ReportsPerMinute)
	if p.intVar(EnvRepeatMinCalls, 0, 1000000, &cfg.Repeats.MinCalls) && cfg.Repeats.MinCalls == 0 {
		cfg.Repeats.MinCalls = -1 // none
	}
	p.intVar(EnvRepeatMinPercent, 1, 100, &cfg.Repeats.MinPercent)
	p.intVar(EnvBufferSize, 1, maxEnvBufferSize, &cfg.Beat.BufferSize)
	p.intVar(EnvMaxBuffers, 1, maxEnvMaxBuffers, &cfg.Beat.MaxBuffers)
	if mb := 0; p.intVar(EnvRecordMemoryMB, 1, maxEnvRecordMB, &mb) {
		cfg.Beat.RecordMemory = mb << 20
	}
	maxKids := -1
	p.intVar(EnvMaxChildren, 0, maxEnvMaxChildren, &maxKids)
	switch maxKids {
	case -1: // unset
	case 0:
		cfg.Beat.MaxChildren = -1 // none
	default:
		cfg.Beat.MaxChildren = maxKids
	}
	p.intVar(EnvChildBufferSize, 1, maxEnvBufferSize, &cfg.Beat.ChildBufferSize)
	p.intVar(EnvQueueSize, 1, maxEnvQueueSize, &cfg.QueueSize)
	p.switchVar(EnvEvilMethod, &cfg.EvilMethod)
	p.switchVar(EnvSummary, &cfg.Summary)
	propagate := true
	if p.switchVar(EnvPropagate, &propagate) {
		cfg.Beat.NoPropagation = !propagate
	}
	sampleAfter := -1
	if p.intVar(EnvSampleAfterMs, 0, 86400000, &sampleAfter) {
		cfg.Beat.SampleAfter = time.Duration(sampleAfter) * time.Millisecond
		if sampleAfter == 0 {
			cfg.Beat.SampleAfter = -1 // none
		}
	}
	frameConfigFromEnv(p, &cfg)
	anrConfigFromEnv(p, &cfg)
	startupConfigFromEnv(p, &cfg)
	errs := p.errs
	if len(errs) > 0 {
		return cfg, errors.Join(errs...)
	}
	return cfg, nil
}

// Tracer is one monitor run by the TracePlugin (Matrix's Tracer). Start
// gives it the reporter its issues go to; Stop must wait for the
// goroutines it started. A tracer that also implements beat.Observer is
// registered as an observer of every dispatch while the plugin runs (after
// Start, and unregistered before Stop).
type Tracer interface {
	// Name names the tracer, for example "EvilMethodTracer".
	Name() string
	// Start starts the tracer; its issues go to r.
	Start(r Reporter) error
	// Stop stops the tracer and waits for its goroutines.
	Stop()
}

// TracePlugin is Matrix's TracePlugin: it runs the recorder and the
// tracers, and delivers their issues to the listeners.
type TracePlugin struct {
	cfg     TraceConfig
	tracers []Tracer
	q       *queue

	mu      sync.Mutex
	inited  bool
	started bool
	ownBeat bool // Start started the recorder, so Stop stops it
}

// NewTracePlugin returns a TracePlugin configured by cfg. Invalid values
// are reported by Init.
func NewTracePlugin(cfg TraceConfig) *TracePlugin {
	if cfg.EvilThreshold == 0 {
		cfg.EvilThreshold = DefaultEvilThreshold
	}
	if cfg.AnalysisBacklog == 0 {
		cfg.AnalysisBacklog = DefaultAnalysisBacklog
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	p := &TracePlugin{cfg: cfg, q: newQueue(cfg.QueueSize, cfg.Logger)}
	if cfg.EvilMethod {
		t := NewEvilMethodTracer(cfg.EvilThreshold, cfg.AnalysisBacklog)
		t.SetSlowForScene(cfg.EvilFloor, cfg.EvilScenes)
		t.SetSceneReportsPerMinute(cfg.EvilScenes.ReportsPerMinute)
		rule := cfg.Repeats
		if rule.MinCalls == 0 {
			rule.MinCalls = DefaultRepeatMinCalls
		}
		if rule.MinPercent == 0 {
			rule.MinPercent = DefaultRepeatMinPercent
		}
		t.SetRepeatRule(rule)
		p.tracers = append(p.tracers, t)
	}
	if cfg.Summary {
		p.tracers = append(p.tracers, NewSummaryTracer(0))
	}
	if cfg.FPS {
		p.tracers = append(p.tracers, NewFrameTracer(cfg.Frame))
	}
	if cfg.ANR {
		if cfg.Watchdog.Dynamic == nil {
			cfg.Watchdog.Dynamic = cfg.Dynamic
		}
		if cfg.Watchdog.SceneReportsPerMinute == 0 {
			cfg.Watchdog.SceneReportsPerMinute = cfg.EvilScenes.ReportsPerMinute
		}
		p.tracers = append(p.tracers, NewANRTracer(cfg.Watchdog))
	}
	if cfg.Startup {
		if cfg.StartupThresholds.Dynamic == nil {
			cfg.StartupThresholds.Dynamic = cfg.Dynamic
		}
		p.tracers = append(p.tracers, NewStartupTracer(cfg.StartupThresholds))
	}
	p.tracers = append(p.tracers, cfg.Tracers...)
	return p
}

// Tag returns TracePluginTag.
func (p *TracePlugin) Tag() string { return TracePluginTag }

// AddListener adds a listener for every later issue.
func (p *TracePlugin) AddListener(l Listener) { p.q.addListener(l) }

// Init checks the configuration. It is idempotent; Start calls it.
func (p *TracePlugin) Init() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.initLocked()
}

func (p *TracePlugin) initLocked() error {
	if p.inited {
		return nil
	}
	c := p.cfg
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("tracer: "+format, args...))
		}
	}
	check(c.EvilThreshold < 0, "negative EvilThreshold %v", c.EvilThreshold)
	check(c.AnalysisBacklog < 0, "negative AnalysisBacklog %d", c.AnalysisBacklog)
	check(c.QueueSize < 0, "negative QueueSize %d", c.QueueSize)
	check(c.StopTimeout < 0, "negative StopTimeout %v", c.StopTimeout)
	check(c.Beat.BufferSize < 0, "negative Beat.BufferSize %d", c.Beat.BufferSize)
	check(c.Beat.MaxBuffers < 0, "negative Beat.MaxBuffers %d", c.Beat.MaxBuffers)
	if err := c.Frame.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Watchdog.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.StartupThresholds.validate(); err != nil {
		errs = append(errs, err)
	}
	for i, t := range p.tracers {
		check(t == nil, "tracer %d is nil", i)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	p.inited = true
	return nil
}

// Start initialises the plugin if needed, starts the recorder
// (beat.Start(cfg.Beat); if it already runs, it is left as it is and Stop
// will not stop it), the delivery goroutine and the tracers, and registers
// the tracers that are beat.Observers. Starting a started plugin does
// nothing. In a binary not built with -toolexec=matrixexec it returns an
// error wrapping beat.ErrNotInstrumented and starts nothing.
func (p *TracePlugin) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return nil
	}
	if err := p.initLocked(); err != nil {
		return err
	}
	if !beat.Linked() {
		return fmt.Errorf("tracer: Trace plugin not started, the program is not instrumented (build it with go build -toolexec=matrixexec): %w", beat.ErrNotInstrumented)
	}
	wasRunning := beat.Started()
	if err := beat.Start(p.cfg.Beat); err != nil {
		return fmt.Errorf("tracer: Trace plugin not started: %w", err)
	}
	p.ownBeat = !wasRunning
	p.q.start()
	for i, t := range p.tracers {
		if err := t.Start(p); err != nil {
			for j := i - 1; j >= 0; j-- {
				p.tracers[j].Stop()
			}
			p.stopShared()
			return fmt.Errorf("tracer: start %s: %w", t.Name(), err)
		}
	}
	for _, t := range p.tracers {
		if o, ok := t.(beat.Observer); ok {
			beat.AddObserver(o)
		}
	}
	p.started = true
	return nil
}

// Stop unregisters the tracers, stops them, stops the recorder if Start
// started it, and lets the listeners take the issues still queued (waiting
// at most StopTimeout) before the delivery goroutine exits. Stopping a
// stopped plugin does nothing.
func (p *TracePlugin) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		return
	}
	for _, t := range p.tracers {
		if o, ok := t.(beat.Observer); ok {
			beat.RemoveObserver(o)
		}
	}
	for i := len(p.tracers) - 1; i >= 0; i-- {
		p.tracers[i].Stop()
	}
	p.stopShared()
	p.started = false
}

// stopShared stops the recorder if this plugin started it, then delivery.
func (p *TracePlugin) stopShared() {
	if p.ownBeat {
		beat.Stop()
		p.ownBeat = false
	}
	p.q.stopDelivery(p.cfg.StopTimeout)
}

// Started reports whether the plugin runs.
func (p *TracePlugin) Started() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Report queues an issue for the listeners; it never blocks. It returns
// false, and counts the issue in Dropped, when the queue is full or the
// plugin is not running. Tracers report through it; so may the program.
func (p *TracePlugin) Report(is Issue) bool { return p.q.report(is) }

// Dropped returns the number of issues lost so far: dropped by a full
// queue (or reported while the plugin was stopped), and slow dispatches a
// tracer could not analyse because its backlog was full.
func (p *TracePlugin) Dropped() uint64 {
	n := p.q.dropped.Load()
	for _, t := range p.tracers {
		if d, ok := t.(interface{ Dropped() uint64 }); ok {
			n += d.Dropped()
		}
	}
	return n
}

// ListenerPanics returns the number of listener calls that panicked.
func (p *TracePlugin) ListenerPanics() uint64 { return p.q.panics.Load() }

// Tracers returns the plugin's tracers, built-in ones first.
func (p *TracePlugin) Tracers() []Tracer { return append([]Tracer(nil), p.tracers...) }

// Tracer returns the tracer with the given name, or nil.
func (p *TracePlugin) Tracer(name string) Tracer {
	for _, t := range p.tracers {
		if t != nil && t.Name() == name {
			return t
		}
	}
	return nil
}

// Config returns the plugin's configuration, defaults applied.
func (p *TracePlugin) Config() TraceConfig { return p.cfg }
