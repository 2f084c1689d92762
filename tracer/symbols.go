package tracer

import (
	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// framesOf symbolises the items of a call tree with the names the binary
// carries (beat.Lookup), as the "frames" field of a report.
func framesOf(res analysis.Result) []Frame {
	frames := make([]Frame, len(res.Items))
	for i, it := range res.Items {
		f := Frame{Depth: it.Depth, ID: it.ID, Count: it.Count, Cost: it.Cost}
		if i < len(res.Starts) {
			f.Start = res.Starts[i]
		}
		if fn, ok := beat.Lookup(it.ID); ok {
			f.Func, f.File, f.Line = fn.String(), fn.File, fn.Line
		}
		frames[i] = f
	}
	return frames
}
