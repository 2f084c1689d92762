module github.com/matrixgo/matrix

go 1.24.0

require (
	github.com/go-json-experiment/json v0.0.0-20250725192818-e39067aee2d2
	github.com/google/pprof v0.0.0-20250403155104-27863c87afa6
	github.com/rogpeppe/go-internal v1.10.0
	golang.org/x/net v0.0.0-20211112202133-69e39bad7dc2
)
