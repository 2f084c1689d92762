package tracer

import (
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Slow for its scene.
//
// A fixed threshold is Matrix's rule for an Android UI thread, where 700 ms
// is slow whatever the screen. A service's routes differ by orders of
// magnitude: a route that usually answers in 5 ms is slow at 300 ms, and a
// report that waits for 700 ms never comes. So, unless a threshold is set,
// the slow-call tracer keeps, for each scene (the route template, the test,
// …), a histogram of the costs of its recent dispatches, and reports a
// dispatch that
//
//   - took the absolute threshold (EvilThreshold) or longer: always, as
//     with a fixed threshold; or
//   - took at least the floor (EvilFloor) and more than the 99th percentile
//     of its scene's last Window dispatches. Until the scene has MinSamples
//     dispatches, the floor alone applies.
//
// Reports are bounded per scene and minute (ReportsPerMinute, see
// bound.go), whichever rule took them; the dispatches held back are
// counted and the next report of the scene says how many (heldBack).
// Every report of this mode says why it was taken
// (why): "p99 of GET /orders/{id} over the last 1000: 212 ms", "at least
// the floor of 100 ms (12 earlier GET /orders/{id})", "over the threshold
// of 700 ms".
//
// The estimate: each scene has two histograms of Window/2 dispatches each,
// the current one and the one before; when the current one is full it
// replaces the older. The percentile is read over both, so over the last
// Window/2 to Window dispatches. Buckets are powers of two of a microsecond,
// each split in four (at most 25 % wide, from 1 ms to 2^32 µs, 71 minutes), and the
// percentile is the upper edge of its bucket: a dispatch is taken when it
// is beyond that bucket. Recording a fast dispatch is two atomic adds in a
// shard (sceneShard); the percentile is computed only for a dispatch over
// the floor. At most MaxScenes scenes have histograms of their own (2 × 93
// counters of 4 bytes and 8 shards of 128 bytes, under 2 KiB each: at most
// 512 KiB); the dispatches of scenes beyond share one.

// Defaults of "slow for its scene".
const (
	// DefaultEvilFloor is the cost under which no dispatch is slow for
	// its scene: below it, no service owner looks for a call tree.
	DefaultEvilFloor = 100 * time.Millisecond
	// DefaultSceneWindow is the number of recent dispatches of a scene
	// whose percentile is taken.
	DefaultSceneWindow = 1000
	// DefaultSceneMinSamples is the number of dispatches a scene needs
	// before its percentile is used.
	DefaultSceneMinSamples = 100
	// DefaultSceneReportsPerMinute bounds the reports per scene and
	// minute: of slow calls, whatever their cost, and of LAG and ANR
	// reports, each.
	DefaultSceneReportsPerMinute = 6
	// DefaultMaxScenes is the number of scenes with histograms of their
	// own.
	DefaultMaxScenes = 256
)

// SceneConfig configures "slow for its scene". Zero values mean the
// defaults.
type SceneConfig struct {
	// Window is the number of recent dispatches of a scene its
	// percentile is taken over (DefaultSceneWindow).
	Window int
	// MinSamples is the number of dispatches a scene needs before its
	// percentile is used (DefaultSceneMinSamples).
	MinSamples int
	// ReportsPerMinute bounds the reports per scene and minute, of slow
	// calls whatever their cost and, unless ANRConfig sets its own, of LAG
	// and ANR reports each (DefaultSceneReportsPerMinute). It applies with
	// a fixed threshold too (see EvilMethodTracer.SetSceneReportsPerMinute);
	// negative: no bound.
	ReportsPerMinute int
	// MaxScenes is the number of scenes with histograms of their own
	// (DefaultMaxScenes).
	MaxScenes int
}

func (c SceneConfig) withDefaults() SceneConfig {
	if c.Window <= 1 {
		c.Window = DefaultSceneWindow
	}
	if c.MinSamples <= 0 {
		c.MinSamples = DefaultSceneMinSamples
	}
	if c.ReportsPerMinute <= 0 {
		c.ReportsPerMinute = DefaultSceneReportsPerMinute
	}
	if c.MaxScenes <= 0 {
		c.MaxScenes = DefaultMaxScenes
	}
	return c
}

// Histogram buckets: bucket 0 holds costs under 1024 µs; then 4 per power
// of two of a microsecond, from 2^10 µs up.
const (
	bucketsPerOctave = 4
	firstOctave      = 10 // 1024 µs
	octaves          = 23
	histBuckets      = 1 + octaves*bucketsPerOctave
)

// bucketOf returns the bucket of a cost.
func bucketOf(d time.Duration) int {
	us := uint64(d / time.Microsecond)
	if us < 1<<firstOctave {
		return 0
	}
	e := bits.Len64(us) - 1 // us in [2^e, 2^(e+1))
	sub := int((us >> (e - 2)) & 3)
	b := 1 + (e-firstOctave)*bucketsPerOctave + sub
	if b >= histBuckets {
		b = histBuckets - 1
	}
	return b
}

// bucketEdge returns the upper edge of bucket b: every cost in it is under
// the edge.
func bucketEdge(b int) time.Duration {
	if b == 0 {
		return (1 << firstOctave) * time.Microsecond
	}
	e, sub := firstOctave+(b-1)/bucketsPerOctave, (b-1)%bucketsPerOctave
	octave := time.Duration(uint64(1)<<e) * time.Microsecond
	return octave + octave*time.Duration(sub+1)/bucketsPerOctave
}

// sceneCosts is the cost estimate of one scene.
type sceneCosts struct {
	scene      string // the scene, as first seen; never changed
	mu         sync.Mutex
	cur, prev  [histBuckets]uint32
	nCur, nOld int

	// shards count the dispatches that cannot be slow for the scene (see
	// sceneShard), apart from mu.
	shards [sceneShards]sceneShard
}

// A server's route is dispatched on every core at once. Counted under the
// scene's lock, each of its dispatches made the cores take turns writing
// the lock's and the histogram's cache lines. So a dispatch that cannot be
// slow for its scene (under the floor, or over the threshold and reported
// anyway) and cost less than shardBuckets' edge (16 ms) is counted in one
// of sceneShards shards, chosen by the P that ends it (beat.Proc), each on
// cache lines of its own, with atomic adds: a P writes its own shard's
// lines, which stay in its core's cache while it serves the route. Every
// shardBatch dispatches of a shard, and before every decision, the shards'
// counts are folded into the histogram under the lock. A decision then
// reads every dispatch counted before it.
const (
	sceneShards  = 8
	shardBuckets = 1 + 4*bucketsPerOctave // costs under 2^14 µs, 16.4 ms
	shardBatch   = 64
)

// sceneShard is one shard's counts: 128 bytes, so that no two shards
// share a cache line.
type sceneShard struct {
	n   atomic.Uint32 // dispatches counted, ever: a fold every shardBatch
	cnt [shardBuckets]atomic.Uint32
	_   [128 - 4 - 4*shardBuckets]byte
}

// shardOf returns the shard of the dispatches that P proc ends.
func shardOf(proc int) int { return proc & (sceneShards - 1) }

// fold moves the counts of shard sh into the current histogram. Call it
// with s.mu held.
func (s *sceneCosts) fold(sh *sceneShard, window int) {
	for b := range sh.cnt {
		if c := sh.cnt[b].Load(); c != 0 {
			c = sh.cnt[b].Swap(0)
			s.cur[b] += c
			s.nCur += int(c)
		}
	}
	s.rotate(window)
}

// foldAll folds every shard. Call it with s.mu held.
func (s *sceneCosts) foldAll(window int) {
	for i := range s.shards {
		s.fold(&s.shards[i], window)
	}
}

// rotate makes the current histogram the older one once it holds
// Window/2 dispatches.
func (s *sceneCosts) rotate(window int) {
	if s.nCur >= window/2 {
		s.prev, s.nOld = s.cur, s.nCur
		s.cur, s.nCur = [histBuckets]uint32{}, 0
	}
}

// samples returns the number of dispatches the estimate holds, its
// shards' included.
func (s *sceneCosts) samples(window int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foldAll(window)
	return s.nCur + s.nOld
}

// sceneTable holds the estimates of every scene.
type sceneTable struct {
	cfg    SceneConfig
	floor  time.Duration
	mu     sync.Mutex // serialises additions to scenes
	scenes atomic.Pointer[map[string]*sceneCosts]
	other  sceneCosts // scenes past MaxScenes
	// recent holds estimates found lately, by the address of the scene
	// string they were looked up with: a router and the recorder hand
	// the same string for every request of a route, so most dispatches
	// find theirs here without hashing the scene.
	recent [64]atomic.Pointer[sceneCosts]
}

func newSceneTable(floor time.Duration, cfg SceneConfig) *sceneTable {
	t := &sceneTable{cfg: cfg.withDefaults(), floor: floor}
	t.scenes.Store(&map[string]*sceneCosts{})
	return t
}

// stats returns the estimate of scene, creating it if there is room.
//
// Every dispatch looks its scene up, on every core: first in recent, by
// the address of the string (a hit is a scene equal to the one looked
// up), then in the map, read without a lock (no shared counter to write)
// and replaced by a copy with the new scene when one is added, which
// happens at most MaxScenes times.
func (t *sceneTable) stats(scene string) *sceneCosts {
	a := uintptr(unsafe.Pointer(unsafe.StringData(scene)))
	slot := &t.recent[(a^a>>9^uintptr(len(scene)))%uintptr(len(t.recent))]
	if s := slot.Load(); s != nil && len(s.scene) == len(scene) && (unsafe.StringData(s.scene) == unsafe.StringData(scene) || s.scene == scene) {
		return s
	}
	if s, ok := (*t.scenes.Load())[scene]; ok {
		slot.Store(s)
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.scenes.Load()
	if s, ok := old[scene]; ok {
		return s
	}
	if len(old) >= t.cfg.MaxScenes {
		return &t.other
	}
	s := &sceneCosts{scene: scene}
	m := make(map[string]*sceneCosts, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[scene] = s
	t.scenes.Store(&m)
	return s
}

// verdict is the decision on one dispatch.
type verdict struct {
	report   bool
	why      string
	heldBack uint64
}

// observe records a dispatch of scene that took cost from start, a
// reading of the monotonic clock in nanoseconds (beat.Dispatch.StartNano),
// and decides whether it is slow for the scene; absolute says it is
// reported anyway (over the threshold), so that it is only counted. It
// decides before counting the dispatch, so that a dispatch is compared
// with the ones before it. proc is the P that ends it (beat.Proc), which
// picks its shard.
func (t *sceneTable) observe(scene string, cost time.Duration, absolute bool, start int64, proc int) verdict {
	s := t.stats(scene)
	b := bucketOf(cost)
	if b < shardBuckets && (absolute || cost < t.floor) {
		sh := &s.shards[shardOf(proc)]
		sh.cnt[b].Add(1)
		if sh.n.Add(1)%shardBatch == 0 {
			s.foldShard(sh, t.cfg.Window)
		}
		return verdict{}
	}
	return t.decide(s, scene, b, cost, absolute, start)
}

// foldShard folds shard sh of s (fold) under s's lock.
//
//go:noinline
func (s *sceneCosts) foldShard(sh *sceneShard, window int) {
	s.mu.Lock()
	s.fold(sh, window)
	s.mu.Unlock()
}

// decide is observe for a dispatch the shards do not count: it may be slow
// for its scene. Out of line, it stays out of the cache lines a server
// runs for every fast request.
//
//go:noinline
func (t *sceneTable) decide(s *sceneCosts, scene string, b int, cost time.Duration, absolute bool, start int64) verdict {
	s.mu.Lock() // unlocked by hand at the one return
	var v verdict
	if cost >= t.floor && !absolute {
		s.foldAll(t.cfg.Window)
		n := s.nCur + s.nOld
		switch {
		case n < t.cfg.MinSamples:
			v.report = true
			v.why = "at least the floor of " + msText(t.floor) + " (" + strconv.Itoa(n) + " earlier " + scene + ")"
		default:
			if edge := s.percentileEdge(0.99, n); cost >= edge {
				v.report = true
				v.why = "p99 of " + scene + " over the last " + strconv.Itoa(n) + ": " + msText(edge)
			}
		}
	}
	s.cur[b]++
	s.nCur++
	s.rotate(t.cfg.Window)
	s.mu.Unlock()
	return v
}

// percentileEdge returns the upper edge of the bucket holding the q-th
// quantile of the n dispatches in both histograms.
func (s *sceneCosts) percentileEdge(q float64, n int) time.Duration {
	rank := int(q*float64(n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	seen := 0
	for b := 0; b < histBuckets; b++ {
		seen += int(s.cur[b]) + int(s.prev[b])
		if seen >= rank {
			return bucketEdge(b)
		}
	}
	return bucketEdge(histBuckets - 1)
}

// msText renders d as "212 ms".
func msText(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}
