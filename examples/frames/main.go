// Command frames runs a 60 Hz frame loop with scripted stalls, to show the
// frame tracer: Trace_FPS reports with the frames dropped per level, and
// the call tree of a frame slower than the slow-call threshold.
//
//	go build -toolexec=matrixexec -o frames ./examples/frames
//	MATRIX_REPORT=stderr MATRIX_FPS_SLICE_MS=1000 ./frames
//
// Built with matrixexec, the program gets zero-code mode: the trace plugin
// starts when MATRIX_REPORT is set, each frame is a dispatch, and the
// FROZEN stall (over 700 ms) also yields a Trace_EvilMethod report naming
// decodeTexture. Built without matrixexec, it starts a frame tracer by hand
// when MATRIX_REPORT is set: the Trace_FPS reports are the same, there are
// no call trees.
//
// The -script flag lists the frames: C is a frame whose work takes C frame
// intervals, NxC is N such frames. The default has normal frames (no work
// to wait for) and one stall in each drop level: 4.5 intervals drops 3
// frames (NORMAL), 10.5 drops 9 (MIDDLE), 25.5 drops 24 (HIGH), 45 drops 44
// (FROZEN). A frame can only take longer than its work, never less, so
// each stall sits half an interval above the lower bound of its level.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
)

// DefaultScript is the frames the program runs without -script.
const DefaultScript = "30x0 4.5 30x0 10.5 30x0 25.5 30x0 45 30x0"

func main() {
	script := flag.String("script", DefaultScript, "frames to run: C or NxC, C in frame intervals")
	scene := flag.String("scene", "game", "scene of the frame loop")
	hz := flag.Float64("hz", 60, "intended frame rate")
	flag.Parse()
	costs, err := parseScript(*script)
	if err != nil {
		log.Fatalf("frames: -script: %v", err)
	}
	if *hz <= 0 {
		log.Fatalf("frames: -hz %v: want a positive rate", *hz)
	}
	interval := time.Duration(float64(time.Second) / *hz)

	stop, err := startPlain()
	if err != nil {
		log.Fatalf("frames: %v", err)
	}
	defer stop()

	loop := tracer.NewFrameLoop(*scene, interval)
	w := &world{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for _, c := range costs {
		<-tick.C
		work := time.Duration(c * float64(interval))
		loop.Frame(func() { w.step(work, interval) })
	}
	fmt.Printf("frames: %d frames, %d updates\n", len(costs), w.updates)
}

// parseScript turns "30x0.1 5.5" into 30 costs of 0.1 and one of 5.5.
func parseScript(s string) ([]float64, error) {
	var costs []float64
	for _, f := range strings.Fields(s) {
		n, c := 1, f
		if i := strings.IndexByte(f, 'x'); i >= 0 {
			var err error
			if n, err = strconv.Atoi(f[:i]); err != nil || n < 1 {
				return nil, fmt.Errorf("%q: bad count", f)
			}
			c = f[i+1:]
		}
		v, err := strconv.ParseFloat(c, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q: bad cost", f)
		}
		for range n {
			costs = append(costs, v)
		}
	}
	if len(costs) == 0 {
		return nil, fmt.Errorf("no frames")
	}
	return costs, nil
}

// startPlain starts a frame tracer by hand in a program not built with
// matrixexec (with it, zero-code mode starts the whole trace plugin).
func startPlain() (stop func(), err error) {
	target := os.Getenv("MATRIX_REPORT")
	if beat.Linked() || target == "" {
		return func() {}, nil
	}
	cfg, err := tracer.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	l, closer, err := tracer.OpenReport(target)
	if err != nil {
		return nil, err
	}
	ft := tracer.NewFrameTracer(cfg.Frame)
	if err := ft.Start(reportTo{l}); err != nil {
		return nil, err
	}
	return func() { ft.Stop(); closer.Close() }, nil
}

// reportTo hands issues straight to a listener, on the reporting goroutine.
type reportTo struct{ l tracer.Listener }

func (r reportTo) Report(is tracer.Issue) bool { r.l.OnReportIssue(is); return true }

// world is the state the frames update.
type world struct {
	updates int
	sum     uint64
}

// step is one frame: update the world, then draw it. A frame meant to stall
// (two intervals or more) spends its time decoding a texture.
func (w *world) step(work, interval time.Duration) {
	w.update()
	if work >= 2*interval {
		w.sum += decodeTexture(fmt.Sprintf("tex-%d", w.updates), work)
		return
	}
	w.draw(work)
}

func (w *world) update() {
	w.updates++
	for i := 0; i < 100; i++ {
		w.sum = w.sum*31 + uint64(i)
	}
}

func (w *world) draw(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
	fmt.Fprint(io.Discard, w.sum)
}

// decodeTexture stands for a slow asset load on the frame loop: it takes
// at least d.
func decodeTexture(name string, d time.Duration) uint64 {
	deadline := time.Now().Add(d)
	var sum uint64
	for chunk := 0; time.Now().Before(deadline); chunk++ {
		time.Sleep(min(time.Until(deadline), 5*time.Millisecond))
		sum += uint64(chunk) ^ uint64(len(name))
	}
	if sum == 0 {
		log.Printf("frames: %s decoded empty", name)
	}
	return sum
}
