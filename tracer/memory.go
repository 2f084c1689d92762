package tracer

import (
	"bytes"
	"runtime/metrics"
	"strconv"
)

// runtime/metrics read by the ANR watchdog.
const (
	// Every tick: what explains a stall after the fact.
	metricGCCycles   = "/gc/cycles/total:gc-cycles"
	metricGCPauseCPU = "/cpu/classes/gc/pause:cpu-seconds"
	metricGOMAXPROCS = "/sched/gomaxprocs:threads"
	// In an ANR report's "memory".
	metricHeapObjects = "/memory/classes/heap/objects:bytes"
	metricHeapStacks  = "/memory/classes/heap/stacks:bytes"
	metricOSStacks    = "/memory/classes/os-stacks:bytes"
	metricTotal       = "/memory/classes/total:bytes"
	metricHeapGoal    = "/gc/heap/goal:bytes"
)

// Keys of an ANR report's "memory" object, all in bytes.
const (
	// MemHeap is the memory of heap objects, live and not yet swept
	// (/memory/classes/heap/objects:bytes).
	MemHeap = "heapBytes"
	// MemStacks is the memory reserved for goroutine and thread stacks
	// (/memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes).
	MemStacks = "stackBytes"
	// MemTotal is all memory the Go runtime mapped read-write
	// (/memory/classes/total:bytes).
	MemTotal = "totalBytes"
	// MemHeapGoal is the heap size at which the next GC starts
	// (/gc/heap/goal:bytes).
	MemHeapGoal = "heapGoalBytes"
)

// gcCounters are cumulative GC figures at one moment.
type gcCounters struct {
	cycles uint64
	// pauseCPU is GC stop-the-world time × GOMAXPROCS, in seconds.
	pauseCPU float64
}

// metricsReader reads runtime/metrics with reused samples (no allocation
// per read for scalar metrics).
type metricsReader struct {
	tick []metrics.Sample
	mem  []metrics.Sample
}

func newMetricsReader() *metricsReader {
	m := &metricsReader{}
	for _, n := range []string{metricGCCycles, metricGCPauseCPU, metricGOMAXPROCS} {
		m.tick = append(m.tick, metrics.Sample{Name: n})
	}
	for _, n := range []string{metricHeapObjects, metricHeapStacks, metricOSStacks, metricTotal, metricHeapGoal} {
		m.mem = append(m.mem, metrics.Sample{Name: n})
	}
	return m
}

// gc returns the cumulative GC counters and the current GOMAXPROCS.
func (m *metricsReader) gc() (gcCounters, int) {
	metrics.Read(m.tick)
	c := gcCounters{cycles: sampleUint(m.tick[0]), pauseCPU: sampleFloat(m.tick[1])}
	return c, int(sampleUint(m.tick[2]))
}

// memory returns the "memory" object of an ANR report.
func (m *metricsReader) memory() map[string]uint64 {
	metrics.Read(m.mem)
	return map[string]uint64{
		MemHeap:     sampleUint(m.mem[0]),
		MemStacks:   sampleUint(m.mem[1]) + sampleUint(m.mem[2]),
		MemTotal:    sampleUint(m.mem[3]),
		MemHeapGoal: sampleUint(m.mem[4]),
	}
}

func sampleUint(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}

func sampleFloat(s metrics.Sample) float64 {
	if s.Value.Kind() == metrics.KindFloat64 {
		return s.Value.Float64()
	}
	return 0
}

// gcPauseMs turns the growth of the GC pause CPU time into the wall time
// the program was stopped for GC, in ms rounded to µs. The runtime counts
// a pause as GOMAXPROCS × its latency, so the figure is exact while
// GOMAXPROCS does not change (and an estimate when it does).
func gcPauseMs(from, to gcCounters, gomaxprocs int) float64 {
	d := to.pauseCPU - from.pauseCPU
	if d <= 0 || gomaxprocs <= 0 {
		return 0
	}
	ms := d / float64(gomaxprocs) * 1000
	return float64(int64(ms*1000+0.5)) / 1000
}

// parseProcStat returns the scheduling priority and nice value (fields 18
// and 19) from the contents of /proc/<pid>/stat. The command name (field
// 2) is in parentheses and may itself contain spaces and parentheses, so
// fields are counted from the last ')'.
func parseProcStat(data []byte) (priority, nice int, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:]) // f[0] is field 3 (state)
	if len(f) < 17 {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(string(f[18-3]))
	n, err2 := strconv.Atoi(string(f[19-3]))
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return p, n, true
}
