//go:build !linux

package tracer

// processPriority is not available on this OS: ANR reports carry no
// processPriority and processNice.
func processPriority() (priority, nice int, ok bool) { return 0, 0, false }
