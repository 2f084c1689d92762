package tracer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
)

// FrameTracerName is the name of the frame tracer.
const FrameTracerName = "FrameTracer"

// Frame tracer defaults (Matrix's TraceConfig and Constants).
const (
	// DefaultFPSTimeSlice is the frame time after which a scene's frames
	// are reported (Matrix's timeSliceMs, DEFAULT_FPS_TIME_SLICE_ALIVE_MS).
	DefaultFPSTimeSlice = 10 * time.Second
	// DefaultFrameInterval is the interval of a loop made with a
	// non-positive one: a 60 Hz display's.
	DefaultFrameInterval = time.Second / 60
)

// DropLevel classifies a frame by the frames it dropped (Matrix's
// FrameTracer.DropStatus).
type DropLevel int

// Drop levels, from the best to the worst. With the default thresholds a
// frame that dropped d frames is BEST for d in [0,3), NORMAL for [3,9),
// MIDDLE for [9,24), HIGH for [24,42) and FROZEN from 42 on.
const (
	DroppedBest DropLevel = iota
	DroppedNormal
	DroppedMiddle
	DroppedHigh
	DroppedFrozen
	numDropLevels
)

var dropLevelNames = [numDropLevels]string{"DROPPED_BEST", "DROPPED_NORMAL", "DROPPED_MIDDLE", "DROPPED_HIGH", "DROPPED_FROZEN"}

// String returns Matrix's name of the level, the key used in the dropLevel
// and dropSum report fields: DROPPED_BEST, DROPPED_NORMAL, DROPPED_MIDDLE,
// DROPPED_HIGH or DROPPED_FROZEN.
func (l DropLevel) String() string {
	if l >= 0 && l < numDropLevels {
		return dropLevelNames[l]
	}
	return "DropLevel(" + strconv.Itoa(int(l)) + ")"
}

// DropThresholds are the smallest numbers of dropped frames of the NORMAL,
// MIDDLE, HIGH and FROZEN levels (Matrix's normalThreshold,
// middleThreshold, highThreshold and frozenThreshold). Fewer than Normal is
// BEST. The zero value means DefaultDropThresholds.
type DropThresholds struct {
	Normal, Middle, High, Frozen int
}

// DefaultDropThresholds are Matrix's: 3, 9, 24, 42.
var DefaultDropThresholds = DropThresholds{Normal: 3, Middle: 9, High: 24, Frozen: 42}

// Level returns the level of a frame that dropped dropped frames.
func (th DropThresholds) Level(dropped int) DropLevel {
	switch {
	case dropped >= th.Frozen:
		return DroppedFrozen
	case dropped >= th.High:
		return DroppedHigh
	case dropped >= th.Middle:
		return DroppedMiddle
	case dropped >= th.Normal:
		return DroppedNormal
	}
	return DroppedBest
}

func (th DropThresholds) orDefault() DropThresholds {
	if th == (DropThresholds{}) {
		return DefaultDropThresholds
	}
	return th
}

func (th DropThresholds) validate() error {
	th = th.orDefault()
	if th.Normal < 1 || th.Middle <= th.Normal || th.High <= th.Middle || th.Frozen <= th.High {
		return fmt.Errorf("tracer: drop thresholds %+v: want 1 <= Normal < Middle < High < Frozen", th)
	}
	return nil
}

// FrameConfig configures the frame tracer. Zero values mean the defaults.
type FrameConfig struct {
	// TimeSlice is the frame time a scene accumulates before its frames
	// are reported as one Trace_FPS issue. Default DefaultFPSTimeSlice.
	TimeSlice time.Duration
	// Thresholds are the drop levels' bounds. Default
	// DefaultDropThresholds.
	Thresholds DropThresholds
}

// DefaultFrameConfig returns Matrix's defaults: a report per scene every
// 10 s of frame time, drop levels at 3, 9, 24 and 42 frames.
func DefaultFrameConfig() FrameConfig {
	return FrameConfig{TimeSlice: DefaultFPSTimeSlice, Thresholds: DefaultDropThresholds}
}

