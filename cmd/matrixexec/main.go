// Command matrixexec is the Matrix for Go build wrapper and command-line tool.
//
// As a -toolexec wrapper it instruments every non-trivial function of the
// packages it compiles and links the Matrix recorder into the binary:
//
//	go build -toolexec=matrixexec ./...
//	go test -toolexec="matrixexec -map /shared/methodMapping.txt" ./...
//
// As a command it works on what instrumented programs report: it hands
// these commands to matrixreport, installed beside it (its package
// github.com/matrixgo/matrix/cmd/matrixexec/matrixreport), so that the
// wrapper cmd/go starts for every tool of every build links only what
// builds need:
//
//	matrixexec version
//	matrixexec show [-map FILE] [REPORT]
//	matrixexec top [-by stackKey|scene] [-json] [-map FILE] [REPORT...]
//	matrixexec pprof [-o FILE] [-map FILE] [REPORT...]
//	matrixexec html [-o FILE] [-by stackKey|scene] [-map FILE] [REPORT...]
//	matrixexec html -diff [-o FILE] [-map FILE] BASE HEAD
//	matrixexec diff [-threshold 10%] [-min-ms 5] [-alpha 0.05] [-format text|md|json] [-map FILE] BASE HEAD
//	matrixexec retrace [-map FILE] [REPORT]
//	matrixexec analyze [-mode strict|startup] [-end MS] [-cost MS] [FILE|-]
//	matrixexec export otlp [-endpoint URL] [-service NAME] [-map FILE] REPORT...
//
// Flags given before the tool path inside the -toolexec string, and the
// MATRIX_* environment variables, configure the build; see the README.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/reportcmd"
)

func main() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// matrixexec lives for one build step and keeps what it parses
		// and type-checks until the step ends (a few tens of MiB for
		// the largest packages): collecting it is wasted work. The limit
		// still bounds an unusually large package.
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(256 << 20)
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// exitError carries a process exit status through run, without a message
// of its own (the tool or command that ended with it has written it).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run is main without the process: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, rest, err := parseConfig(args, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "matrixexec: %v\n", err)
		return 2
	}
	if len(rest) == 0 {
		usage(stderr)
		return 2
	}
	switch {
	case isToolPath(rest[0]):
		cfg.toolPath = rest[0]
		err = toolexec(cfg, rest, stdin, stdout, stderr)
	case isCCQuery(rest):
		err = ccQuery(rest, stdin, stdout, stderr)
	default:
		err = command(cfg, rest, stdin, stdout, stderr)
	}
	var code exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintf(stderr, "matrixexec: %v\n", err)
	return 1
}

// isToolPath reports whether arg is the tool cmd/go asked us to run: an
// absolute path to an existing file (cmd/go always passes the tool's
// absolute path).
func isToolPath(arg string) bool {
	if !filepath.IsAbs(arg) {
		return false
	}
	fi, err := os.Stat(arg)
	return err == nil && !fi.IsDir()
}

// isCCQuery reports whether args is cmd/go asking the C compiler for its
// version through the -toolexec command ("gcc -### -x c -c -"), which it
// does for the cache key of every cgo package, with the compiler's name as
// CC gives it (often not a path). The answer is the compiler's own (see
// ccQuery): a failure would put matrixexec's message in the key instead,
// and a new C compiler would not rebuild cgo packages.
func isCCQuery(args []string) bool {
	return len(args) > 1 && args[1] == "-###"
}

func command(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch args[0] {
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "matrixexec", version())
		return nil
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return nil
	}
	if slices.Contains(reportcmd.Names, args[0]) {
		return forward(cfg, args, stdin, stdout, stderr)
	}
	if strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("unknown option %q (see matrixexec help)", args[0])
	}
	return fmt.Errorf("unknown command %q, and not a tool path from -toolexec (see matrixexec help)", args[0])
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  go build -toolexec="matrixexec [flags]" ...   instrument a build
  matrixexec version                            print the version
  matrixexec show [-map FILE] [REPORT]          print reports as call trees with names
  matrixexec top [-by stackKey|scene] [-json] [-map FILE] [REPORT...]
                                                group incidents, costliest groups first
  matrixexec pprof [-o FILE] [-map FILE] [REPORT...]
                                                write the call trees as a pprof profile
  matrixexec html [-o FILE] [-by stackKey|scene] [-map FILE] [REPORT...]
                                                write the groups as one self-contained HTML page
  matrixexec html -diff [-o FILE] [-map FILE] BASE HEAD
                                                write a differential flame graph of two report sets
  matrixexec diff [-threshold 10%] [-min-ms 5] [-alpha 0.05] [-format text|md|json] [-map FILE] BASE HEAD
                                                compare two report sets; exit status 1 on a regression
  matrixexec retrace [-map FILE] [REPORT]       turn ids in a report into names
  matrixexec analyze [-mode strict|startup] [-end MS] [-cost MS] [FILE|-]
                                                analyse recorded events
  matrixexec export otlp [-endpoint URL] [-service NAME] [-map FILE] [-timeout D] REPORT...
                                                send reports' issues as OTLP traces
  (the report commands run in matrixreport, installed beside matrixexec:
  go install github.com/matrixgo/matrix/cmd/matrixexec/...@VERSION, or
  go get -tool github.com/matrixgo/matrix/cmd/matrixexec/matrixreport)

build flags (before the tool path in -toolexec; each has a MATRIX_* env var):
  -map FILE          method mapping file   (MATRIX_MAP, default <module root>/.matrix/methodMapping.txt)
  -blacklist FILE    blacklist file        (MATRIX_BLACKLIST, default <module root>/.matrix/blacklist.txt if present)
  -inline-budget N   skip functions the compiler would inline at this cost, small leaves up
                     to 2.5×N and, in a -pgo build, the profile's hot callees up to 2000;
                     -1 to instrument them too
                                           (MATRIX_INLINE_BUDGET, default 80)
  -exits MODE        where a function's exit is recorded: copy (at each return, and functions
                     up to the copy budget keep a hook-free copy of their body for when the
                     recorder is off), returns (at each return) or defer (a deferred call)
                                           (MATRIX_EXITS, default copy)
  -copy-budget N     with -exits copy, the estimated inlining cost up to which a function
                     keeps a hook-free copy; 0 for none  (MATRIX_COPY_BUDGET, default 160)
  -bounded MODE      functions proven to run in bounded time (no loop, no wait, calls only to
                     such functions), and bounded guards that start a body: skip (no hook;
                     the guards run before the enter hook) or hook (MATRIX_BOUNDED, default skip)
  -log FILE          diagnostics to FILE or "stderr" (MATRIX_LOG, default off)
  -zerocode MODE     link the tracer into main packages: auto, on or off (MATRIX_ZEROCODE, default auto)
  -strict            fail the build when the compiler rejects an instrumented package, or the
                     Go release or GOARCH is one the recorder does not support, rather than
                     build what it cannot instrument uninstrumented with a warning
                                           (MATRIX_STRICT=1, default off)

environment only:
  MATRIX_ZEROCODE_MODULE=DIR   build the zero-code tracer in the module at DIR (absolute)
  MATRIX_DEBUG_HOOKS=1         at build and run time: hooks print every call to stderr
  MATRIX_DEBUG_REJECT=PKG.FUNC,...
                               make the rewrite of these functions fail to compile (a test of
                               the fallback; not part of the build cache's key: build in a new
                               directory, or with -a)
  MATRIX_DEBUG_PANIC=PKG,...   make the rewriter panic on these packages (a test of the
                               fallback; not part of the build cache's key either)
`)
}
