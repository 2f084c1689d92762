// Package lib pins the third-party library whose own benchmarks group 2
// of BENCHMARKS.md runs plain and instrumented (bench/run.sh runs
// `go test -bench` on github.com/valyala/fastjson from this module). The
// blank import keeps the requirement in go.mod through `go mod tidy`.
package lib

import _ "github.com/valyala/fastjson"
