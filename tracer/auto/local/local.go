// Package local starts Matrix tracing in a program that never mentions it,
// with the sinks that write locally: report files, stderr and stdout.
//
// It is package tracer/auto without the otlp sink and the code that sink
// needs (an HTTP client, gzip, protobuf encoding), which is most of what
// the tracer adds to a program's size and to the time of its link.
// matrixexec adds a blank import of it to every main package it builds in
// zero-code mode when the build leaves the OTLP sink out (MATRIX_OTLP=off
// in matrixexec's environment, or a MATRIX_ZEROCODE_MODULE without
// MATRIX_OTLP=on). A MATRIX_REPORT that lists otlp in such a
// program gets one line on stderr saying how to build it with the sink;
// the other sinks get the reports.
package local

import (
	"github.com/matrixgo/matrix/tracer"
	"github.com/matrixgo/matrix/tracer/internal/autostart"
)

// Monitor is the running Matrix instance, nil when tracing is off.
var Monitor *tracer.Matrix

func init() { Monitor, _ = autostart.Run(nil) }
