// Package auto starts Matrix tracing in a program that never mentions it.
//
// matrixexec adds a blank import of this package to every main package it
// builds in zero-code mode (when the program's module has this module as a
// tool dependency). At init, if MATRIX_REPORT is set, it starts the trace
// plugin configured from the MATRIX_* environment (see
// tracer.ConfigFromEnv) with one listener per sink MATRIX_REPORT lists,
// comma-separated:
//
//	stderr, stdout  JSON lines on the process' standard stream
//	otlp            traces over OTLP/HTTP, configured by the standard
//	                OTEL_EXPORTER_OTLP_* variables (see otlp.ConfigFromEnv)
//	anything else   a file that JSON lines are appended to
//
// Without MATRIX_REPORT it does nothing.
//
// Problems (a bad variable, an unwritable report file) are printed to
// stderr once, prefixed "matrix:"; they never stop the program. The OTLP
// sink prints its first export error when it happens and, at exit, the
// number of issues it could not export.
//
// In a setuid, setgid or file-capability binary (tracer.SecureMode),
// MATRIX_REPORT is ignored, as glibc ignores its own variables there: the
// user who runs the program must not choose where it writes.
package auto

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
	"github.com/matrixgo/matrix/tracer/otlp"
)

// EnvReport names where reports go; setting it turns tracing on.
const EnvReport = "MATRIX_REPORT"

// SinkOTLP is the MATRIX_REPORT sink that exports issues over OTLP.
const SinkOTLP = "otlp"

// otlpCloseTimeout bounds how long the exit waits for the OTLP sink to
// send the issues still queued.
const otlpCloseTimeout = 5 * time.Second

// Monitor is the running Matrix instance, nil when tracing is off.
var Monitor *tracer.Matrix

// OTLP is the OTLP sink when MATRIX_REPORT lists "otlp", else nil. Its
// Dropped method counts the issues it could not export.
var OTLP *otlp.Exporter

func init() {
	target := reportTarget(os.Getenv, tracer.SecureMode)
	if target == "" {
		return
	}
	m, exp, closers, err := start(target, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrix: tracing not started: %v\n", err)
		return
	}
	Monitor, OTLP = m, exp
	// Reports of the last dispatches are written before the process ends.
	beat.AtExit(func() {
		m.StopAllPlugins()
		for _, c := range closers {
			_ = c.Close()
		}
		if exp != nil {
			exp.Close(otlpCloseTimeout)
			reportDrops(os.Stderr, exp)
		}
	})
}

// reportTarget returns MATRIX_REPORT, or "" in secure mode.
func reportTarget(getenv func(string) string, secure func() bool) string {
	target := getenv(EnvReport)
	if target == "" || secure() {
		return ""
	}
	return target
}

// Sinks splits a MATRIX_REPORT value into its sinks: comma-separated,
// spaces around each trimmed. An empty sink or one listed twice is an
// error.
func Sinks(target string) ([]string, error) {
	var sinks []string
	seen := map[string]bool{}
	for _, s := range strings.Split(target, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("%s=%q: empty sink; want a comma-separated list of stderr, stdout, otlp or file paths", EnvReport, target)
		}
		if seen[s] {
			return nil, fmt.Errorf("%s=%q: sink %q listed twice", EnvReport, target, s)
		}
		seen[s] = true
		sinks = append(sinks, s)
	}
	return sinks, nil
}

func start(target string, getenv func(string) string) (*tracer.Matrix, *otlp.Exporter, []io.Closer, error) {
	sinks, err := Sinks(target)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := tracer.ConfigFromEnv(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	b := tracer.NewBuilder().Plugin(tracer.NewTracePlugin(cfg))
	var (
		exp     *otlp.Exporter
		closers []io.Closer
	)
	fail := func(err error) (*tracer.Matrix, *otlp.Exporter, []io.Closer, error) {
		for _, c := range closers {
			_ = c.Close()
		}
		if exp != nil {
			exp.Close(0)
		}
		return nil, nil, nil, err
	}
	for _, sink := range sinks {
		if sink == SinkOTLP {
			ocfg, err := otlp.ConfigFromEnv(getenv)
			if err != nil {
				return fail(err)
			}
			if exp, err = otlp.NewExporter(ocfg); err != nil {
				return fail(err)
			}
			exp.OnFirstError = func(err error) {
				fmt.Fprintf(os.Stderr, "matrix: otlp: issues are not exported (dropped and counted): %v\n", err)
			}
			b.Listener(exp)
			continue
		}
		l, c, err := tracer.OpenReport(sink)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, c)
		b.Listener(l)
	}
	m, err := b.Build()
	if err != nil {
		return fail(err)
	}
	if err := m.StartAllPlugins(); err != nil {
		return fail(err)
	}
	return m, exp, closers, nil
}

// reportDrops prints how many issues the OTLP sink lost, if any.
func reportDrops(w io.Writer, exp *otlp.Exporter) {
	n := exp.Dropped()
	if n == 0 {
		return
	}
	word := "issues"
	if n == 1 {
		word = "issue"
	}
	msg := fmt.Sprintf("matrix: otlp: %d %s not exported to %s (%d dropped on a full queue, %d failed)", n, word, exp.URL(), exp.QueueDrops(), exp.Failed())
	if err := exp.Err(); err != nil {
		msg += ": " + err.Error()
	}
	fmt.Fprintln(w, msg)
}
