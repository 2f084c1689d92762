// Command starved runs dispatches whose true times it measures itself, for
// integration.TestExactUnderStarvation: it is run at nice 19 beside busy
// processes, where the recorder's clock thread is starved of CPU.
//
// It prints one line per measured dispatch, "<kind> <dispatch id> <µs>": the
// time of a 100 ms sleep ("sleep") and of a 200 ms wait for a mutex
// ("mutex"), as the program measured them around the call; then "done".
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
		d := beat.Begin(beat.KindCustom, "sleep")
		el := nap(100 * time.Millisecond)
		d.End()
		fmt.Printf("sleep %d %d\n", d.ID(), el.Microseconds())
	}
	for i := 0; i < 3; i++ {
		var mu sync.Mutex
		mu.Lock()
		go func() {
			time.Sleep(200 * time.Millisecond)
			mu.Unlock()
		}()
		d := beat.Begin(beat.KindCustom, "mutex")
		el := lock(&mu)
		d.End()
		fmt.Printf("mutex %d %d\n", d.ID(), el.Microseconds())
	}
	// 200 dispatches of nested calls.
	for i := 0; i < 200; i++ {
		d := beat.Begin(beat.KindCustom, "tree")
		outer(i)
		d.End()
	}
	fmt.Println("done")
}
