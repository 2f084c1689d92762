package beat

import (
	"sync"
	"sync/atomic"

	"github.com/matrixgo/matrix/internal/abi"
)

// A goroutine that exits while it is inside a dispatch (it returned or
// called runtime.Goexit between Begin and End) can never end it. The
// runtime clears the goroutine's slot when it exits, so that a goroutine
// that reuses its g records nothing into the dead dispatch, and marks the
// dispatch's ring abandoned (abi.RingAbandoned). beat reaps such a
// dispatch the next time a dispatch begins or the running dispatches are
// listed: it leaves the running list without a DispatchEnd (so it is never
// reported as slow, LAG or ANR), observers that implement AbandonObserver
// are told, its buffer goes back to the pool, and Stats.Abandoned counts it.
var (
	abandonSeen atomic.Uint32 // the runtime's count when last reaped
	abandonedN  atomic.Uint64
	reapMu      sync.Mutex
)

// AbandonObserver is an Observer that also wants to know of a dispatch
// abandoned by its goroutine (it will get no DispatchEnd), to release what
// it keeps for it. DispatchAbandoned runs on whichever goroutine reaps the
// dispatch; the dispatch is valid only during the call.
type AbandonObserver interface {
	Observer
	DispatchAbandoned(d *Dispatch)
}

// reapAbandoned reaps the abandoned dispatches when the runtime's count
// changed since the last reap: otherwise it costs one call and a load.
func reapAbandoned() {
	c := rtAbandonedCount()
	if c == abandonSeen.Load() {
		return
	}
	if !reapMu.TryLock() {
		return // another goroutine is reaping
	}
	defer reapMu.Unlock()
	abandonSeen.Store(c) // marks after this load are seen by the next reap
	var dead []*Dispatch
	running.Lock()
	for d := runList.head; d != nil; {
		next := d.next
		if atomic.LoadUint64(&d.ring.State)&abi.RingAbandoned != 0 {
			runList.remove(d)
			dead = append(dead, d)
		}
		d = next
	}
	running.Unlock()
	for _, d := range dead {
		abandonedN.Add(1)
		forObservers(func(o Observer) {
			if a, ok := o.(AbandonObserver); ok {
				a.DispatchAbandoned(d)
			}
		})
		if d.data != nil {
			d.rec.putBuffer(d.data)
		}
		// The Dispatch itself is left to the collector, not pooled: the
		// exit of its goroutine orders that goroutine's last reads of it
		// before this point, but through the runtime, where the race
		// detector does not see it.
	}
}
