// Command genreports writes synthetic incident reports, JSON lines in the
// layout of the tracer's Trace_EvilMethod issues (slow calls, with some
// ANRs and LAGs), for measuring matrixexec top, pprof and html on many
// incidents (BENCHMARKS.md, group 6):
//
//	go run ./cmd/genreports -n 100000 > reports.jsonl
//
// The reports come from 40 routes of a program of 240 functions in 12
// packages with a fixed call graph; each report has a call tree of up to
// 30 frames (the tracer trims to 30), the path through the call graph
// and the costs varying from report to report. The output is the same
// for the same -n and -seed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/tracer"
)

func main() {
	n := flag.Int("n", 100000, "number of reports")
	seed := flag.Uint64("seed", 1, "random seed")
	random = flag.Bool("random", false, "call random functions instead of following the call graph, so that nearly every frame is a call path of its own (a worst case for pprof)")
	flag.Parse()
	rng := rand.New(rand.NewPCG(*seed, 0))
	w := bufio.NewWriter(os.Stdout)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range *n {
		if err := writeReport(w, rng, i, start.Add(time.Duration(i)*time.Second)); err != nil {
			fmt.Fprintln(os.Stderr, "genreports:", err)
			os.Exit(1)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "genreports:", err)
		os.Exit(1)
	}
}

const (
	routes    = 40
	packages  = 12
	perPkg    = 20
	maxFrames = 30
)

func function(id uint32) (name, file string, line int) {
	pkg, fn := (id-1)/perPkg, (id-1)%perPkg
	return fmt.Sprintf("example.com/svc/pkg%d.Func%d", pkg, fn), fmt.Sprintf("svc/pkg%d/file%d.go", pkg, fn%4), 10 + int(fn)*17
}

var random *bool

// callees is the program's static call graph: functions call functions
// of higher ids only (no recursion), up to 4 each; the first 40 are the
// routes' handlers.
var callees = func() [][]uint32 {
	rng := rand.New(rand.NewPCG(7, 7))
	g := make([][]uint32, packages*perPkg+1)
	for f := 1; f < len(g); f++ {
		lo := max(f+1, routes+1)
		for k := rng.IntN(5); k > 0 && lo < len(g); k-- {
			g[f] = append(g[f], uint32(lo+rng.IntN(len(g)-lo)))
		}
	}
	return g
}()

// tree appends the call tree of one call of id that took cost ms at
// depth: each of its callees is called (or not) and gets a share of the
// cost, as the trimmed trees of the tracer do.
func tree(rng *rand.Rand, frames []tracer.Frame, depth int, id uint32, cost int64) []tracer.Frame {
	name, file, line := function(id)
	frames = append(frames, tracer.Frame{Depth: depth, ID: id, Count: 1 + rng.IntN(2), Cost: cost, Func: name, File: file, Line: line})
	if depth >= 8 || cost < 5 {
		return frames
	}
	next := callees[id]
	if *random {
		next = nil
		for k := rng.IntN(4); k > 0; k-- {
			next = append(next, 1+uint32(rng.IntN(packages*perPkg)))
		}
	}
	left := cost
	for _, c := range next {
		if len(frames) >= maxFrames || left <= 0 {
			break
		}
		if !*random && rng.IntN(10) < 2 {
			continue // not called this time
		}
		part := left * int64(30+rng.IntN(65)) / 100
		frames = tree(rng, frames, depth+1, c, part)
		left -= part
	}
	return frames
}

func writeReport(w *bufio.Writer, rng *rand.Rand, i int, at time.Time) error {
	route := rng.IntN(routes)
	scene := fmt.Sprintf("GET /api/v1/r%d/{id}", route)
	detail, cost := tracer.DetailNormal, int64(700+rng.ExpFloat64()*400)
	switch r := rng.IntN(100); {
	case r < 3:
		detail, cost = tracer.DetailLag, 2000+int64(rng.IntN(100))
	case r < 8:
		detail, cost = tracer.DetailANR, 5000+int64(rng.IntN(1000))
	}
	c := map[string]any{
		"tag":       tracer.TagEvilMethod,
		"detail":    detail,
		"cost":      cost,
		"scene":     scene,
		"name":      "http",
		"kind":      "http",
		"threadId":  1000 + i,
		"goroutine": 1000 + i,
		"process":   "svc",
		"pid":       4242 + i%50,
		"time":      at.Format(time.RFC3339Nano),
		"id":        fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i),
	}
	if detail == tracer.DetailLag {
		c["threadStack"] = "goroutine " + strconv.Itoa(1000+i) + " [sync.Mutex.Lock]:\nexample.com/svc/pkg1.Func3(...)\n\tsvc/pkg1/file3.go:61\n"
	} else {
		// A handler per route, then a tree of the cost below it.
		frames := []tracer.Frame{{Depth: 0, ID: idalloc.Dispatch, Count: 1, Cost: cost, Func: "DISPATCH"}}
		frames = tree(rng, frames, 1, 1+uint32(route), cost-int64(rng.IntN(3)))
		var stack strings.Builder
		key, best := "", int64(-1)
		for _, f := range frames {
			fmt.Fprintf(&stack, "%d,%d,%d,%d\n", f.Depth, f.ID, f.Count, f.Cost)
			if f.ID != idalloc.Dispatch && f.Cost*int64(f.Depth) > best {
				key, best = strconv.Itoa(int(f.ID))+"|", f.Cost*int64(f.Depth)
			}
		}
		c["frames"], c["stack"], c["stackKey"] = frames, stack.String(), key
		c["recorded"] = true
		c["cpu"] = cost / 3
		c["usage"] = "33.30%"
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}
