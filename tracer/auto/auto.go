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
//	otlp            traces over OTLP (HTTP or gRPC), configured by the
//	                standard OTEL_* variables (see otlp.ConfigFromEnv)
//	anything else   a file that JSON lines are appended to
//
// Without MATRIX_REPORT it does nothing.
//
// Problems are printed to stderr, one line each, prefixed "matrix:"; they
// never stop the program, and each turns off only what it concerns:
//
//   - a bad MATRIX_* value (MATRIX_EVIL_THRESHOLD_MS=abc) is ignored, with a
//     warning naming the variable: that setting keeps its default, and
//     everything else runs;
//   - a sink that cannot be opened (a report path in a missing directory,
//     a named pipe, a file of another user, a bad OTLP variable) is left
//     out, with a message saying why; the other sinks get the reports, and
//     when no sink is left the program runs untraced;
//   - reports that a file cannot take (a full disk) are lost and counted,
//     told at most once a minute (see tracer.NewJSONListener).
//
// The OTLP sink prints its first export error when it happens and, at exit,
// the number of issues it could not export.
//
// In a setuid, setgid or file-capability binary (tracer.SecureMode),
// MATRIX_REPORT is ignored, as glibc ignores its own variables there: the
// user who runs the program must not choose where it writes.
package auto

import (
	"errors"
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

// sinkSet is what setup opened: the listeners of the sinks, the closers of
// the report files and streams, and the OTLP exporter if one is listed.
type sinkSet struct {
	listeners []tracer.Listener
	closers   []io.Closer
	exp       *otlp.Exporter
}

// close closes what the set opened, without waiting for the OTLP sink.
func (s *sinkSet) close() {
	for _, c := range s.closers {
		_ = c.Close()
	}
	if s.exp != nil {
		s.exp.Close(0)
	}
}

// setup reads the trace configuration and opens the sinks of target. A bad
// variable is a warning on warn (its setting keeps its default), and so is
// a sink that cannot be opened, which is left out; the error is for a
// malformed MATRIX_REPORT, or no sink opened.
func setup(target string, getenv func(string) string, warn io.Writer) (tracer.TraceConfig, *sinkSet, error) {
	sinks, err := Sinks(target)
	if err != nil {
		return tracer.TraceConfig{}, nil, err
	}
	cfg, err := tracer.ConfigFromEnv(getenv)
	for _, e := range unjoin(err) {
		fmt.Fprintf(warn, "matrix: %v; the setting keeps its default\n", e)
	}
	set := &sinkSet{}
	var failed []error
	for _, sink := range sinks {
		if err := set.open(sink, getenv); err != nil {
			failed = append(failed, err)
		}
	}
	if len(set.listeners) == 0 {
		return cfg, nil, errors.Join(failed...)
	}
	for _, err := range failed {
		fmt.Fprintf(warn, "matrix: %v; reports go to the other sinks of %s\n", err, EnvReport)
	}
	return cfg, set, nil
}

// open opens one sink of MATRIX_REPORT and adds its listener.
func (s *sinkSet) open(sink string, getenv func(string) string) error {
	if sink == SinkOTLP {
		ocfg, err := otlp.ConfigFromEnv(getenv)
		if err != nil {
			return fmt.Errorf("sink otlp: %w", err)
		}
		ocfg.Resource.Detected = otlp.Detect()
		exp, err := otlp.NewExporter(ocfg)
		if err != nil {
			return fmt.Errorf("sink otlp: %w", err)
		}
		exp.OnFirstError = func(err error) {
			fmt.Fprintf(os.Stderr, "matrix: otlp: issues are not exported (dropped and counted): %v\n", err)
		}
		s.exp = exp
		s.listeners = append(s.listeners, exp)
		return nil
	}
	l, c, err := tracer.OpenReport(sink)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, c)
	s.listeners = append(s.listeners, l)
	return nil
}

// unjoin returns the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// start starts the trace plugin with the sinks of target (see setup; its
// warnings go to stderr).
func start(target string, getenv func(string) string) (*tracer.Matrix, *otlp.Exporter, []io.Closer, error) {
	cfg, set, err := setup(target, getenv, os.Stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	b := tracer.NewBuilder().Plugin(tracer.NewTracePlugin(cfg))
	for _, l := range set.listeners {
		b.Listener(l)
	}
	m, err := b.Build()
	if err == nil {
		err = m.StartAllPlugins()
	}
	if err != nil {
		set.close()
		return nil, nil, nil, err
	}
	return m, set.exp, set.closers, nil
}

// reportDrops prints, when the OTLP sink did not get every issue
// confirmed, how many were confirmed, dropped on a full queue, failed, and
// of unknown fate (in flight when the exit deadline ran out), and whether
// that deadline ran out.
func reportDrops(w io.Writer, exp *otlp.Exporter) {
	n := exp.Dropped()
	if n == 0 && !exp.TimedOut() {
		return
	}
	word := "issues"
	if n == 1 {
		word = "issue"
	}
	unknown := exp.Unknown()
	msg := fmt.Sprintf("matrix: otlp: %d %s not exported to %s (%d confirmed, %d dropped on a full queue, %d failed, %d unknown)",
		n, word, exp.URL(), exp.Sent(), exp.QueueDrops(), exp.Failed()-unknown, unknown)
	if exp.TimedOut() {
		msg += fmt.Sprintf("; the %v exit deadline ran out", otlpCloseTimeout)
		if unknown > 0 {
			msg += " with a request in flight, whose issues may have arrived"
		}
	}
	if err := exp.Err(); err != nil {
		msg += ": " + err.Error()
	}
	fmt.Fprintln(w, msg)
}
