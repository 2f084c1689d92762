//go:build !matrixexec_linked

package tracer

// rtSetServeHook does nothing in a plain build (and in go vet and gopls):
// nothing calls the hook. Under matrixexec, serve_linked.go replaces it.
func rtSetServeHook(func()) {}
