package commands

import (
	"testing"

	"github.com/matrixgo/matrix/internal/testgo"
	"github.com/matrixgo/matrix/tracer"
	"github.com/matrixgo/matrix/tracer/otlp"
)

// TestReportNamesAreTheTracers: the fields the viewing commands and export
// read are fields the tracer writes, under the same names. (Export reads
// the tracer's own report struct, with the fields every issue carries.)
func TestReportNamesAreTheTracers(t *testing.T) {
	written := testgo.JSONNames(tracer.EvilReport{})
	for name := range testgo.JSONNames(tracer.SummaryReport{}) {
		written[name] = true // diff reads summaries
	}
	for _, k := range tracer.IssueKeys() {
		written[k] = true
	}
	for reader, fields := range map[string]any{"the viewing commands": report{}, "export": otlp.Report{}} {
		for name := range testgo.JSONNames(fields) {
			if !written[name] {
				t.Errorf("%s read report field %q, which the tracer does not write", reader, name)
			}
		}
	}
}
