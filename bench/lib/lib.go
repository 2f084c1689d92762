// Package lib pins the third-party libraries whose own benchmarks group 2
// of BENCHMARKS.md runs plain and instrumented (bench/run.sh runs
// `go test -bench` on each from this module). The blank imports keep the
// requirements in go.mod through `go mod tidy`.
package lib

import (
	_ "github.com/buger/jsonparser"
	_ "github.com/tidwall/gjson"
	_ "github.com/valyala/fastjson"
	_ "gopkg.in/yaml.v3"
)
