package corpus

import (
	"bytes"
	"os"
	"path/filepath"
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
	// dep builds the module as a dependency of a module of the test's
	// own (go build PATH/...), as a user's build does: for a module whose
	// go.mod replaces its requirements by sibling directories of its
	// repository, which its module zip does not hold.
	dep bool
}

// builds are the modules of the compile-only tier: what Go services are
// built from. Versions are the latest releases when the list was made.
var builds = []buildModule{
	{path: "github.com/gin-gonic/gin", version: "v1.12.0", why: "web framework; its graph has ugorji/go/codec v1.3.1, whose top-level := reusing a named result broke hook-free copies"},
	{path: "github.com/ugorji/go/codec", version: "v1.3.2", why: "gin's codec: large generated encoders"},
	{path: "github.com/go-playground/validator/v10", version: "v10.30.6", why: "gin's validator: reflection-heavy"},
	{path: "github.com/bytedance/sonic", version: "v1.15.5", why: "gin's JSON: assembly, a JIT and go:linkname into the runtime"},
	{path: "github.com/labstack/echo/v4", version: "v4.16.0", why: "web framework"},
	{path: "github.com/gorilla/mux", version: "v1.8.1", why: "router"},
	{path: "google.golang.org/grpc", version: "v1.85.0", why: "RPC: generated code, HTTP/2 transport"},
	{path: "go.uber.org/zap", version: "v1.28.0", why: "logging"},
	{path: "github.com/sirupsen/logrus", version: "v1.10.2", why: "logging"},
	{path: "github.com/spf13/cobra", version: "v1.10.2", why: "CLI"},
	{path: "github.com/redis/go-redis/v9", version: "v9.23.0", why: "Redis client"},
	{path: "github.com/jackc/pgx/v5", version: "v5.12.0", why: "PostgreSQL driver"},
	{path: "gorm.io/gorm", version: "v1.31.2", why: "ORM: reflection, callbacks"},
	{path: "github.com/prometheus/client_golang", version: "v1.25.0", why: "metrics"},
	{path: "go.opentelemetry.io/otel/sdk", version: "v1.47.0", why: "OpenTelemetry SDK", dep: true},
}

// TestCorpusBuilds builds every package of each module in builds (go build
// ./... in a copy of its source, with its own go.mod, or as a dependency)
// with
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
			var dir string
			pkgs := "./..."
			if b.dep {
				dir = filepath.Join(r.work, m.name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/corpusbuild\n\ngo 1.24\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if out, err := r.goCmd(dir, "get", b.path+"@"+b.version).CombinedOutput(); err != nil {
					t.Fatalf("go get %s@%s: %v\n%s", b.path, b.version, err, out)
				}
				pkgs = b.path + "/..."
			} else {
				dir = r.fetch(t, m)
			}
			start := time.Now()
			cmd := r.goCmd(dir, "build", pkgs)
			cmd.Env = append(r.env("-toolexec="+r.matrixexe), "MATRIX_MAP="+r.mapFile, "MATRIX_STRICT=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				plain := r.goCmd(dir, "build", pkgs)
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
