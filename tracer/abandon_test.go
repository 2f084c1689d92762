package tracer

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
)

// TestGoroutineExitAbandonsDispatch: a goroutine that exits inside a
// dispatch (it never calls End) leaves nothing behind. Goroutines that
// reuse its g record nothing; the dispatch leaves the running list as
// abandoned, is counted, and is never reported as LAG or ANR; its buffer
// goes back to the pool, so later dispatches are recorded.
func TestGoroutineExitAbandonsDispatch(t *testing.T) {
	cfg := DefaultTraceConfig()
	cfg.FPS = false
	cfg.Beat.MaxBuffers = 1 // the leaked buffer would starve every later dispatch
	cfg.Watchdog = ANRConfig{Lag: 150 * time.Millisecond, ANR: 300 * time.Millisecond}
	_, got, _ := startPlugin(t, cfg)
	before := beat.ReadStats()

	done := make(chan struct{})
	go func() {
		defer close(done)
		beat.Begin(beat.KindCustom, "orphan") // the goroutine returns without End
	}()
	<-done

	// Goroutines that reuse the dead goroutine's g find no dispatch.
	var wg sync.WaitGroup
	var mu sync.Mutex
	inherited := 0
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if beat.Current() != nil {
				mu.Lock()
				inherited++
				mu.Unlock()
			}
		}()
		runtime.Gosched()
	}
	wg.Wait()
	if inherited != 0 {
		t.Errorf("%d new goroutines found themselves inside the dead goroutine's dispatch", inherited)
	}

	// Past the ANR threshold: no report, and the dispatch is gone.
	time.Sleep(3 * cfg.Watchdog.ANR)
	for _, is := range got.all() {
		if is.Content["scene"] == "orphan" {
			t.Errorf("the abandoned dispatch was reported: %v", is.Content)
		}
	}
	s := beat.ReadStats()
	if s.Running != before.Running || s.Abandoned != before.Abandoned+1 {
		t.Errorf("running %d → %d, abandoned %d → %d; want the dispatch reaped and counted", before.Running, s.Running, before.Abandoned, s.Abandoned)
	}
	// The buffer is back: the next dispatch is recorded.
	d := beat.Begin(beat.KindCustom, "next")
	rec := d.Recorded()
	d.End()
	if !rec {
		t.Error("the dispatch after the abandoned one found no buffer")
	}
}
