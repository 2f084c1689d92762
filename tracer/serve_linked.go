//go:build matrixexec_linked

package tracer

import _ "unsafe" // for go:linkname

// matrixexec compiles this file instead of serve_plain.go; the function is
// defined in the file it adds to package runtime, and (*http.Server).Serve
// calls the hook through it.

//go:linkname rtSetServeHook runtime.matrixSetServeHook
func rtSetServeHook(f func())
