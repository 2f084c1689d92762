//go:build !linux

package tracer

import (
	"errors"
	"time"
)

// osProcessStart: only Linux exposes the process start time without cgo
// here; elsewhere the runtime's initialisation stands in for it.
func osProcessStart() (time.Time, string, error) {
	return time.Time{}, "", errNoProcStart
}

var errNoProcStart = errors.New("tracer: the process start time is not available on this OS")
