package corpus

import "time"

// A module of the corpus: its test suite is run plain and instrumented.
type module struct {
	// name is the subtest name (go test -run TestCorpus/<name>).
	name string
	// path and version pin the module; the source comes from the module
	// proxy (go mod download).
	path, version string
	// why says what the module exercises.
	why string
	// pkgs are the packages to test; nil means ./...
	pkgs []string
	// ci puts the module in the default subset; ciPkgs, if set, narrows
	// its packages there. ciRecording also runs it with recording on
	// there (every module does with -corpus=full).
	ci          bool
	ciRecording bool
	ciPkgs      []string
	// flags are extra go test flags for both runs (-short for suites whose
	// full run takes many minutes).
	flags []string
	// cgo marks modules that need a C compiler.
	cgo bool
	// long puts the module, both instrumented and recording, in the
	// exhaustive tier (MATRIX_TEST_LONG=1, see testgo.Long), with ciPkgs
	// if set.
	long bool
	// timeout is go test's -timeout for each test binary; zero means 10m.
	timeout time.Duration
}

// corpus is the pinned list. Versions are the latest releases when the
// corpus was assembled; bump them deliberately, one at a time.
//
// Not here: github.com/samber/lo and samber/mo, whose released module zips
// carry no tests (only examples that do not compile without the excluded
// test files); github.com/modern-go/reflect2, whose tests live in another
// repository (it is instrumented as json-iterator's dependency).
var corpus = []module{
	{
		name: "gin", path: "github.com/gin-gonic/gin", version: "v1.12.0",
		why:  "the most used web framework: its own router tree, context pool, render and binding through ugorji/go/codec, validator and sonic",
		long: true,
		// These three start a server on a fixed port in a goroutine,
		// sleep 5 ms, then expect their own Run on that port to fail.
		// On a loaded machine, built plain or not, the goroutine may not
		// have bound the port yet: the test's own Run then serves forever
		// and the test binary hangs until its -timeout, losing every
		// test of the package.
		flags: []string{"-skip", "^(TestRunTLS|TestPusher|TestRunQUIC)$"},
	},
	{
		name: "echo", path: "github.com/labstack/echo/v4", version: "v4.16.0",
		why:  "web framework: router, middleware, binding",
		long: true,
	},
	{
		name: "grpc", path: "google.golang.org/grpc", version: "v1.85.0",
		why:  "RPC: client and server over its HTTP/2 transport, generated code, status and metadata",
		long: true,
		// Its whole suite takes most of an hour; these packages run
		// calls end to end and the transport, in about a minute.
		ciPkgs: []string{".", "./internal/transport", "./codes/...", "./status/...", "./metadata/...", "./encoding/..."},
	},
	{
		name: "go-cmp", path: "github.com/google/go-cmp", version: "v0.7.0",
		why: "reflection-heavy: walks arbitrary values with reflect, unexported fields through unsafe",
		ci:  true, ciRecording: true,
	},
	{
		name: "xxhash", path: "github.com/cespare/xxhash/v2", version: "v2.3.0",
		why:    "assembly (amd64, arm64; NOSPLIT) behind //go:noescape declarations; its dynamic test builds and loads a plugin (-buildmode=plugin)",
		ci:     true,
		ciPkgs: []string{"."},
	},
	{
		name: "chi", path: "github.com/go-chi/chi/v5", version: "v5.5.0",
		why: "HTTP router and middleware over net/http (whose server matrixexec patches); recording, requests are dispatches inside the test dispatches",
		ci:  true, ciRecording: true,
	},
	{
		name: "httprouter", path: "github.com/julienschmidt/httprouter", version: "v1.3.0",
		why: "HTTP router with its own radix tree, a go 1.7 module (old language version)",
		ci:  true,
	},
	{
		name: "golang-set", path: "github.com/deckarep/golang-set/v2", version: "v2.9.0",
		why: "generics: Set[T comparable] with thread-safe and unsafe implementations, iterators",
		ci:  true,
	},
	{
		name: "golang-lru", path: "github.com/hashicorp/golang-lru/v2", version: "v2.0.7",
		why: "generics: generic LRU, 2Q, ARC and expirable caches with goroutines and timers",
	},
	{
		name: "btree", path: "github.com/tidwall/btree", version: "v1.8.2",
		why: "generics-heavy: BTreeG[T], Map[K,V], Set[K] with copy-on-write nodes",
	},
	{
		name: "json-iterator", path: "github.com/json-iterator/go", version: "v1.1.12",
		why: "unsafe, linkname and //go:nosplit: json-iterator and its dependency modern-go/reflect2 (instrumented too) pull reflect internals with //go:linkname and build codecs on unsafe pointers",
		ci:  true, ciRecording: true,
	},
	{
		name: "testify", path: "github.com/stretchr/testify", version: "v1.12.1",
		why: "reflection (ObjectsAreEqual, mock argument matching) and runtime.Caller-based failure messages",
	},
	{
		name: "compress", path: "github.com/klauspost/compress", version: "v1.20.3",
		why: "assembly-heavy (zstd, s2, huff0 have amd64 assembly) with //go:noescape and unsafe",
		// Without -short the zstd and s2 suites alone take ~10 minutes
		// (743k subtests); -short still runs ~19k tests in every package.
		flags: []string{"-short"},
	},
	{
		name: "protobuf", path: "google.golang.org/protobuf", version: "v1.36.12",
		why: "large generated code (.pb.go descriptors, fast-path tables) and unsafe-based message reflection",
	},
	{
		name: "sqlite3", path: "github.com/mattn/go-sqlite3", version: "v1.14.52",
		why: "cgo: the SQLite amalgamation, //export callbacks, database/sql driver",
		cgo: true,
	},
}
