// Package auto starts Matrix tracing, with every sink, in a program that
// never mentions it.
//
// At init, if MATRIX_REPORT is set, it starts the trace plugin configured
// from the MATRIX_* environment with one listener per sink MATRIX_REPORT
// lists, comma-separated: stderr, stdout, otlp (traces over OTLP/HTTP or
// gRPC, configured by the standard OTEL_* variables, see
// otlp.ConfigFromEnv), or a file that JSON lines are appended to. Without
// MATRIX_REPORT it does nothing. Problems are printed to stderr, one line
// each, prefixed "matrix:", and never stop the program (see the rules in
// the package documentation of tracer/internal/autostart).
//
// matrixexec adds a blank import of this package to every main package it
// builds in zero-code mode, unless the build leaves the OTLP sink out
// (MATRIX_OTLP=off, or a MATRIX_ZEROCODE_MODULE): then it adds
// tracer/auto/local, which is the same without the otlp sink and the code
// it needs (an HTTP client, gzip, protobuf encoding). A program can import
// this package itself.
//
// The OTLP sink prints its first export error when it happens and, at exit,
// the number of issues it could not export.
package auto

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/matrixgo/matrix/tracer"
	"github.com/matrixgo/matrix/tracer/internal/autostart"
	"github.com/matrixgo/matrix/tracer/otlp"
)

// EnvReport names where reports go; setting it turns tracing on.
const EnvReport = autostart.EnvReport

// SinkOTLP is the MATRIX_REPORT sink that exports issues over OTLP.
const SinkOTLP = autostart.SinkOTLP

// otlpCloseTimeout bounds how long the exit waits for the OTLP sink to
// send the issues still queued.
const otlpCloseTimeout = 5 * time.Second

// Monitor is the running Matrix instance, nil when tracing is off.
var Monitor *tracer.Matrix

// OTLP is the OTLP sink when MATRIX_REPORT lists "otlp", else nil. Its
// Dropped method counts the issues it could not export.
var OTLP *otlp.Exporter

func init() {
	m, r := autostart.Run(openOTLP)
	Monitor = m
	if s, ok := r.(sink); ok {
		OTLP = s.Exporter
	}
}

// Sinks splits a MATRIX_REPORT value into its sinks: comma-separated,
// spaces around each trimmed. An empty sink or one listed twice is an
// error.
func Sinks(target string) ([]string, error) { return autostart.Sinks(target) }

// sink is the OTLP exporter as the remote sink of autostart.
type sink struct{ *otlp.Exporter }

// Stop stops the exporter at once.
func (s sink) Stop() { s.Close(0) }

// Finish sends what is queued within otlpCloseTimeout and says on w what
// could not be sent.
func (s sink) Finish(w io.Writer) {
	s.Close(otlpCloseTimeout)
	reportDrops(w, s.Exporter)
}

// openOTLP opens the OTLP sink configured by the OTEL_* variables.
func openOTLP(getenv func(string) string) (autostart.Remote, error) {
	cfg, err := otlp.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	cfg.Resource.Detected = otlp.Detect()
	exp, err := otlp.NewExporter(cfg)
	if err != nil {
		return nil, err
	}
	exp.OnFirstError = func(err error) {
		fmt.Fprintf(os.Stderr, "matrix: otlp: issues are not exported (dropped and counted): %v\n", err)
	}
	return sink{exp}, nil
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
