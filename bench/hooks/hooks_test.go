// Package hooks measures group 1 of BENCHMARKS.md: the cost of one
// instrumented call, side by side with what a Go engineer would otherwise
// put on a hot function. Every benchmark makes one call (or one
// start+end) per iteration; the unit of the ratios is
// BenchmarkCall/empty, one empty non-inlined call.
//
// Build it with matrixexec, instrumenting only the measured package:
//
//	go test -toolexec="$MATRIXEXEC -inline-budget -1 -bounded hook -blacklist $PWD/hooks.blacklist" -bench . ./hooks
//
// (bench/run.sh does this). In a plain build the hook benchmarks are
// skipped: there is nothing to measure.
//
// This package lives under github.com/matrixgo/matrix, which matrixexec
// never instruments, so the benchmark loops carry no hooks; the measured
// functions live in matrixbench.example/user/hot. Every loop is a named
// function (loopXxx) so that bench/run.sh can count its instructions
// with valgrind --tool=callgrind --toggle-collect.
package hooks

import (
	"context"
	"runtime/pprof"
	"runtime/trace"
	"testing"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/internal/abi"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"matrixbench.example/user/hot"
)

// nanotime is the runtime's monotonic clock (the vDSO clock_gettime that
// time.Now also reads), reached through go:linkname.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

var (
	sinkI64  int64
	sinkTime time.Time
)

//go:noinline
func loopEmpty(n int) {
	for range n {
		hot.Empty()
	}
}

//go:noinline
func loopNanotime(n int) {
	for range n {
		sinkI64 = nanotime()
	}
}

//go:noinline
func loopTimeNow(n int) {
	for range n {
		sinkTime = time.Now()
	}
}

//go:noinline
func loopCoverSet(n int) {
	for range n {
		hot.CoverSet()
	}
}

//go:noinline
func loopCoverAtomic(n int) {
	for range n {
		hot.CoverAtomic()
	}
}

//go:noinline
func loopRegion(n int, ctx context.Context) {
	for range n {
		trace.WithRegion(ctx, "r", hot.Empty)
	}
}

//go:noinline
func loopPprofDo(n int, ctx context.Context, labels pprof.LabelSet) {
	for range n {
		pprof.Do(ctx, labels, doEmpty)
	}
}

func doEmpty(context.Context) { hot.Empty() }

//go:noinline
func loopOtel(n int, ctx context.Context, tr oteltrace.Tracer) {
	for range n {
		_, span := tr.Start(ctx, "op")
		span.End()
	}
}

//go:noinline
func loopHooked(n int) {
	for range n {
		hot.Hooked()
	}
}

//go:noinline
func loopTwin(n int) {
	for range n {
		hot.Twin()
	}
}

//go:noinline
func loopHookedLeaf(n int) {
	for range n {
		hot.HookedLeaf()
	}
}

//go:noinline
func loopTwinLeaf(n int) {
	for range n {
		hot.TwinLeaf()
	}
}

// BenchmarkCall: the unit (empty) and the peers.
func BenchmarkCall(b *testing.B) {
	b.Run("empty", func(b *testing.B) { loopEmpty(b.N) })
	b.Run("nanotime", func(b *testing.B) { loopNanotime(b.N) })
	b.Run("time.Now", func(b *testing.B) { loopTimeNow(b.N) })
	b.Run("cover-set", func(b *testing.B) { loopCoverSet(b.N) })
	b.Run("cover-atomic", func(b *testing.B) { loopCoverAtomic(b.N) })
	b.Run("trace.WithRegion-flightrec", func(b *testing.B) {
		fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{})
		if err := fr.Start(); err != nil {
			b.Skipf("flight recorder: %v", err)
		}
		defer fr.Stop()
		b.ResetTimer()
		loopRegion(b.N, context.Background())
	})
	b.Run("trace.WithRegion-off", func(b *testing.B) { loopRegion(b.N, context.Background()) })
	b.Run("pprof.Do", func(b *testing.B) {
		// The label set is made once, outside the loop: the best case.
		loopPprofDo(b.N, context.Background(), pprof.Labels("route", "bench"))
	})
	b.Run("otel-span", func(b *testing.B) {
		// A real SDK tracer provider: every span sampled (AlwaysSample),
		// recorded, and handed at its end to one span processor that
		// keeps nothing, so no exporter cost is counted.
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithSpanProcessor(nopProcessor{}),
		)
		defer tp.Shutdown(context.Background())
		tr := tp.Tracer("bench")
		b.ResetTimer()
		loopOtel(b.N, context.Background(), tr)
	})
}

