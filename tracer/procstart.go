package tracer

import (
	"bytes"
	"errors"
	"strconv"
	"sync"
	"time"
)

// clockTicksPerSecond is USER_HZ, the unit of /proc/<pid>/stat starttime:
// sysconf(_SC_CLK_TCK). It is 100 on every Linux architecture Go supports,
// and reading it through sysconf would need cgo.
const clockTicksPerSecond = 100

// processStart returns when the OS started this process and where that
// comes from (ProcessStartProc or ProcessStartProcBtime), or the zero time
// and ProcessStartRuntime when the OS does not say (the caller then uses
// the runtime's initialisation). It is computed once.
func processStart() (time.Time, string) {
	ps := processStartOnce()
	return ps.at, ps.source
}

type procStartResult struct {
	at     time.Time
	source string
}

var processStartOnce = sync.OnceValue(func() procStartResult {
	at, source, err := osProcessStart()
	if err != nil || at.IsZero() {
		return procStartResult{source: ProcessStartRuntime}
	}
	return procStartResult{at: at, source: source}
})

// procStartTicks returns field 22 (starttime: clock ticks since boot when
// the process started) of the contents of /proc/<pid>/stat. The command
// name (field 2) is in parentheses and may itself contain spaces and
// parentheses, so fields are counted from the last ')'.
func procStartTicks(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("tracer: /proc/self/stat: no command name")
	}
	f := bytes.Fields(stat[i+1:]) // f[0] is field 3 (state)
	const field = 22
	if len(f) <= field-3 {
		return 0, errors.New("tracer: /proc/self/stat: too few fields")
	}
	n, err := strconv.ParseUint(string(f[field-3]), 10, 64)
	if err != nil {
		return 0, errors.New("tracer: /proc/self/stat: bad starttime")
	}
	return n, nil
}

// procBtime returns btime (the boot time in seconds since the epoch) from
// the contents of /proc/stat.
func procBtime(stat []byte) (int64, error) {
	for line := range bytes.Lines(stat) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil || n <= 0 {
				return 0, errors.New("tracer: /proc/stat: bad btime")
			}
			return n, nil
		}
	}
	return 0, errors.New("tracer: /proc/stat: no btime")
}

// ticksDuration converts clock ticks to a duration.
func ticksDuration(ticks uint64) time.Duration {
	const tick = time.Second / clockTicksPerSecond
	if ticks > uint64(1<<63-1)/uint64(tick) {
		return 1<<63 - 1
	}
	return time.Duration(ticks) * tick
}

// startFromAge returns the start time of a process that started ticks
// clock ticks after boot, when the boot-time clock reads boot at now.
func startFromAge(now time.Time, boot time.Duration, ticks uint64) (time.Time, bool) {
	age := boot - ticksDuration(ticks)
	if age < 0 {
		return time.Time{}, false
	}
	return now.Add(-age), true
}
