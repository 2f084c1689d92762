package tracer

import (
	"flag"
	"sync"
	"sync/atomic"
	"time"
)

// startupState is the process-wide start-up state that Ready, Reload and
// the tracers share.
type startupState struct {
	mu       sync.Mutex
	coldAt   time.Time // when the cold start became ready, zero before
	scene    string    // what made it ready
	warmFrom time.Time // the warm start in progress, zero if none
	warmFunc bool      // it belongs to a ReloadFunc
	tracers  []*StartupTracer
}

var (
	startup startupState
	// coldReady and warmPending mirror coldAt and warmFrom for the fast
	// paths of Ready and DispatchEnd.
	coldReady   atomic.Bool
	warmPending atomic.Bool
	// startupNow is the clock of Ready, Reload and ReloadFunc.
	startupNow = time.Now
)

// isTestBinary reports whether the program is a test binary (the testing
// package registered its flags).
var isTestBinary = sync.OnceValue(func() bool { return flag.Lookup("test.v") != nil })

func (s *startupState) register(t *StartupTracer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tracers = append(s.tracers, t)
	if !s.coldAt.IsZero() && !t.coldQueued {
		t.coldQueued = true
		t.send(startupEvent{at: s.coldAt, scene: s.scene})
	}
}

// anyEnabled reports whether a registered tracer has its reports on (the
// condition under which DispatchEnd makes the process ready).
func (s *startupState) anyEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tracers {
		if t.enabled.Load() && !t.testBin() {
			return true
		}
	}
	return false
}

func (s *startupState) unregister(t *StartupTracer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.tracers {
		if x == t {
			s.tracers = append(s.tracers[:i], s.tracers[i+1:]...)
			break
		}
	}
}

// ready ends the cold start if it is still in progress, else the warm
// start in progress that Reload began.
func (s *startupState) ready(at time.Time, scene string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.coldAt.IsZero() {
		s.coldAt, s.scene = at, scene
		coldReady.Store(true)
		for _, t := range s.tracers {
			if !t.coldQueued {
				t.coldQueued = true
				t.send(startupEvent{at: at, scene: scene})
			}
		}
		return
	}
	if s.warmFrom.IsZero() || s.warmFunc || scene == StartupSceneHTTP {
		return
	}
	s.endWarmLocked(startupEvent{warm: true, from: s.warmFrom, at: at, scene: scene, rec: recWarmMarked})
}

// beginWarm begins a warm start at from, for a ReloadFunc if fn. It
// reports false when there is nothing to begin: the cold start is still in
// progress, or a warm start already is (a ReloadFunc takes over one that
// Reload began).
func (s *startupState) beginWarm(from time.Time, fn bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.coldAt.IsZero() {
		return false
	}
	if !s.warmFrom.IsZero() {
		if !fn || s.warmFunc {
			return false
		}
		s.warmFunc = true
		return true
	}
	s.warmFrom, s.warmFunc = from, fn
	warmPending.Store(true)
	return true
}

// endWarm ends the warm start a ReloadFunc began.
func (s *startupState) endWarm(ev startupEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.from = s.warmFrom
	s.endWarmLocked(ev)
}

func (s *startupState) endWarmLocked(ev startupEvent) {
	s.warmFrom, s.warmFunc = time.Time{}, false
	warmPending.Store(false)
	for _, t := range s.tracers {
		t.send(ev)
	}
}

// reset forgets the cold start and any warm start in progress, and
// restores the clock: for tests, which share one process.
func (s *startupState) reset() {
	s.mu.Lock()
	s.coldAt, s.scene = time.Time{}, ""
	s.warmFrom, s.warmFunc = time.Time{}, false
	s.mu.Unlock()
	coldReady.Store(false)
	warmPending.Store(false)
	startupNow = time.Now
}