// validate reports a bad configuration (TracePlugin.Init calls it).
func (c FrameConfig) validate() error {
	var errs []error
	if c.TimeSlice < 0 {
		errs = append(errs, fmt.Errorf("tracer: negative Frame.TimeSlice %v", c.TimeSlice))
	}
	if err := c.Thresholds.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Environment variables of the frame tracer, read by ConfigFromEnv.
const (
	// EnvFPS turns the frame tracer on or off.
	EnvFPS = "MATRIX_FPS"
	// EnvFPSSliceMs is the frame time per Trace_FPS report, in ms.
	EnvFPSSliceMs = "MATRIX_FPS_SLICE_MS"
)

// frameConfigFromEnv applies MATRIX_FPS and MATRIX_FPS_SLICE_MS to cfg.
func frameConfigFromEnv(p *envParser, cfg *TraceConfig) {
	p.switchVar(EnvFPS, &cfg.FPS)
	p.msVar(EnvFPSSliceMs, &cfg.Frame.TimeSlice)
}

// DroppedFrames returns the frames a frame of the given cost dropped in a
// loop with the given interval: 0 for a frame within its interval, else
// ⌊(cost − interval) / interval⌋, Matrix's (int)((cost − frameInterval) /
// frameInterval). A frame that takes between 2 and 3 intervals drops one:
// exactly what a time.Ticker does, which holds one tick for a slow receiver
// and drops the ones after it.
func DroppedFrames(cost, interval time.Duration) int {
	if interval <= 0 || cost <= interval {
		return 0
	}
	return int((cost - interval) / interval)
}

// FrameListener is told about frames that dropped many frames, Matrix's
// IDropFrameListener.
type FrameListener interface {
	// DroppedFrames is called after a frame of scene that took cost and
	// so dropped dropped frames (see the package function DroppedFrames).
	DroppedFrames(scene string, dropped int, cost time.Duration)
}

// FrameListenerFunc adapts a function to FrameListener.
type FrameListenerFunc func(scene string, dropped int, cost time.Duration)

// DroppedFrames calls f.
func (f FrameListenerFunc) DroppedFrames(scene string, dropped int, cost time.Duration) {
	f(scene, dropped, cost)
}

type frameListener struct {
	id        uint64
	threshold int
	l         FrameListener
}

// FrameTracer is the frame tracer, Matrix's FrameTracer (tag Trace_FPS).
// Frame loops (FrameLoop) tell it the cost of each frame; it computes the
// frames each one dropped against the loop's interval (DroppedFrames),
// classifies them into drop levels (DropThresholds), and reports per scene
// (and interval), each time the scene has accumulated TimeSlice of frame
// time, an issue tagged TagFPS (key: the scene) with content:
//
//	scene        the loop's scene
//	dropLevel    {"DROPPED_BEST": n, "DROPPED_NORMAL": n, …}: frames per level
//	dropSum      the same keys: frames dropped by the frames of each level
//	fps          frames per second achieved: refreshRate × frames / slots
//	refreshRate  the intended rate, 1 s / interval, in Hz
//	interval     the loop's interval in ms
//	frames       frames in the report
//	dropped      frames dropped in all
//	frameTime    the frame time the report covers, slots × interval, in ms
//
// As in Matrix, frame time is counted in slots of the interval: a frame that
// dropped d frames takes d+1 slots, so fps never exceeds the refresh rate
// and a loop that idles between frames (no work to do) is not penalised.
// A loop accumulates frame time only while it runs frames; a report covers
// at least TimeSlice of it. Stop reports what each scene accumulated since
// its last report, so no frame is lost at exit (Matrix drops it).
//
// Frames that dropped at least a listener's threshold are also passed to
// that listener (AddFrameListener).
//
// The tracer starts no goroutine. A frame costs two clock reads, a few
// atomic loads and an uncontended lock of its scene, and allocates nothing;
// the report of a slice allocates its issue. Scenes are kept until Stop:
// use a bounded set of scene names (screens, loops), not one per request.
type FrameTracer struct {
	settings  atomic.Pointer[frameSettings]
	run       atomic.Pointer[frameRun]
	listeners atomic.Pointer[[]frameListener]
	panics    atomic.Uint64

	mu     sync.Mutex // serialises Start, Stop and listener changes
	nextID uint64
}

type frameSettings struct {
	slice time.Duration
	th    DropThresholds
}

// frameRun is the state of a FrameTracer between Start and Stop.
type frameRun struct {
	r       Reporter
	mu      sync.Mutex
	scenes  map[sceneKey]*sceneStats
	stopped bool
}

type sceneKey struct {
	scene    string
	interval time.Duration
}

// sceneStats is the aggregate of one scene's frames since its last report.
type sceneStats struct {
	run *frameRun
	key sceneKey

	mu      sync.Mutex
	closed  bool // the run stopped: later frames are not counted
	frames  int
	slots   int // Σ (dropped+1)
	dropped int
	level   [numDropLevels]int
	sum     [numDropLevels]int
}

// NewFrameTracer returns a frame tracer configured by cfg (zero values mean
// the defaults; invalid thresholds are replaced by the defaults, TracePlugin
// reports them as an error).
func NewFrameTracer(cfg FrameConfig) *FrameTracer {
	t := &FrameTracer{}
	t.SetTimeSlice(cfg.TimeSlice)
	if err := t.SetThresholds(cfg.Thresholds); err != nil {
		t.SetThresholds(DefaultDropThresholds)
	}
	return t
}

// Name returns FrameTracerName.
func (t *FrameTracer) Name() string { return FrameTracerName }

// SetTimeSlice changes, at run time, the frame time per report
// (DefaultFPSTimeSlice if slice <= 0). It applies from the next frame.
func (t *FrameTracer) SetTimeSlice(slice time.Duration) {
	if slice <= 0 {
		slice = DefaultFPSTimeSlice
	}
	for {
		old := t.settings.Load()
		s := &frameSettings{slice: slice, th: DefaultDropThresholds}
		if old != nil {
			s.th = old.th
		}
		if t.settings.CompareAndSwap(old, s) {
			return
		}
	}
}

// TimeSlice returns the frame time per report.
func (t *FrameTracer) TimeSlice() time.Duration { return t.settings.Load().slice }

// SetThresholds changes, at run time, the drop levels' bounds (the zero
// value means DefaultDropThresholds). It returns an error, and changes
// nothing, unless 1 <= Normal < Middle < High < Frozen.
func (t *FrameTracer) SetThresholds(th DropThresholds) error {
	if err := th.validate(); err != nil {
		return err
	}
	th = th.orDefault()
	for {
		old := t.settings.Load()
		s := &frameSettings{slice: DefaultFPSTimeSlice, th: th}
		if old != nil {
			s.slice = old.slice
		}
		if t.settings.CompareAndSwap(old, s) {
			return nil
		}
	}
}

// Thresholds returns the drop levels' bounds.
func (t *FrameTracer) Thresholds() DropThresholds { return t.settings.Load().th }

// AddFrameListener registers l for every later frame that dropped at least
// threshold frames (every frame if threshold <= 0), like Matrix's
// setDropFrameListener, and returns a function that unregisters it. l is
// called on the frame's goroutine after the frame, while the tracer runs;
// it must be quick (it delays the loop's next frame). A panic in l is
// recovered and counted (ListenerPanics).
func (t *FrameTracer) AddFrameListener(threshold int, l FrameListener) (remove func()) {
	if l == nil {
		return func() {}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextID++
	id := t.nextID
	var list []frameListener
	if p := t.listeners.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, frameListener{id: id, threshold: threshold, l: l})
	t.listeners.Store(&list)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		p := t.listeners.Load()
		if p == nil {
			return
		}
		list := slices.DeleteFunc(slices.Clone(*p), func(x frameListener) bool { return x.id == id })
		t.listeners.Store(&list)
	}
}

