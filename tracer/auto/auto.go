// Package auto starts Matrix tracing in a program that never mentions it.
//
// matrixexec adds a blank import of this package to every main package it
// builds in zero-code mode (when the program's module has this module as a
// tool dependency). At init, if MATRIX_REPORT is set ("stderr", "stdout" or a
// file path), it starts the trace plugin configured from the MATRIX_*
// environment (see tracer.ConfigFromEnv) with a JSON-lines listener writing
// there. Without MATRIX_REPORT it does nothing.
//
// Problems (a bad variable, an unwritable report file) are printed to
// stderr once, prefixed "matrix:"; they never stop the program.
//
// In a setuid, setgid or file-capability binary (tracer.SecureMode),
// MATRIX_REPORT is ignored, as glibc ignores its own variables there: the
// user who runs the program must not choose where it writes.
package auto

import (
	"fmt"
	"os"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
)

// EnvReport names where reports go; setting it turns tracing on.
const EnvReport = "MATRIX_REPORT"

// Monitor is the running Matrix instance, nil when tracing is off.
var Monitor *tracer.Matrix

func init() {
	target := reportTarget(os.Getenv, tracer.SecureMode)
	if target == "" {
		return
	}
	m, err := start(target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrix: tracing not started: %v\n", err)
		return
	}
	Monitor = m
	// Reports of the last dispatches are written before the process ends.
	beat.AtExit(m.StopAllPlugins)
}

// reportTarget returns MATRIX_REPORT, or "" in secure mode.
func reportTarget(getenv func(string) string, secure func() bool) string {
	target := getenv(EnvReport)
	if target == "" || secure() {
		return ""
	}
	return target
}

func start(target string) (*tracer.Matrix, error) {
	cfg, err := tracer.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	l, _, err := tracer.OpenReport(target)
	if err != nil {
		return nil, err
	}
	m, err := tracer.NewBuilder().Plugin(tracer.NewTracePlugin(cfg)).Listener(l).Build()
	if err != nil {
		return nil, err
	}
	if err := m.StartAllPlugins(); err != nil {
		return nil, err
	}
	return m, nil
}
