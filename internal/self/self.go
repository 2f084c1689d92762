// Package self names this module: the one definition of its path, from
// which the tools derive the paths of its packages (the recorder, the
// tracers) and which the blacklist keeps out of instrumentation.
package self

// Module is this module's path. Its packages are linked into every
// instrumented program: matrixexec finds them in the program's module
// graph by it, and never instruments them (see package blacklist).
const Module = "github.com/matrixgo/matrix"
