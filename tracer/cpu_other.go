//go:build !unix

package tracer

// cpuSupported reports whether processCPU works on this OS: not here, so
// issues carry no cpu and usage fields.
const cpuSupported = false

func processCPU() (int64, bool) { return 0, false }
