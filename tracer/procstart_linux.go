//go:build linux

package tracer

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// clockBoottime is CLOCK_BOOTTIME, the clock /proc/<pid>/stat starttime is
// measured on (since boot, suspend included).
const clockBoottime = 7

// osProcessStart reads the process' start time from /proc/self/stat
// (starttime, clock ticks since boot) and places it on the wall clock with
// the boot-time clock read now, which is exact to a tick (10 ms). If that
// clock cannot be read it falls back to btime of /proc/stat, which is in
// whole seconds.
func osProcessStart() (time.Time, string, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, "", err
	}
	ticks, err := procStartTicks(stat)
	if err != nil {
		return time.Time{}, "", err
	}
	now := time.Now()
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); errno == 0 {
		if at, ok := startFromAge(now, time.Duration(ts.Nano()), ticks); ok {
			return at, ProcessStartProc, nil
		}
	}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, "", err
	}
	btime, err := procBtime(data)
	if err != nil {
		return time.Time{}, "", err
	}
	return time.Unix(btime, 0).Add(ticksDuration(ticks)), ProcessStartProcBtime, nil
}