type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }

// BenchmarkHook measures the instrumented functions and their
// uninstrumented twins in the three states of the recorder:
//
//   - off: the recorder is stopped, __matrix_on.v == 0: a load and a branch;
//   - idle: the recorder runs but the goroutine is in no dispatch: the two
//     hook calls find a nil ring and return;
//   - rec: the goroutine is inside a beat.Begin dispatch: two 8-byte
//     records written to its ring.
//
// The loops run on a fresh goroutine so that no dispatch begun by the
// patched testing package (every benchmark run is one while the recorder
// runs) is inherited.
func BenchmarkHook(b *testing.B) {
	if !beat.Linked() {
		b.Skip("not built with -toolexec=matrixexec")
	}
	loops := []struct {
		name string
		loop func(int)
	}{
		{"hooked", loopHooked},
		{"twin", loopTwin},
		{"hooked-leaf", loopHookedLeaf},
		{"twin-leaf", loopTwinLeaf},
	}
	for _, state := range []string{"off", "idle", "rec"} {
		for _, l := range loops {
			b.Run(state+"/"+l.name, func(b *testing.B) { runState(b, state, l.loop) })
		}
	}
}

func runState(b *testing.B, state string, loop func(int)) {
	if state != "off" {
		if err := beat.Start(beat.Config{}); err != nil {
			b.Fatal(err)
		}
		defer beat.Stop()
	} else if beat.Started() {
		b.Fatal("recorder running")
	}
	var failed string
	done := make(chan struct{})
	b.ResetTimer()
	b.StopTimer()
	go func() {
		defer close(done)
		if state == "rec" {
			d := beat.Begin(beat.KindCustom, "bench")
			if !d.Recorded() {
				failed = "dispatch not recorded"
				return
			}
			defer d.End()
		}
		if (beat.Current() != nil) != (state == "rec") {
			failed = "wrong dispatch state"
			return
		}
		b.StartTimer()
		loop(b.N)
		b.StopTimer()
	}()
	<-done
	if failed != "" {
		b.Fatal(failed)
	}
}

// TestHookedRecords checks what the benchmark relies on: inside a
// dispatch Hooked writes an enter and an exit record, and the twins and
// Empty write none.
func TestHookedRecords(t *testing.T) {
	if !beat.Linked() {
		t.Skip("not built with -toolexec=matrixexec")
	}
	if err := beat.Start(beat.Config{}); err != nil {
		t.Fatal(err)
	}
	defer beat.Stop()
	done := make(chan []uint64)
	go func() {
		d := beat.Begin(beat.KindCustom, "check")
		defer d.End()
		hot.Twin()
		hot.TwinLeaf()
		hot.Hooked()
		hot.HookedLeaf()
		done <- d.Records(nil)
	}()
	recs := <-done
	// i(DISPATCH), i(Hooked), o(Hooked), i(HookedLeaf), o(HookedLeaf)
	const enter = abi.EnterBit
	id := func(r uint64) uint32 { _, id, _ := abi.Unpack(r); return id }
	if len(recs) != 5 || recs[1]&enter == 0 || recs[2]&enter != 0 || id(recs[1]) != id(recs[2]) ||
		recs[3]&enter == 0 || recs[4]&enter != 0 || id(recs[3]) != id(recs[4]) || id(recs[1]) == id(recs[3]) {
		t.Fatalf("records %x: want the dispatch's enter, then an enter and an exit of Hooked and of HookedLeaf", recs)
	}
}
