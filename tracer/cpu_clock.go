package tracer

import (
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
)

// A process CPU reading is a syscall (getrusage), about 0.5–1 µs: ten
// times the rest of a dispatch's cost. So DispatchBegin takes the reading
// from a shared cache when it is recent enough (cpuClock) and keeps it in
// the dispatch (beat.Dispatch.SetCPUMark), and DispatchEnd of a slow
// dispatch takes a fresh one. The cpu of a slow call is then the
// process CPU time between the cached reading and the end, and its usage
// is that over the wall time between the same two instants: exact for an
// interval that differs from the dispatch by at most cpuMaxAge (1 % of the
// threshold).

// cpuBase is the origin of cpuNow in a plain build.
var cpuBase = time.Now()

// cpuNow reads the monotonic clock of the times in cpuClock and the marks:
// the recorder's (beat.Nanotime), which gives a dispatch's beginning
// without a time.Time (beat.Dispatch.StartNano), or in a plain build the
// time since cpuBase.
func cpuNow() time.Duration {
	if beat.Linked() {
		return time.Duration(beat.Nanotime())
	}
	return time.Since(cpuBase)
}

// cpuMaxAge is how old a cached reading may be for a dispatch beginning
// now, for a slow-call threshold.
func cpuMaxAge(threshold time.Duration) time.Duration { return threshold / 100 }

// cpuReading is the process CPU time ns at the monotonic instant at
// (cpuNow).
type cpuReading struct {
	ns int64
	at time.Duration
}

// cpuClock caches the latest reading behind a sequence lock, so that
// readers never block nor allocate.
type cpuClock struct {
	seq atomic.Uint64 // odd while a writer updates
	ns  atomic.Int64
	at  atomic.Int64
}

// read returns a reading taken within maxAge of the instant now (cpuNow),
// from the cache if it has one, else from a fresh syscall that
// then refreshes the cache.
func (c *cpuClock) read(now, maxAge time.Duration) (cpuReading, bool) {
	if s := c.seq.Load(); s&1 == 0 && s != 0 {
		r := cpuReading{ns: c.ns.Load(), at: time.Duration(c.at.Load())}
		if c.seq.Load() == s && r.at >= now-maxAge && r.at <= now+maxAge {
			return r, true
		}
	}
	return c.refresh()
}

// refresh takes a fresh reading and publishes it unless another goroutine
// is publishing one.
func (c *cpuClock) refresh() (cpuReading, bool) {
	at := cpuNow()
	ns, ok := processCPU()
	if !ok {
		return cpuReading{}, false
	}
	r := cpuReading{ns: ns, at: at}
	if s := c.seq.Load(); s&1 == 0 && c.seq.CompareAndSwap(s, s+1) {
		c.ns.Store(r.ns)
		c.at.Store(int64(r.at))
		c.seq.Store(s + 2)
	}
	return r, true
}
