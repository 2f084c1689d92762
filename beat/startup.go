package beat

import (
	"time"
	"unsafe"

	"github.com/matrixgo/matrix/internal/abi"
)

// StartupInfo describes the program's start-up as the runtime saw it.
type StartupInfo struct {
	// RuntimeInit is when the Go runtime initialised (record time 0).
	RuntimeInit time.Time
	// MainEntered is when main.main began, zero while package
	// initialisation still runs (or if main.main is not instrumented).
	MainEntered time.Time
	// Records are the calls of the start-up phase on the main goroutine,
	// from the runtime's init to main.main: recorded only when the program
	// started with MATRIX_REPORT set (and MATRIX_STARTUP not "off"). They
	// begin with an enter of DispatchID and, once main.main was entered, end
	// with its exit.
	Records []uint64
	// Wrapped is true when the start-up made more calls than the start-up
	// ring holds (abi.StartupRingSize records): Records is then
	// empty.
	Wrapped bool
}

// Startup returns the start-up information. In a plain build it is empty.
func Startup() StartupInfo {
	ring, n, epoch, mainNano := rtStartupInfo()
	if !linked {
		return StartupInfo{}
	}
	now := rtNanotime()
	wall := time.Now()
	info := StartupInfo{RuntimeInit: wall.Add(-time.Duration(now - epoch))}
	if mainNano != 0 {
		info.MainEntered = wall.Add(-time.Duration(now - mainNano))
	}
	if ring == nil {
		return info
	}
	const size = abi.StartupRingSize
	if n > size {
		info.Wrapped = true
		return info
	}
	slots := unsafe.Slice((*uint64)(ring), size)
	info.Records = append([]uint64(nil), slots[:n]...)
	return info
}
