package tracer

import (
	"sync"
	"time"
)

// Reports per scene and minute.
//
// A flood of slow requests on one route (an incident: a database that
// slows down, a lock everyone waits for) would otherwise file a report for
// each, whatever the cost: thousands a minute for one route, each with its
// call tree, when a few say what happened. So every kind of report of a
// dispatch (a slow call, a LAG, an ANR) is bounded per scene: at most
// perMinute a minute each. The minute starts with the scene's first report
// after the previous minute ended. In it:
//
//   - the first half of the reports (rounded up: 3 of 6) are taken as they
//     come, so that the incident's start is reported at once;
//   - the rest of the minute is cut into as many intervals as reports
//     remain (three of 20 s), and each interval reports one dispatch: for a
//     slow call, the costliest of the interval, kept (its records copied)
//     until the interval ends and then reported; for a LAG or an ANR,
//     which are snapshots of dispatches stuck for the same time, the first
//     of the interval, at once;
//   - every other dispatch is held back and counted: the next report of the
//     scene says how many (heldBack).
//
// So the reports of an incident span it: its first moments, then the worst
// of every interval for as long as it lasts. A scene's kept dispatch is
// reported at the latest when its interval ends (the tracer looks once a
// second) or when the tracer stops. At most maxBoundScenes scenes are told
// apart (the others share one budget) and at most maxHeldDispatches
// dispatches are kept at once (beyond, an interval's dispatch is held back
// instead), so that the memory stays bounded.
const (
	// maxBoundScenes is the number of scenes with budgets of their own.
	maxBoundScenes = DefaultMaxScenes
	// maxHeldDispatches bounds the dispatches kept until their interval
	// ends, over all scenes.
	maxHeldDispatches = 32
)

// boundAction is what the bound decides for one dispatch.
type boundAction int

const (
	// boundHeldBack: not reported, counted.
	boundHeldBack boundAction = iota
	// boundReport: reported now, with the count held back before it.
	boundReport
	// boundKeep: kept as its interval's costliest, reported when the
	// interval ends (see reportBound.due).
	boundKeep
)

// reportBound bounds one kind of report per scene and minute (see above).
// It is safe for concurrent use.
type reportBound struct {
	perMinute int
	mu        sync.Mutex
	scenes    map[string]*sceneBudget
	other     sceneBudget
	held      int // dispatches kept, over all scenes
}

// sceneBudget is one scene's minute.
type sceneBudget struct {
	start    int64 // when the minute began, ns of the clock the caller uses
	started  bool
	taken    int    // reports of the minute
	slot     int    // the last interval that had its report; -1 for none
	heldBack uint64 // dispatches not reported since the last report
	kept     any    // the interval's costliest, nil if none
	keptCost time.Duration
	keptSlot int
}

// newReportBound returns a bound of perMinute reports per scene and
// minute; 0 or less means DefaultSceneReportsPerMinute.
func newReportBound(perMinute int) *reportBound {
	if perMinute <= 0 {
		perMinute = DefaultSceneReportsPerMinute
	}
	return &reportBound{perMinute: perMinute, scenes: map[string]*sceneBudget{}}
}

// budget returns scene's budget. Call it with b.mu held.
func (b *reportBound) budget(scene string) *sceneBudget {
	if s, ok := b.scenes[scene]; ok {
		return s
	}
	if len(b.scenes) >= maxBoundScenes {
		return &b.other
	}
	s := &sceneBudget{}
	b.scenes[scene] = s
	return s
}

// firstTaken is the number of reports of a minute taken as they come.
func (b *reportBound) firstTaken() int { return (b.perMinute + 1) / 2 }

// interval returns the length of the intervals after the first reports,
// and their number (0: none).
func (b *reportBound) interval() (time.Duration, int) {
	n := b.perMinute - b.firstTaken()
	if n == 0 {
		return 0, 0
	}
	return time.Minute / time.Duration(n), n
}

// admit decides for one dispatch of scene that cost cost and ended (or was
// seen) at now. With keep nil (a LAG or ANR), an interval reports its first
// dispatch; otherwise keep builds what is kept for the costliest dispatch
// of its interval (called with the bound's lock held, only when the
// dispatch is kept), and the one it replaces, if any, is returned as
// dropped for the caller to release. heldBack is, for boundReport, the
// count of dispatches held back since the scene's last report.
func (b *reportBound) admit(scene string, cost time.Duration, now int64, keep func() any) (act boundAction, heldBack uint64, dropped any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.budget(scene)
	if !s.started || time.Duration(now-s.start) >= time.Minute {
		if s.kept != nil {
			// The last minute's kept dispatch is due: the caller
			// reports it at its next look (due). This one waits.
			s.heldBack++
			return boundHeldBack, 0, nil
		}
		s.start, s.started, s.taken, s.slot = now, true, 0, -1
	}
	if s.taken < b.firstTaken() {
		s.taken++
		heldBack, s.heldBack = s.heldBack, 0
		return boundReport, heldBack, nil
	}
	length, n := b.interval()
	if n == 0 {
		s.heldBack++
		return boundHeldBack, 0, nil
	}
	slot := min(int(time.Duration(now-s.start)/length), n-1)
	if slot <= s.slot {
		s.heldBack++
		return boundHeldBack, 0, nil
	}
	if keep == nil {
		s.slot = slot
		s.taken++
		heldBack, s.heldBack = s.heldBack, 0
		return boundReport, heldBack, nil
	}
	switch {
	case s.kept == nil && b.held >= maxHeldDispatches:
		s.heldBack++
		return boundHeldBack, 0, nil
	case s.kept == nil:
		b.held++
	case s.keptSlot != slot:
		// The kept one's interval ended and it was not reported yet:
		// it is due; this one waits for the next look.
		s.heldBack++
		return boundHeldBack, 0, nil
	case cost <= s.keptCost:
		s.heldBack++
		return boundHeldBack, 0, nil
	default:
		dropped = s.kept
		s.heldBack++ // the one it replaces
	}
	s.kept, s.keptCost, s.keptSlot = keep(), cost, slot
	return boundKeep, 0, dropped
}

// due calls report, outside the bound's lock, for each kept dispatch whose
// interval has ended by now (every one, with all), with the count of
// dispatches held back since its scene's last report.
func (b *reportBound) due(now int64, all bool, report func(kept any, heldBack uint64)) {
	type dueOne struct {
		kept     any
		heldBack uint64
	}
	var ready []dueOne
	b.mu.Lock()
	if b.held == 0 {
		b.mu.Unlock()
		return
	}
	length, _ := b.interval()
	take := func(s *sceneBudget) {
		if s.kept == nil {
			return
		}
		end := s.start + int64(length)*int64(s.keptSlot+1)
		if !all && now < end {
			return
		}
		ready = append(ready, dueOne{s.kept, s.heldBack})
		s.slot, s.taken, s.heldBack, s.kept = s.keptSlot, s.taken+1, 0, nil
		b.held--
	}
	for _, s := range b.scenes {
		take(s)
	}
	take(&b.other)
	b.mu.Unlock()
	for _, r := range ready {
		report(r.kept, r.heldBack)
	}
}