// ListenerPanics returns the number of frame listener calls that panicked.
func (t *FrameTracer) ListenerPanics() uint64 { return t.panics.Load() }

// active lists the started frame tracers; the last one started is the one
// frame loops made by NewFrameLoop report to.
var (
	activeMu     sync.Mutex
	activeList   []*FrameTracer
	activeFrames atomic.Pointer[FrameTracer]
)

func setActive(t *FrameTracer, on bool) {
	activeMu.Lock()
	defer activeMu.Unlock()
	activeList = slices.DeleteFunc(activeList, func(x *FrameTracer) bool { return x == t })
	if on {
		activeList = append(activeList, t)
	}
	if n := len(activeList); n > 0 {
		activeFrames.Store(activeList[n-1])
	} else {
		activeFrames.Store(nil)
	}
}

// Start starts aggregating frames; issues go to r. The tracer becomes the
// one that loops made by NewFrameLoop report to (the last started wins).
// Starting a started tracer does nothing. Start works in any build: a
// FrameTracer started by hand, without the TracePlugin, reports frames in a
// program not built with matrixexec too.
func (t *FrameTracer) Start(r Reporter) error {
	if r == nil {
		return errors.New("tracer: FrameTracer started without a reporter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.run.Load() != nil {
		return nil
	}
	t.run.Store(&frameRun{r: r, scenes: map[sceneKey]*sceneStats{}})
	setActive(t, true)
	return nil
}

// Stop stops aggregating and reports each scene's frames since its last
// report (scenes in order of name, then interval). Frames that end after
// Stop are not counted.
func (t *FrameTracer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	run := t.run.Swap(nil)
	if run == nil {
		return
	}
	setActive(t, false)
	run.mu.Lock()
	run.stopped = true
	scenes := make([]*sceneStats, 0, len(run.scenes))
	for _, s := range run.scenes {
		scenes = append(scenes, s)
	}
	run.scenes = nil
	run.mu.Unlock()
	slices.SortFunc(scenes, func(a, b *sceneStats) int {
		if c := strings.Compare(a.key.scene, b.key.scene); c != 0 {
			return c
		}
		return cmp.Compare(a.key.interval, b.key.interval)
	})
	now := time.Now()
	for _, s := range scenes {
		s.mu.Lock()
		s.closed = true
		var content *FrameReport
		if s.frames > 0 {
			content = s.content()
		}
		s.mu.Unlock()
		if content != nil {
			run.r.Report(newReportIssue(TagFPS, s.key.scene, now, content))
		}
	}
}

// Running reports whether the tracer has been started and not stopped.
func (t *FrameTracer) Running() bool { return t.run.Load() != nil }

// scene returns the aggregate of k, made on first use; nil once stopped.
func (r *frameRun) scene(k sceneKey) *sceneStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	s := r.scenes[k]
	if s == nil {
		s = &sceneStats{run: r, key: k}
		r.scenes[k] = s
	}
	return s
}

