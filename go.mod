module github.com/matrixgo/matrix

go 1.24.0

require (
	github.com/google/uuid v1.6.0
	github.com/rogpeppe/go-internal v1.14.1
	github.com/rs/zerolog v1.35.1
	golang.org/x/tools v0.40.0
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	go.opentelemetry.io/proto/otlp v1.9.0 // indirect
	golang.org/x/sys v0.39.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
)
