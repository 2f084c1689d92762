//go:build unix

package tracer

import "syscall"

// cpuSupported reports whether processCPU works on this OS.
const cpuSupported = true

// processCPU returns the CPU time (user + system) the whole process has
// used so far, in ns, from getrusage(RUSAGE_SELF). Go has no per-goroutine
// CPU clock, and a goroutine moves between threads, so this is the best
// measure there is of the CPU a dispatch used: it includes every other
// goroutine's work during the dispatch (and the garbage collector's).
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
