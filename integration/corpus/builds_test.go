package corpus

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A buildModule is a module every package of which must build under
// matrixexec with the defaults, in strict mode (a rewrite the compiler
// rejects fails the build instead of falling back).
type buildModule struct {
	path, version string
	why           string
}

// builds are the modules of the compile-only tier: what Go services are
// built from. Versions are the latest releases when the list was made.
var builds = []buildModule{
	{"github.com/gin-gonic/gin", "v1.12.0", "web framework; its graph has ugorji/go/codec v1.3.1, whose top-level := reusing a named result broke hook-free copies"},
	{"github.com/ugorji/go/codec", "v1.3.2", "gin's codec: large generated encoders"},
	{"github.com/go-playground/validator/v10", "v10.30.6", "gin's validator: reflection-heavy"},
	{"github.com/bytedance/sonic", "v1.15.5", "gin's JSON: assembly, a JIT and go:linkname into the runtime"},
	{"github.com/labstack/echo/v4", "v4.16.0", "web framework"},
	{"github.com/gorilla/mux", "v1.8.1", "router"},
	{"google.golang.org/grpc", "v1.85.0", "RPC: generated code, HTTP/2 transport"},
	{"go.uber.org/zap", "v1.28.0", "logging"},
	{"github.com/sirupsen/logrus", "v1.10.2", "logging"},
	{"github.com/spf13/cobra", "v1.10.2", "CLI"},
	{"github.com/redis/go-redis/v9", "v9.23.0", "Redis client"},
	{"github.com/jackc/pgx/v5", "v5.12.0", "PostgreSQL driver"},
	{"gorm.io/gorm", "v1.31.2", "ORM: reflection, callbacks"},
	{"github.com/prometheus/client_golang", "v1.25.0", "metrics"},
	{"go.opentelemetry.io/otel/sdk", "v1.47.0", "OpenTelemetry SDK"},
}

// TestCorpusBuilds builds every package of each module in builds (go build
// ./... in a copy of its source, with its own go.mod) with
// -toolexec=matrixexec, the defaults and MATRIX_STRICT=1, and checks that
// the module's functions were instrumented. A failure is checked against a
// plain build of the same copy, so that a module broken on its own is told
// from one matrixexec breaks.
func TestCorpusBuilds(t *testing.T) {
	if selection() == "off" {
		t.Skip("corpus disabled (-corpus=off or MATRIX_CORPUS=off)")
	}
	if testing.Short() {
		t.Skip("builds third-party modules under matrixexec (minutes); skipped in -short mode")
	}
	r := newRunner(t, "ci")
	for _, b := range builds {
		name := b.path[strings.LastIndexByte(b.path, '/')+1:]
		if strings.HasPrefix(name, "v") && strings.Count(b.path, "/") > 1 {
			// github.com/x/y/v2: name it y.
			rest := strings.TrimSuffix(b.path, "/"+name)
			name = rest[strings.LastIndexByte(rest, '/')+1:]
		}
		m := module{name: "build-" + name, path: b.path, version: b.version, why: b.why}
		t.Run(name, func(t *testing.T) {
			dir := r.fetch(t, m)
			start := time.Now()
			cmd := r.goCmd(dir, "build", "./...")
			cmd.Env = append(r.env("-toolexec="+r.matrixexe), "MATRIX_MAP="+r.mapFile, "MATRIX_STRICT=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				plain := r.goCmd(dir, "build", "./...")
				plain.Env = r.env("")
				if pout, perr := plain.CombinedOutput(); perr != nil {
					t.Fatalf("%s@%s does not build plain either: %v\n%s", b.path, b.version, perr, pout)
				}
				t.Fatalf("%s@%s builds plain but not with -toolexec=matrixexec: %v\n%s", b.path, b.version, err, out.Bytes())
			}
			if strings.Contains(out.String(), "matrixexec: warning") {
				t.Errorf("warnings in a strict build:\n%s", out.Bytes())
			}
			n := r.instrumentedFuncs(t, m)
			if n == 0 {
				t.Errorf("no function of %s has an id in the map: the module was not instrumented", b.path)
			}
			t.Logf("%s@%s (%s): %d functions instrumented, built in %v", b.path, b.version, b.why, n, time.Since(start).Round(time.Second))
		})
	}
}
