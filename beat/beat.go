// Package beat is the Matrix recorder that instrumented code reports to.
package beat

// Linked reports whether the binary was built with matrixexec, so that the
// recorder is bound to the instrumented runtime. In a plain build every
// function of this package is a cheap no-op.
func Linked() bool { return linked }
