// Package memory measures group 5 of BENCHMARKS.md: what the recorder
// costs in memory per recording goroutine, and that its total stays
// within the configured bound (the recording memory, Config.RecordMemory)
// when 10,000 goroutines are inside a dispatch at once.
//
//	go test -toolexec="$MATRIXEXEC" -run '^$' -bench . -benchtime=1x ./memory
//
// The figures are reported as benchmark metrics; nothing here asserts a
// time. In a plain build the benchmark is skipped.
package memory

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/matrixgo/matrix/beat"

	"matrixbench.example/user/hot"
)

const goroutines = 10_000

func BenchmarkDispatches10k(b *testing.B) {
	if !beat.Linked() {
		b.Skip("not built with -toolexec=matrixexec")
	}
	for _, cfg := range []beat.Config{
		{}, // the defaults: buffers of 65536 records (512 KiB), 64 MiB
		{BufferSize: 4096, MaxBuffers: 1024},
	} {
		name := "default"
		if cfg.BufferSize != 0 {
			name = "buf" + strconv.Itoa(cfg.BufferSize) + "x" + strconv.Itoa(cfg.MaxBuffers)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				measure(b, cfg)
			}
		})
	}
}

func measure(b *testing.B, cfg beat.Config) {
	if err := beat.Start(cfg); err != nil {
		b.Fatal(err)
	}
	defer beat.Stop()
	notRec0 := beat.ReadStats().NotRecorded
	before, rss0 := snapshot()

	var ready, done sync.WaitGroup
	release := make(chan struct{})
	ready.Add(goroutines)
	done.Add(goroutines)
	for range goroutines {
		go func() {
			defer done.Done()
			d := beat.Begin(beat.KindCustom, "job")
			// A few recorded calls, so that the rings are written to.
			for range 100 {
				hot.Hooked()
			}
			ready.Done()
			<-release
			d.End()
		}()
	}
	ready.Wait()
	during, rss1 := snapshot()
	st := beat.ReadStats()
	close(release)
	done.Wait()
	beat.Stop()
	after, rss2 := snapshot()

	bound := float64(st.RecordMemory)
	heap := float64(during.HeapAlloc) - float64(before.HeapAlloc)
	buffers := float64(st.Buffers * st.BufferBytes)
	b.ReportMetric(float64(st.BufferBytes), "buffer-B")
	b.ReportMetric(float64(unsafe.Sizeof(beat.Dispatch{})), "dispatch-B")
	b.ReportMetric(float64(st.Buffers), "buffers")
	b.ReportMetric(float64(st.NotRecorded-notRec0), "not-recorded")
	b.ReportMetric(bound, "bound-B")
	b.ReportMetric(float64(st.RecordBytes), "record-B")
	b.ReportMetric(buffers, "buffers-B")
	b.ReportMetric(heap, "heap-delta-B")
	onHeap := buffers // Linux maps the buffers outside the heap
	if runtime.GOOS == "linux" {
		onHeap = 0
	}
	b.ReportMetric((heap-onHeap)/goroutines, "heap-per-goroutine-B")
	b.ReportMetric(float64(during.StackInuse)-float64(before.StackInuse), "stack-delta-B")
	b.ReportMetric(float64(rss1-rss0), "rss-delta-B")
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-after-stop-B")
	_ = rss2
}

func snapshot() (runtime.MemStats, int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms, rss()
}

// rss returns the resident set size from /proc/self/status, 0 elsewhere.
func rss() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
