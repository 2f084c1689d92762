package commands

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// writeDispatchReports writes n slow-call reports of a program of 40
// routes, each calling a fixed tree of 6 to 20 of 240 functions, with
// costs drawn around each route's own (slower by factor on route 0).
func writeDispatchReports(b *testing.B, path string, n int, seed uint64, factor float64) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		route := i % 40
		base := float64(20 + 5*route)
		if route == 0 {
			base *= factor
		}
		cost := int64(base * (0.8 + 0.4*rng.Float64()))
		fmt.Fprintf(w, `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /r%d","process":"app","pid":1,"dispatchId":%d,"cost":%d,"frames":[{"depth":0,"id":1048574,"count":1,"cost":%d,"func":"DISPATCH"}`, route, i+1, cost, cost)
		depth := 6 + route%15
		c := cost
		for d := 1; d <= depth; d++ {
			c = c * 9 / 10
			fn := (route*7 + d*13) % 240
			fmt.Fprintf(w, `,{"depth":%d,"id":%d,"count":%d,"cost":%d,"func":"example.com/app.f%d"}`, d, fn+1, 1+d%3, c, fn)
		}
		io.WriteString(w, "]}\n")
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDiff100k compares two sets of 100,000 dispatches each, read
// from slow-call reports with their call trees (BENCHMARKS.md §11).
func BenchmarkDiff100k(b *testing.B) {
	dir := b.TempDir()
	base, head := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "head.jsonl")
	writeDispatchReports(b, base, 100000, 1, 1)
	writeDispatchReports(b, head, 100000, 2, 1.5)
	b.ResetTimer()
	for range b.N {
		code := run([]string{"diff", "-map", "", "-format", "json", base, head}, nil, io.Discard, io.Discard)
		if code != 1 {
			b.Fatalf("exit %d, want 1 (route 0 is slower)", code)
		}
	}
}
