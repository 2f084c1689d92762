package rewrite

import (
	"fmt"

	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/abi"
)

// Dispatch kinds, as the runtime takes them.
const (
	kindHTTP      = int(abi.KindHTTP)
	kindTest      = int(abi.KindTest)
	kindBenchmark = int(abi.KindBenchmark)
)

func beginEnd(kind int, nameExpr string) string {
	return fmt.Sprintf("if __matrix_d := __matrix_begin(%d, %s); __matrix_d != nil { defer __matrix_end(__matrix_d, \"\") }; ", kind, nameExpr)
}

var stdHooks = map[string][]stdHook{
	"net/http": {
		// Every request a server handles. While recording, the
		// request's trace context goes to the dispatch, so that exported
		// reports join the caller's trace, and so do its method, host and
		// scheme (never its path or query: the route is the scene).
		{recv: "serverHandler", name: "ServeHTTP", stmt: func(p []string) string {
			if len(p) < 3 || p[2] == "_" {
				return beginEnd(kindHTTP, `"http"`)
			}
			r := p[2]
			return fmt.Sprintf("if __matrix_d := __matrix_begin(%d, %s); __matrix_d != nil { __matrix_request(__matrix_d, %s.Method, %s.Host, %s.TLS != nil); __matrix_traceparent(__matrix_d, %s.Header.Get(\"Traceparent\")); defer __matrix_end(__matrix_d, \"\") }; ", kindHTTP, `"http"`, r, r, r, r)
		}},
		// The status code of the response, when the handler (or the
		// server for it) writes the header on the dispatch's goroutine;
		// informational 1xx codes are not the response's status.
		{recv: "response", name: "WriteHeader", stmt: func(p []string) string {
			if len(p) < 2 || p[1] == "_" {
				return ""
			}
			return fmt.Sprintf("if __matrix_on.v != 0 && %s >= 200 { __matrix_status(%s) }; ", p[1], p[1])
		}},
		// A server entering its accept loop: the service is ready.
		{recv: "Server", name: "Serve", stmt: func([]string) string {
			return "__matrix_serving(); "
		}},
		// The route pattern is the scene, named as soon as the mux has
		// matched it (so a stuck request's lag report has it too); with
		// nested muxes the innermost, most specific pattern is the last.
		{recv: "ServeMux", name: "findHandler", results: []string{"h", "patStr"}, stmt: func(p []string) string {
			return "if __matrix_on.v != 0 { defer func() { if patStr != \"\" { __matrix_scene(patStr) } }() }; "
		}},
	},
	// Each test and benchmark; not the runners that run them all (the
	// top-level T of runTests, the "Main" B of runBenchmarks), which have
	// no parent and only wait for them.
	"testing": {
		{name: "tRunner", stmt: func(p []string) string {
			return "if " + p[0] + ".parent != nil { " + beginEnd(kindTest, p[0]+".name") + "}; "
		}},
		{recv: "B", name: "runN", stmt: func(p []string) string {
			return "if " + p[0] + ".parent != nil { " + beginEnd(kindBenchmark, p[0]+".name") + "}; "
		}},
	},
}

// HasStdHooks reports whether PatchStd changes package pkg.
func HasStdHooks(pkg string) bool { return stdHooks[pkg] != nil }

// PatchStd adds the dispatch hooks of a standard package (net/http,
// testing), writing changed files to dir, and returns the new file list.
// Every hook must be found: a toolchain whose sources moved fails the build
// with a message naming the function rather than silently losing a source.
func PatchStd(pkg string, files []string, dir string) ([]string, error) {
	patch := pkgPatch{
		pkg:   pkg,
		hooks: stdHooks[pkg],
		// First, so that __matrix_on precedes the package's own variables
		// in declaration order (see Plan.HooksFile).
		files: func(pkgName string) ([]addedFile, error) {
			return []addedFile{{name: inject.StdFileName, content: inject.Std(pkgName), first: true}}, nil
		},
	}
	return patch.apply(files, dir)
}

// TestMainFile is the name of the main file go test generates for a test
// binary.
const TestMainFile = "_testmain.go"

// PatchTestMain makes the main function of a test binary (the file go test
// generates, path) end the start-up phase as main.main does in a program:
// without it, start-up recording and its clock would run for the whole test
// run. It returns the patched file and the file declaring the hook, both
// written to dir.
func PatchTestMain(path, dir string) ([]string, error) {
	patch := pkgPatch{
		pkg:   "test main",
		hooks: []stdHook{{name: "main", stmt: func([]string) string { return hookMainEntered + "(); " }}},
		files: func(pkgName string) ([]addedFile, error) {
			return []addedFile{{name: inject.TestMainFileName, content: inject.TestMain(pkgName)}}, nil
		},
	}
	return patch.apply([]string{path}, dir)
}
