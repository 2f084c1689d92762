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
	// name is the subtest's name, if the last element of the path is
	// not enough (consul's and vault's api).
	name string
	why  string
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

// wide are the modules built only with MATRIX_CORPUS=full, each as a
// dependency of a module of the test's own (go build PATH/...): drivers,
// clients, SDKs and programs services are built from, some of them large
// (client-go, the AWS S3 SDK, go-ethereum, caddy) or generated (modernc's
// SQLite, translated from C), with assembly, cgo and go:linkname among
// them. About an hour on two cores with an empty build cache.
var wide = []buildModule{
	{path: "modernc.org/sqlite", version: "v1.62.0", why: "SQLite translated from C: very large generated functions"},
	{path: "github.com/dop251/goja", version: "v0.0.0-20260917113740-793a2a65c13b", why: "JavaScript interpreter"},
	{path: "github.com/yuin/gopher-lua", version: "v1.1.2", why: "Lua interpreter"},
	{path: "cel.dev/cel-go", version: "v0.33.2", why: "expression language; a struct embedding error calls its Error, which belongs to no package"},
	{path: "github.com/go-sql-driver/mysql", version: "v1.10.1", why: "MySQL driver"},
	{path: "github.com/lib/pq", version: "v1.12.3", why: "PostgreSQL driver"},
	{path: "github.com/IBM/sarama", version: "v1.61.1", why: "Kafka client"},
	{path: "github.com/segmentio/kafka-go", version: "v0.4.51", why: "Kafka client"},
	{path: "github.com/twmb/franz-go", version: "v1.22.3", why: "Kafka client"},
	{path: "github.com/nats-io/nats.go", version: "v1.55.0", why: "NATS client"},
	{path: "github.com/rabbitmq/amqp091-go", version: "v1.16.0", why: "RabbitMQ client"},
	{path: "github.com/goccy/go-json", version: "v0.12.0", why: "JSON through unsafe"},
	{path: "github.com/gorilla/websocket", version: "v1.5.3", why: "WebSocket"},
	{path: "github.com/rs/zerolog", version: "v1.35.1", why: "logging"},
	{path: "go.etcd.io/bbolt", version: "v1.5.0", why: "embedded key/value store: mmap, unsafe"},
	{path: "github.com/jmoiron/sqlx", version: "v1.4.0", why: "database/sql extensions"},
	{path: "github.com/uptrace/bun", version: "v1.3.0", why: "ORM"},
	{path: "entgo.io/ent", version: "v0.14.5", why: "ORM and code generator"},
	{path: "github.com/valyala/fasthttp", version: "v1.78.0", why: "HTTP server and client"},
	{path: "github.com/gofiber/fiber/v2", version: "v2.52.15", why: "web framework on fasthttp"},
	{path: "github.com/tidwall/gjson", version: "v1.20.2", why: "JSON paths"},
	{path: "github.com/samber/lo", version: "v1.53.0", why: "generics"},
	{path: "github.com/cloudflare/circl", version: "v1.6.5", why: "cryptography: assembly"},
	{path: "github.com/golang-jwt/jwt/v5", version: "v5.3.1", why: "JWT"},
	{path: "github.com/urfave/cli/v2", version: "v2.27.7", why: "CLI"},
	{path: "github.com/vmihailenco/msgpack/v5", version: "v5.4.1", why: "MessagePack through reflection"},
	{path: "github.com/shopspring/decimal", version: "v1.6.0", why: "decimals"},
	{path: "github.com/robfig/cron/v3", version: "v3.0.1", why: "scheduler"},
	{path: "github.com/hashicorp/golang-lru/v2", version: "v2.0.7", why: "generic caches"},
	{path: "github.com/allegro/bigcache/v3", version: "v3.1.0", why: "cache"},
	{path: "github.com/panjf2000/ants/v2", version: "v2.12.1", why: "goroutine pool"},
	{path: "github.com/panjf2000/gnet/v2", version: "v2.9.7", why: "event-loop networking: epoll, unsafe"},
	{path: "github.com/antlr4-go/antlr/v4", version: "v4.13.1", why: "parser runtime"},
	{path: "github.com/alecthomas/participle/v2", version: "v2.1.4", why: "parser through reflection"},
	{path: "github.com/santhosh-tekuri/jsonschema/v6", version: "v6.0.3", why: "JSON Schema"},
	{path: "github.com/xeipuuv/gojsonschema", version: "v1.2.0", why: "JSON Schema"},
	{path: "go.uber.org/fx", version: "v1.24.0", why: "dependency injection through reflection"},
	{path: "github.com/spf13/viper", version: "v1.21.0", why: "configuration"},
	{path: "github.com/cilium/ebpf", version: "v0.22.0", why: "eBPF: assembly, syscalls"},
	{path: "gonum.org/v1/gonum", version: "v0.17.0", why: "numerics: assembly"},
	{path: "github.com/hashicorp/raft", version: "v1.8.0", why: "consensus"},
	{path: "go.mongodb.org/mongo-driver/v2", version: "v2.10.0", why: "MongoDB driver"},
	{path: "github.com/grpc-ecosystem/grpc-gateway/v2", version: "v2.33.0", why: "gRPC to REST gateway"},
	{path: "github.com/go-git/go-git/v5", version: "v5.19.3", why: "git in Go"},
	{path: "github.com/dgraph-io/badger/v4", version: "v4.9.6", why: "LSM store"},
	{path: "github.com/cockroachdb/pebble", version: "v1.1.5", why: "LSM store: unsafe, assembly"},
	{path: "github.com/ClickHouse/clickhouse-go/v2", version: "v2.51.0", why: "ClickHouse driver"},
	{path: "github.com/minio/minio-go/v7", version: "v7.4.1", why: "S3 client"},
	{path: "github.com/elastic/go-elasticsearch/v8", version: "v8.19.7", why: "Elasticsearch client: large generated API"},
	{path: "go.etcd.io/etcd/client/v3", version: "v3.7.3", why: "etcd client"},
	{path: "github.com/hashicorp/consul/api", name: "consul-api", version: "v1.34.5", why: "Consul client"},
	{path: "github.com/hashicorp/vault/api", name: "vault-api", version: "v1.23.0", why: "Vault client"},
	{path: "github.com/aws/aws-sdk-go-v2/service/s3", version: "v1.114.10", why: "AWS SDK"},
	{path: "github.com/pion/webrtc/v4", version: "v4.2.26", why: "WebRTC"},
	{path: "github.com/apache/arrow-go/v18", version: "v18.8.0", why: "Arrow: generics, assembly"},
	{path: "go.temporal.io/sdk", version: "v1.51.0", why: "workflow SDK"},
	{path: "k8s.io/client-go", version: "v0.37.2", why: "Kubernetes client: large generated API"},
	{path: "github.com/open-policy-agent/opa", version: "v1.22.3", why: "policy engine"},
	{path: "github.com/caddyserver/caddy/v2", version: "v2.11.9", why: "web server: its modules, cel-go among its dependencies"},
	{path: "github.com/ethereum/go-ethereum", version: "v1.17.10", why: "Ethereum client: assembly, cgo, very large packages"},
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
	list := builds
	if selection() == "full" {
		for _, b := range wide {
			b.dep = true
			list = append(list[:len(list):len(list)], b)
		}
	}
	for _, b := range list {
		name := b.path[strings.LastIndexByte(b.path, '/')+1:]
		if strings.HasPrefix(name, "v") && strings.Count(b.path, "/") > 1 {
			// github.com/x/y/v2: name it y.
			rest := strings.TrimSuffix(b.path, "/"+name)
			name = rest[strings.LastIndexByte(rest, '/')+1:]
		}
		if b.name != "" {
			name = b.name
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
