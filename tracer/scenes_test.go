package tracer

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBucketEdges: every cost is under the upper edge of its bucket and at
// or over the edge of the bucket before, and buckets are at most a quarter
// of an octave wide.
func TestBucketEdges(t *testing.T) {
	for ms := 1; ms < 5000; ms++ {
		d := time.Duration(ms)*time.Millisecond + 300*time.Microsecond
		b := bucketOf(d)
		if d >= bucketEdge(b) {
			t.Fatalf("%v in bucket %d, whose edge is %v", d, b, bucketEdge(b))
		}
		if b > 0 && d < bucketEdge(b-1) {
			t.Fatalf("%v in bucket %d, under the edge %v of the bucket before", d, b, bucketEdge(b-1))
		}
		if w := bucketEdge(b) - bucketEdge(max(b-1, 0)); b > 0 && float64(w) > 0.26*float64(d) {
			t.Fatalf("bucket %d of %v is %v wide", b, d, w)
		}
	}
}

// TestSlowForItsScene: a route that usually takes 5 ms reports its 300 ms
// dispatches and never a 5 ms one; a dispatch under the floor is never
// slow; until the scene has enough dispatches the floor alone applies; and
// a scene whose every dispatch takes 300 ms stops being slow for itself.
func TestSlowForItsScene(t *testing.T) {
	st := newSceneTable(100*time.Millisecond, SceneConfig{ReportsPerMinute: 1000})
	now := int64(1e6 * time.Second) // a reading of the monotonic clock
	const scene = "GET /orders/{id}"
	// Few samples: the floor alone.
	if v := st.observe(scene, 300*time.Millisecond, false, now, 1); !v.report || !strings.Contains(v.why, "floor of 100 ms (0 earlier GET /orders/{id})") {
		t.Fatalf("first slow dispatch: %+v", v)
	}
	if v := st.observe(scene, 50*time.Millisecond, false, now, 1); v.report {
		t.Fatalf("a dispatch under the floor was taken: %+v", v)
	}
	reported, fast := 0, 0
	for i := range 5000 {
		cost := 5 * time.Millisecond
		if i%200 == 199 {
			cost = 300 * time.Millisecond
		}
		v := st.observe(scene, cost, false, now, 1)
		if v.report {
			if cost < 100*time.Millisecond {
				fast++
			}
			reported++
			if i > 1000 && !strings.HasPrefix(v.why, "p99 of GET /orders/{id} over the last ") {
				t.Fatalf("why: %q", v.why)
			}
		}
	}
	if fast != 0 || reported != 25 {
		t.Fatalf("%d reports of 25 slow dispatches, %d of fast ones", reported, fast)
	}
	// Every dispatch slow: after the window fills, 300 ms is the scene's
	// normal, and nothing more is taken.
	other := "GET /slow"
	taken := 0
	for range 3000 {
		if st.observe(other, 300*time.Millisecond, false, now, 1).report {
			taken++
		}
	}
	if taken > DefaultSceneMinSamples+2 {
		t.Fatalf("%d of 3000 equal dispatches taken as slow for their scene", taken)
	}
}

// TestScenesBounded: scenes past MaxScenes share one estimate, so memory
// stays bounded however many scenes a program has.
func TestScenesBounded(t *testing.T) {
	st := newSceneTable(100*time.Millisecond, SceneConfig{MaxScenes: 4})
	now := int64(1e6 * time.Second) // a reading of the monotonic clock
	for i := range 100 {
		st.observe("scene "+string(rune('a'+i%26))+string(rune('a'+i/26)), time.Millisecond, false, now, i)
	}
	if len(*st.scenes.Load()) != 4 {
		t.Fatalf("%d scenes with estimates of their own, want 4", len(*st.scenes.Load()))
	}
	if n := st.other.samples(st.cfg.Window); n != 96 {
		t.Fatalf("the shared estimate has %d dispatches, want 96", n)
	}
}

// Every lookup of a scene finds its own estimate, whether the string is
// the one it was first seen with (found by its address) or another with
// the same bytes, and however the scenes share the slots of the recent
// lookups.
func TestSceneLookupByAddressAndText(t *testing.T) {
	st := newSceneTable(100*time.Millisecond, SceneConfig{MaxScenes: 300})
	scenes := make([]string, 200)
	for i := range scenes {
		scenes[i] = fmt.Sprintf("GET /route/%d", i)
	}
	first := map[string]*sceneCosts{}
	for round := range 3 {
		for _, sc := range scenes {
			key := sc
			if round == 1 {
				key = strings.Clone(sc) // same text, another address
			}
			s := st.stats(key)
			if s.scene != sc {
				t.Fatalf("round %d: %q found the estimate of %q", round, sc, s.scene)
			}
			if f, ok := first[sc]; ok && f != s {
				t.Fatalf("round %d: %q found another estimate than before", round, sc)
			}
			first[sc] = s
		}
	}
}

// TestSceneShardsCountEveryDispatch: fast dispatches counted at once on
// many goroutines, in the shards, are all in the estimate, and the next
// decision reads every one of them.
func TestSceneShardsCountEveryDispatch(t *testing.T) {
	st := newSceneTable(100*time.Millisecond, SceneConfig{Window: 1 << 20, MinSamples: 1})
	now := int64(1e6 * time.Second) // a reading of the monotonic clock
	const scene, goroutines, each = "GET /fast", 16, 1001
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Under 1 ms and up to 10 ms: the buckets the shards count.
				cost := time.Duration(1+(i+g)%10) * time.Millisecond
				if v := st.observe(scene, cost, false, now, g); v.report {
					t.Errorf("a %v dispatch was taken", cost)
				}
			}
		}()
	}
	wg.Wait()
	v := st.observe(scene, 300*time.Millisecond, false, now, 1)
	if want := fmt.Sprintf("p99 of %s over the last %d: ", scene, goroutines*each); !v.report || !strings.HasPrefix(v.why, want) {
		t.Fatalf("after %d fast dispatches: %+v, want a report %q…", goroutines*each, v, want)
	}
	if n := st.stats(scene).samples(st.cfg.Window); n != goroutines*each+1 {
		t.Fatalf("the estimate holds %d dispatches, want %d", n, goroutines*each+1)
	}
}
