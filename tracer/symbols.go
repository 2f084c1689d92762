package tracer

import (
	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// framesOf symbolises the items of a call tree with the names the binary
// carries (beat.Lookup), as the "frames" field of a report.
func framesOf(items []analysis.Item) []Frame {
	frames := make([]Frame, len(items))
	for i, it := range items {
		f := Frame{Depth: it.Depth, ID: it.ID, Count: it.Count, Cost: it.Cost}
		if fn, ok := beat.Lookup(it.ID); ok {
			f.Func, f.File, f.Line = fn.String(), fn.File, fn.Line
		}
		frames[i] = f
	}
	return frames
}