func (s *sceneStats) add(dropped int, lv DropLevel) {
	s.frames++
	s.slots += dropped + 1
	s.dropped += dropped
	s.level[lv]++
	s.sum[lv] += dropped
}

func (s *sceneStats) reset() {
	s.frames, s.slots, s.dropped = 0, 0, 0
	s.level = [numDropLevels]int{}
	s.sum = [numDropLevels]int{}
}

// content is the report of the frames since the last one; s.mu is held.
func (s *sceneStats) content() *FrameReport {
	interval := s.key.interval
	frameTime := time.Duration(s.slots) * interval
	refresh := float64(time.Second) / float64(interval)
	level := make(map[string]int, numDropLevels)
	sum := make(map[string]int, numDropLevels)
	for i := range numDropLevels {
		level[i.String()] = s.level[i]
		sum[i.String()] = s.sum[i]
	}
	return &FrameReport{
		Scene:       s.key.scene,
		DropLevel:   level,
		DropSum:     sum,
		FPS:         round(refresh*float64(s.frames)/float64(s.slots), 2),
		RefreshRate: round(refresh, 2),
		Interval:    round(float64(interval)/float64(time.Millisecond), 3),
		Frames:      s.frames,
		Dropped:     s.dropped,
		FrameTime:   frameTime.Milliseconds(),
	}
}

func round(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}

// frame counts one frame of cost in scene k, reports the scene if its slice
// is full, and calls the listeners. It returns the frames dropped.
func (t *FrameTracer) frame(cache *atomic.Pointer[sceneStats], k sceneKey, cost time.Duration) int {
	run := t.run.Load()
	if run == nil {
		return 0
	}
	s := cache.Load()
	if s == nil || s.run != run {
		if s = run.scene(k); s == nil {
			return 0
		}
		cache.Store(s)
	}
	set := t.settings.Load()
	dropped := DroppedFrames(cost, k.interval)
	lv := set.th.Level(dropped)
	var content *FrameReport
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return dropped
	}
	s.add(dropped, lv)
	if time.Duration(s.slots)*k.interval >= set.slice {
		content = s.content()
		s.reset()
	}
	s.mu.Unlock()
	if content != nil {
		run.r.Report(newReportIssue(TagFPS, k.scene, time.Time{}, content))
	}
	if p := t.listeners.Load(); p != nil {
		for _, fl := range *p {
			if dropped >= fl.threshold {
				t.callListener(fl.l, k.scene, dropped, cost)
			}
		}
	}
	return dropped
}

func (t *FrameTracer) callListener(l FrameListener, scene string, dropped int, cost time.Duration) {
	defer func() {
		if recover() != nil {
			t.panics.Add(1)
		}
	}()
	l.DroppedFrames(scene, dropped, cost)
}

