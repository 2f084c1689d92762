//go:build matrixexec_linked

package tracer

import _ "unsafe" // for go:linkname

// matrixexec compiles this file instead of serve_plain.go; the functions
// are defined in the file it adds to package runtime, and
// (*http.Server).Serve calls the hook through it.

//go:linkname rtSetServeHook runtime.matrixSetServeHook
func rtSetServeHook(f func())

//go:linkname rtTracerLinked runtime.matrixTracerLinked
func rtTracerLinked()

// The runtime warns at main.main, when MATRIX_REPORT is set, if no tracer
// was linked into the program (see the runtime's matrixMainEntered).
func init() { rtTracerLinked() }
