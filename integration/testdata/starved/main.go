// Command starved runs dispatches whose true times it measures itself, for
// integration.TestExactUnderStarvation: it is run at nice 19 beside busy
// processes, where the recorder's clock thread is starved of CPU.
//
// It prints one line per measured dispatch, "<kind> <dispatch id> <inner µs>
// <outer µs>": the time of a 100 ms sleep ("sleep") and of a 200 ms wait for
// a mutex ("mutex"), as the program measured it inside the call, around the
// wait, and outside, from before the dispatch began to after the call
// returned; then "done". The call's true time lies between the two: a
// starved thread can be descheduled after the inner measurement and before
// the call returns.
package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/matrixgo/matrix/beat"
)

var sink int

// spin works for about n iterations of arithmetic, between waits.
//
//go:noinline
func spin(n int) {
	x := 0
	for i := 0; i < n; i++ {
		x += i * i
	}
	sink += x
}

//go:noinline
func nap(d time.Duration) time.Duration {
	t0 := time.Now()
	time.Sleep(d)
	return time.Since(t0)
}

//go:noinline
func lock(mu *sync.Mutex) time.Duration {
	t0 := time.Now()
	mu.Lock()
	el := time.Since(t0)
	mu.Unlock()
	return el
}

//go:noinline
func leaf(i int) {
	spin(1000)
	time.Sleep(time.Duration(1+i%3) * time.Millisecond)
}

//go:noinline
func middle(i int) {
	leaf(i)
	spin(1000)
	leaf(i + 1)
}

//go:noinline
func outer(i int) {
	middle(i)
	leaf(i + 2)
}

func main() {
	// Three measured sleeps, three measured mutex waits.
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		d := beat.Begin(beat.KindCustom, "sleep")
		el := nap(100 * time.Millisecond)
		out := time.Since(t0)
		d.End()
		fmt.Printf("sleep %d %d %d\n", d.ID(), el.Microseconds(), out.Microseconds())
	}
	for i := 0; i < 3; i++ {
		var mu sync.Mutex
		mu.Lock()
		go func() {
			time.Sleep(200 * time.Millisecond)
			mu.Unlock()
		}()
		t0 := time.Now()
		d := beat.Begin(beat.KindCustom, "mutex")
		el := lock(&mu)
		out := time.Since(t0)
		d.End()
		fmt.Printf("mutex %d %d %d\n", d.ID(), el.Microseconds(), out.Microseconds())
	}
	// 200 dispatches of nested calls.
	for i := 0; i < 200; i++ {
		d := beat.Begin(beat.KindCustom, "tree")
		outer(i)
		d.End()
	}
	fmt.Println("done")
}
