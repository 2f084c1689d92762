package zerocode

// The packages outside the standard library that the tracer of zero-code
// programs links (blacklist.AutoTracerPkg, the default) are imported here
// too, though matrixexec runs none of their code: a module that pins
// matrixexec as a tool then has them in its module graph and their
// go.sum entries (go mod tidy records the packages its tools import), and
// a zero-code build never stops for a missing entry (see
// MissingSumError). TestTracerDepsAnchored keeps the list whole.
import (
	_ "golang.org/x/net/http2/hpack"
)
