package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
)

// A compile never fails because of instrumentation.
//
// When the compiler rejects an instrumented package, matrixexec compiles
// the package's own files. If the compiler rejects those too, the error is
// the user's: it is shown as a plain build shows it, and the build fails.
// Otherwise the fault is the rewrite's. matrixexec then finds the
// instrumented functions the compiler's errors point into, compiles the
// package again with those left uninstrumented, and prints one warning
// line for each, naming it, its position and its rewrite mode. They are
// listed in the id map's skipped file with the reason "rejected:MODE". If
// the errors point into no instrumented function, or the second compile
// fails too, the package is built uninstrumented, with one warning line
// for the package. Either way the build goes on with a correct program.
//
// Under MATRIX_STRICT=1 (or -strict) a rejected rewrite fails the build
// instead, with the compiler's errors: the project's own tests and CI set
// it, so that a fallback never hides a defect of the rewriter.

// ReasonRejected prefixes the skipped file's reason for a function whose
// rewrite the compiler rejected ("rejected:copy").
const ReasonRejected = "rejected"

// compileInstrumented runs the compile c of the package inst instruments,
// falling back as described above when the compiler rejects it. operands
// adds the files every compile of the package has (the zero-code tracer's)
// to a list of files.
func (cfg *config) compileInstrumented(c *toolcmd.Cmd, inst *instrumented, operands func([]string) []string, stdin io.Reader, stdout, stderr io.Writer) error {
	pkg := c.ImportPath()
	orig := c.Operands
	flags := len(c.Args())
	tmp := inst.dir
	// try compiles the package as inst has it. If the compiler rejects
	// it, try returns its output (the compiler reports errors on stdout)
	// and rejected; otherwise the output is passed on.
	try := func(inst *instrumented) (output []byte, rejected bool, err error) {
		files, err := patchTestMain(orig, inst.files, tmp)
		if err != nil {
			return nil, false, err
		}
		if inst.heapFlag != "" && len(c.Args()) == flags {
			c.AddFlag(inst.heapFlag)
			cfg.log.Debug("raised the compiler's starting heap", "pkg", pkg, "flag", inst.heapFlag)
		}
		var outBuf, errBuf, both bytes.Buffer
		err = runCompile(c, operands(files), tmp, stdin, io.MultiWriter(&outBuf, &both), io.MultiWriter(&errBuf, &both))
		var exit exitError
		if errors.As(err, &exit) {
			return both.Bytes(), true, err
		}
		if _, werr := stdout.Write(outBuf.Bytes()); werr != nil && err == nil {
			err = werr
		}
		if _, werr := stderr.Write(errBuf.Bytes()); werr != nil && err == nil {
			err = werr
		}
		return nil, false, err
	}
	rejected, failed, err := try(inst)
	if !failed {
		return err
	}
	// The package's own files: if the compiler rejects them too, the
	// error is the user's, shown as a plain build shows it.
	plain, err := patchTestMain(orig, nil, tmp)
	if err != nil {
		return err
	}
	if plain == nil {
		plain = orig
	}
	if err := runCompile(c, operands(plain), tmp, stdin, stdout, stderr); err != nil {
		return err
	}
	if cfg.strict {
		stderr.Write(rejected)
		fmt.Fprintf(stderr, "matrixexec: the compiler rejected the instrumented package %s, which compiles uninstrumented (MATRIX_STRICT=1 makes this an error; without it the functions at fault are left uninstrumented)\n", pkg)
		return exitError(2)
	}
	// The functions the errors point into, left uninstrumented.
	faulty, whole := faultyFuncs(inst, rejected)
	if !whole {
		exclude := map[string]string{}
		for _, fn := range faulty {
			exclude[fn] = ReasonRejected + ":" + inst.plan.Mode(fn)
		}
		c.Operands = orig
		again, err := instrumentSafely(cfg, c, tmp, exclude)
		var failure *rewriteFailure
		if err != nil && !errors.As(err, &failure) {
			return err
		}
		if err == nil && again.files != nil {
			if _, failed, err := try(again); !failed && err == nil {
				for _, fn := range faulty {
					fmt.Fprintf(stderr, "matrixexec: warning: %s.%s (%s) left uninstrumented: the compiler rejected its rewrite (mode %s); listed in %s\n",
						pkg, fn, inst.plan.Pos(fn), inst.plan.Mode(fn), inst.skippedPath)
				}
				cfg.log.Warn("rewrite rejected by the compiler: functions left uninstrumented", "pkg", pkg, "funcs", faulty)
				return nil
			}
		}
	}
	// The whole package, uninstrumented.
	if err := runCompile(c, operands(plain), tmp, stdin, stdout, io.Discard); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "matrixexec: warning: package %s left uninstrumented: the compiler rejected its rewrite (%s)\n", pkg, firstLine(rejected))
	cfg.log.Warn("rewrite rejected by the compiler: package left uninstrumented", "pkg", pkg)
	return nil
}

// compilerPos matches the position that starts a line of the compiler's
// errors: file.go:line:col: or file.go:line:.
var compilerPos = regexp.MustCompile(`^(.+\.go):(\d+)(?::\d+)?: `)

// faultyFuncs returns the instrumented functions the compiler's errors
// point into, sorted, or whole if some error points into none of them (a
// generated file, the hooks, a helper).
func faultyFuncs(inst *instrumented, errOut []byte) (funcs []string, whole bool) {
	seen := map[string]bool{}
	for _, line := range strings.Split(string(errOut), "\n") {
		m := compilerPos.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		fn, ok := inst.plan.FuncAt(m[1], n)
		if !ok {
			return nil, true
		}
		if !seen[fn] {
			seen[fn] = true
			funcs = append(funcs, fn)
		}
	}
	sort.Strings(funcs)
	return funcs, len(funcs) == 0
}

// firstLine returns the first line of b.
func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}

// rejects returns the functions of package pkg whose rewrite is made to
// fail (MATRIX_DEBUG_REJECT), or nil.
func (cfg *config) rejects(pkg string) func(string) bool {
	if len(cfg.debugReject) == 0 {
		return nil
	}
	return func(fn string) bool { return cfg.debugReject[pkg+"."+fn] }
}