// FrameLoop is a loop with an intended interval between frames: a game or
// UI loop, a ticker, a periodic worker. Each frame is timed and reported to
// a FrameTracer, which counts the frames it dropped against the interval
// (Trace_FPS reports), and each frame is a dispatch (beat.KindFrame, named
// after the scene), so a frame slower than the slow-call threshold is
// reported by the slow-call tracer with its call tree.
//
// A frame's cost is its own duration, from its start to its end, as
// Matrix measures a Choreographer frame against the frame interval; the
// time a loop waits between frames (for its ticker, for work) is not a
// frame and drops nothing.
//
// Frame may be called from any number of goroutines. BeginFrame and
// EndFrame keep the open frame in the loop: a loop driven by them belongs
// to one goroutine, which calls them in pairs. Loops with different scenes
// may run concurrently; loops with the same scene and interval share one
// aggregate.
//
// In a program not built with matrixexec (or while the recorder is off)
// frames are not dispatches and have no call trees, but they are still
// timed and reported to a running FrameTracer; the TracePlugin does not run
// in such a program, so start a FrameTracer by hand there. While no
// FrameTracer runs, a frame costs two atomic loads and beat.Begin's check:
// no clock read.
type FrameLoop struct {
	key   sceneKey
	bound *FrameTracer // nil: the active FrameTracer
	stats atomic.Pointer[sceneStats]

	// The frame opened by BeginFrame.
	open      *beat.Dispatch
	openStart time.Time
	opened    bool
}

// NewFrameLoop returns a frame loop for scene whose frames are meant to
// start every interval (DefaultFrameInterval, 60 Hz, if interval <= 0). It
// reports to the FrameTracer started last (the TracePlugin's, in the
// default configuration), whichever it is at each frame.
func NewFrameLoop(scene string, interval time.Duration) *FrameLoop {
	if interval <= 0 {
		interval = DefaultFrameInterval
	}
	return &FrameLoop{key: sceneKey{scene: scene, interval: interval}}
}

// NewFrameLoop returns a frame loop like the package function NewFrameLoop
// that reports to t only.
func (t *FrameTracer) NewFrameLoop(scene string, interval time.Duration) *FrameLoop {
	l := NewFrameLoop(scene, interval)
	l.bound = t
	return l
}

// Scene returns the loop's scene.
func (l *FrameLoop) Scene() string { return l.key.scene }

// Interval returns the loop's intended interval between frames.
func (l *FrameLoop) Interval() time.Duration { return l.key.interval }

// tracer returns the tracer the loop reports to now, or nil.
func (l *FrameLoop) tracer() *FrameTracer {
	t := l.bound
	if t == nil {
		t = activeFrames.Load()
	}
	if t == nil || t.run.Load() == nil {
		return nil
	}
	return t
}

// Frame runs fn as one frame: a dispatch of kind beat.KindFrame named after
// the scene (on a goroutine already inside a dispatch, it joins that one),
// timed and reported. If fn panics, the frame still ends and counts.
func (l *FrameLoop) Frame(fn func()) {
	d := beat.Begin(beat.KindFrame, l.key.scene)
	var start time.Time
	if l.tracer() != nil {
		start = time.Now()
	}
	defer l.finish(d, start)
	fn()
}

func (l *FrameLoop) finish(d *beat.Dispatch, start time.Time) {
	var cost time.Duration
	if !start.IsZero() {
		cost = time.Since(start)
	}
	d.End()
	if !start.IsZero() {
		l.frameWith(cost)
	}
}

// BeginFrame starts a frame for a loop that does not fit in a function;
// EndFrame ends it. Both must be called on the loop's goroutine. A
// BeginFrame while a frame is open ends that frame first.
func (l *FrameLoop) BeginFrame() {
	if l.opened {
		l.EndFrame()
	}
	l.open = beat.Begin(beat.KindFrame, l.key.scene)
	l.openStart = time.Time{}
	if l.tracer() != nil {
		l.openStart = time.Now()
	}
	l.opened = true
}

// EndFrame ends the frame BeginFrame started; without one it does nothing.
func (l *FrameLoop) EndFrame() {
	if !l.opened {
		return
	}
	d, start := l.open, l.openStart
	l.open, l.openStart, l.opened = nil, time.Time{}, false
	l.finish(d, start)
}

// frameWith counts a frame of the given cost without running one: the
// deterministic entry point of the tests. It returns the frames dropped.
func (l *FrameLoop) frameWith(cost time.Duration) int {
	t := l.tracer()
	if t == nil {
		return 0
	}
	return t.frame(&l.stats, l.key, cost)
}
