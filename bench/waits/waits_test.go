// Package waits measures what recording waits costs the scheduler's hot
// paths (BENCHMARKS.md, "Waits"): a channel ping-pong between two
// goroutines and a go statement, each in a plain build, in a build by
// matrixexec with the recorder running but the goroutine outside any
// dispatch (not recording), and inside a dispatch (recording: every park
// of the benchmark goroutine writes a wait with its program counters).
//
//	go test -c -o plain.test ./waits
//	go test -c -o matrix.test -toolexec=matrixexec ./waits
//
// bench/run.sh does not run it yet; see BENCHMARKS.md for the commands.
package waits

import (
	"sync"
	"testing"

	"github.com/matrixgo/matrix/beat"
)

// states runs f not recording and, in an instrumented build, recording.
func states(b *testing.B, f func(b *testing.B)) {
	b.Run("idle", f)
	if !beat.Linked() {
		return
	}
	b.Run("recording", func(b *testing.B) {
		if err := beat.Start(beat.Config{}); err != nil {
			b.Fatal(err)
		}
		defer beat.Stop()
		d := beat.Begin(beat.KindCustom, "bench")
		defer d.End()
		f(b)
	})
}

// BenchmarkPingPong: one iteration is a round trip over two unbuffered
// channels, two parks and two wake-ups of the benchmark goroutine's
// partner and one park of the benchmark goroutine.
func BenchmarkPingPong(b *testing.B) {
	states(b, func(b *testing.B) {
		ping, pong := make(chan int), make(chan int)
		go func() {
			for v := range ping {
				pong <- v
			}
		}()
		for i := range b.N {
			ping <- i
			<-pong
		}
		close(ping)
	})
}

// BenchmarkPingPongWorker is BenchmarkPingPong with a partner that exists
// before the dispatch begins, as a pool's worker does: recording, each
// send hands it work (the first 16 times it records for the dispatch, as
// many as a dispatch's goroutines, and is counted beyond), and each of its
// replies wakes the benchmark goroutine with a waker record.
func BenchmarkPingPongWorker(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	defer close(ping)
	states(b, func(b *testing.B) {
		for i := range b.N {
			ping <- i
			<-pong
		}
	})
}

// BenchmarkGo: one iteration starts a goroutine that ends at once; the
// benchmark waits for a batch of 16 at a time, each batch begun in a
// dispatch of its own (a no-op unless recording), so that recording, every
// goroutine records into its dispatch (16 is beat.DefaultMaxChildren).
func BenchmarkGo(b *testing.B) {
	states(b, func(b *testing.B) {
		var wg sync.WaitGroup
		var d *beat.Dispatch
		for i := range b.N {
			if i%16 == 0 {
				d = beat.Begin(beat.KindCustom, "batch")
			}
			wg.Add(1)
			go wg.Done()
			if i%16 == 15 {
				wg.Wait()
				d.End()
			}
		}
		wg.Wait()
		d.End()
	})
}
