package tracer

import "github.com/matrixgo/matrix/internal/observe"

// The tracers that observe dispatches use a dispatch only while the
// recorder hands it to them: DispatchEnd copies what a report needs (the
// records, the name, the scene, the request) before it returns. Marked so,
// they let beat reuse the dispatches of net/http servers and test runners
// as soon as they end (see package observe). The watchdog (ANRTracer)
// looks at running dispatches through beat.Running, which marks each one
// it hands out as kept.
func init() {
	observe.MarkTransient((*EvilMethodTracer)(nil))
	observe.MarkTransient((*SummaryTracer)(nil))
	observe.MarkTransient((*StartupTracer)(nil))
	// Their DispatchBegin does nothing: beat calls only DispatchEnd.
	observe.MarkNoBegin((*SummaryTracer)(nil))
	observe.MarkNoBegin((*StartupTracer)(nil))
}
