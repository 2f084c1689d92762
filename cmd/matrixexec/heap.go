package main

import (
	"fmt"
	goversion "go/version"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
)

// The compiler's starting heap.
//
// From Go 1.26 the compiler puts off its first garbage collection until its
// heap reaches a starting size (128 MiB, cmd/compile's gc.Main), when it
// compiles with more than one backend worker and neither GOGC nor
// GOMEMLIMIT is set. An instrumented package is a larger input: its hooks
// and hook-free copies make the compiler allocate more (for protobuf's
// internal/impl, 23 % more), so with the same starting heap it collects more
// often than for the plain package (6 cycles instead of 4), and the
// collections are a third of what instrumenting adds to the compile.
//
// matrixexec raises the starting heap of an instrumented compile in
// proportion to what instrumenting added, so that the compiler collects as
// often as it does for the plain package. The compiler's allocations grow
// about three fifths as fast as the source bytes that instrumenting adds
// (line directives not counted): 15 % for 31 % more bytes (hooks alone),
// 23 % for 41 % (hooks and copies); internal/impl gets 159 MiB. The
// object file is the same whatever the starting heap; what changes is the
// compiler's peak memory, which stays about where the instrumented compile
// had it (178 MiB against 177 MiB for internal/impl; 155 MiB plain).
//
// It leaves the heap alone when the compiler would not boost it (one
// backend worker, GOGC or GOMEMLIMIT set), when the build gives a starting
// heap itself (-gcflags=-d=gcstart=N), and for the releases whose compiler
// has no such flag (Go 1.25 and earlier).

// compilerStartHeapMiB is the compiler's own starting heap (Go 1.26, 1.27).
const compilerStartHeapMiB = 128

// allocPerByte is how much the compiler's allocations grow for each unit
// of growth of its input (see above).
const allocPerByte = 0.6

// maxStartHeapScale caps the raised starting heap at this multiple of the
// compiler's.
const maxStartHeapScale = 1.5

// startHeapFlag returns the -d flag that raises the starting heap of a
// compile of source that instrumenting enlarged by growth (see
// rewrite.Plan.Growth), or "" when the compile keeps the compiler's.
func startHeapFlag(c *toolcmd.Cmd, growth float64, getenv func(string) string) string {
	if growth <= 0 || getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return ""
	}
	if v, _ := c.Flag("goversion"); !hasStartHeapFlag(v) {
		return ""
	}
	if n, _ := c.Flag("c"); n == "" || n == "1" {
		return "" // one backend worker: the compiler does not boost its heap
	}
	for i, a := range c.Flags {
		var d string
		switch {
		case a == "-d" && i+1 < len(c.Flags):
			d = c.Flags[i+1]
		case strings.HasPrefix(a, "-d="):
			d = a[len("-d="):]
		}
		for key := range strings.SplitSeq(d, ",") {
			if strings.HasPrefix(key, "gcstart=") {
				return "" // the build's own choice
			}
		}
	}
	scale := min(1+growth*allocPerByte, maxStartHeapScale)
	mib := int(compilerStartHeapMiB*scale + 0.5)
	if mib <= compilerStartHeapMiB {
		return ""
	}
	return fmt.Sprintf("-d=gcstart=%d", mib)
}

// hasStartHeapFlag reports whether the compiler of the Go release a
// compile's -goversion names (go1.26.8, go1.27rc1, devel …) takes
// -d=gcstart with the meaning above: Go 1.26 and later.
func hasStartHeapFlag(v string) bool {
	return goversion.IsValid(v) && goversion.Compare(v, "go1.26") >= 0
}
