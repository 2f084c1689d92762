//go:build !linux

package beat

// defaultMaxBuffers is DefaultMaxBuffers where buffers are on the Go heap.
const defaultMaxBuffers = 64

// mappedBuffers says that buffers are mapped outside the Go heap.
const mappedBuffers = false

// mapBuffer returns nil: buffers are allocated on the Go heap.
func mapBuffer(size int) []uint64 { return nil }

// dropPages gives no page back: the caller clears them.
func dropPages(p []byte) bool { return false }
