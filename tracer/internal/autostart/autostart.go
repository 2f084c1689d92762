// Package autostart starts Matrix tracing in a program that never mentions
// it: the work of the init functions of package tracer/auto (every sink)
// and tracer/auto/local (the sinks that write locally), which zero-code
// mode links into main packages.
//
// If MATRIX_REPORT is set, Run starts the trace plugin configured from the
// MATRIX_* environment (see tracer.ConfigFromEnv) with one listener per
// sink MATRIX_REPORT lists, comma-separated:
//
//	stderr, stdout  JSON lines on the process' standard stream
//	otlp            traces over OTLP (HTTP or gRPC), configured by the
//	                standard OTEL_* variables (see otlp.ConfigFromEnv), in a
//	                program that links the OTLP sink (tracer/auto)
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
//     a named pipe, a file of another user or with two names, a path
//     through a link another user could have planted, a bad OTLP
//     variable, the otlp sink in a program built without it) is left
//     out, with a message
//     saying why; the other sinks get the reports, and when no sink is
//     left the program runs untraced;
//   - reports that a file cannot take (a full disk) are lost and counted,
//     told at most once a minute (see tracer.NewJSONListener).
//
// In a setuid, setgid or file-capability binary (tracer.SecureMode),
// MATRIX_REPORT is ignored, as glibc ignores its own variables there: the
// user who runs the program must not choose where it writes.
package autostart

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
)

// EnvReport names where reports go; setting it turns tracing on.
const EnvReport = "MATRIX_REPORT"

// SinkOTLP is the MATRIX_REPORT sink that exports issues over OTLP.
const SinkOTLP = "otlp"

// EnvBuildOTLP is matrixexec's build-side variable that links the OTLP sink
// into zero-code programs; the message for an otlp sink in a program built
// without it names it.
const EnvBuildOTLP = "MATRIX_OTLP"

// Remote is a sink that sends reports out of the process: the OTLP sink.
type Remote interface {
	tracer.Listener
	// Stop stops it at once, dropping what it has not sent.
	Stop()
	// Finish sends what is queued, within its own deadline, and says on w
	// what it could not send. It runs at the program's exit.
	Finish(w io.Writer)
}

// OpenRemote opens the OTLP sink configured by getenv. A program without
// the OTLP sink passes nil to Run.
type OpenRemote func(getenv func(string) string) (Remote, error)

// started makes Run start tracing once in a program that links both
// tracer/auto and tracer/auto/local.
var started sync.Once

// Run starts tracing if MATRIX_REPORT is set (and not ignored in secure
// mode), with the sinks it lists, and arranges for the reports of the last
// dispatches to be written, and the remote sink finished, before the
// process ends. It returns the running instance and the remote sink, nil
// when tracing is off or did not start (which it says on stderr). Only the
// first call in a process does anything.
func Run(open OpenRemote) (m *tracer.Matrix, remote Remote) {
	started.Do(func() { m, remote = run(open) })
	return m, remote
}

func run(open OpenRemote) (*tracer.Matrix, Remote) {
	target := reportTarget(os.Getenv, tracer.SecureMode)
	if target == "" {
		return nil, nil
	}
	m, set, err := Start(target, os.Getenv, os.Stderr, open)
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrix: tracing not started: %v\n", err)
		return nil, nil
	}
	beat.AtExit(func() {
		m.StopAllPlugins()
		for _, c := range set.closers {
			_ = c.Close()
		}
		if set.remote != nil {
			set.remote.Finish(os.Stderr)
		}
	})
	return m, set.remote
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

// SinkSet is what Setup opened: the listeners of the sinks, the closers of
// the report files and streams, and the remote sink if one is listed.
type SinkSet struct {
	listeners []tracer.Listener
	closers   []io.Closer
	remote    Remote
}

// Listeners returns the listeners of the sinks opened.
func (s *SinkSet) Listeners() []tracer.Listener { return s.listeners }

// Remote returns the remote sink, nil if none is open.
func (s *SinkSet) Remote() Remote { return s.remote }

// Close closes what the set opened, without waiting for the remote sink.
func (s *SinkSet) Close() {
	for _, c := range s.closers {
		_ = c.Close()
	}
	if s.remote != nil {
		s.remote.Stop()
	}
}

// Setup reads the trace configuration and opens the sinks of target, the
// otlp sink with open (nil: the program has none). A bad variable is a
// warning on warn (its setting keeps its default), and so is a sink that
// cannot be opened, which is left out; the error is for a malformed
// MATRIX_REPORT, or no sink opened.
func Setup(target string, getenv func(string) string, warn io.Writer, open OpenRemote) (tracer.TraceConfig, *SinkSet, error) {
	sinks, err := Sinks(target)
	if err != nil {
		return tracer.TraceConfig{}, nil, err
	}
	cfg, err := tracer.ConfigFromEnv(getenv)
	for _, e := range unjoin(err) {
		fmt.Fprintf(warn, "matrix: %v; the setting keeps its default\n", e)
	}
	set := &SinkSet{}
	var failed []error
	for _, sink := range sinks {
		if err := set.open(sink, getenv, open); err != nil {
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

// ErrNoOTLP is the error of the otlp sink in a program built without it.
var ErrNoOTLP = errors.New("sink otlp: this program was built without the OTLP sink; build it with " + EnvBuildOTLP + "=on in matrixexec's environment, or import _ \"github.com/matrixgo/matrix/tracer/auto\" in package main")

// open opens one sink of MATRIX_REPORT and adds its listener.
func (s *SinkSet) open(sink string, getenv func(string) string, open OpenRemote) error {
	if sink == SinkOTLP {
		if open == nil {
			return ErrNoOTLP
		}
		r, err := open(getenv)
		if err != nil {
			return fmt.Errorf("sink otlp: %w", err)
		}
		s.remote = r
		s.listeners = append(s.listeners, r)
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

// Start starts the trace plugin with the sinks of target, opened by Setup
// (its warnings go to warn), and returns the running instance and the
// sinks, which the caller closes when it stops the instance.
func Start(target string, getenv func(string) string, warn io.Writer, open OpenRemote) (*tracer.Matrix, *SinkSet, error) {
	cfg, set, err := Setup(target, getenv, warn, open)
	if err != nil {
		return nil, nil, err
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
		set.Close()
		return nil, nil, err
	}
	return m, set, nil
}
