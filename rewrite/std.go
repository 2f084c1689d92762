package rewrite

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/abi"
)

// Dispatch kinds, as the runtime takes them.
const (
	kindHTTP      = int(abi.KindHTTP)
	kindTest      = int(abi.KindTest)
	kindBenchmark = int(abi.KindBenchmark)
)

// bound returns the statement that brackets a call out of the program
// with a boundary of kind (abi.BoundDB, …) while it records: a, b, c and v
// are the expressions of its attributes (see runtime.matrixBound), only
// evaluated while the recorder is on.
func bound(kind int, a, b, c, v string) string {
	return fmt.Sprintf("if __matrix_on.v != 0 && __matrix_bound(%d, %s, %s, %s, %s) { defer __matrix_unbound() }; ", kind, a, b, c, v)
}

// sqlBound is the hook of a database/sql call made through the database
// db (an expression of type *DB) with the statement query: the statement
// and the driver, whose package names the database system. Arguments are
// never passed.
func sqlBound(db, query string) string {
	return bound(abi.BoundDB, query, `""`, `""`, db+".connector.Driver()")
}

// sqlHook hooks a database/sql method whose parameter at index q (the
// receiver is 0) is the statement; dbOf turns the receiver into its *DB.
func sqlHook(recv, name string, q int, dbOf func(string) string) stdHook {
	return stdHook{recv: recv, name: name, file: "sql.go", stmt: func(p []string) string {
		if len(p) <= q || p[0] == "_" || p[q] == "_" {
			return ""
		}
		return sqlBound(dbOf(p[0]), p[q])
	}}
}

// sqlFixed hooks a database/sql method that runs a statement of its own
// ("BEGIN", "COMMIT", "ROLLBACK").
func sqlFixed(recv, name, stmt string, dbOf func(string) string) stdHook {
	return stdHook{recv: recv, name: name, file: "sql.go", stmt: func(p []string) string {
		if len(p) == 0 || p[0] == "_" {
			return ""
		}
		return sqlBound(dbOf(p[0]), strconv.Quote(stmt))
	}}
}

func dbSelf(r string) string  { return r }
func dbField(r string) string { return r + ".db" }

func beginEnd(kind int, nameExpr string) string {
	return fmt.Sprintf("if __matrix_d := __matrix_begin(%d, %s); __matrix_d != nil { defer __matrix_end(__matrix_d, \"\") }; ", kind, nameExpr)
}

var stdHooks = sync.OnceValue(func() map[string][]stdHook {
	return map[string][]stdHook{
		// Every call database/sql makes to a driver is a boundary named by its
		// statement. The methods hooked are those that every public form
		// (Query, QueryRow, Exec, Prepare, Begin, with or without a context,
		// on a DB, a Conn, a Tx or a Stmt) passes through once: the DB's
		// include the wait for a free connection of its pool.
		"database/sql": {
			sqlHook("DB", "query", 2, dbSelf),
			sqlHook("DB", "exec", 2, dbSelf),
			sqlHook("DB", "prepare", 2, dbSelf),
			sqlFixed("DB", "begin", "BEGIN", dbSelf),
			sqlHook("Conn", "QueryContext", 2, dbField),
			sqlHook("Conn", "ExecContext", 2, dbField),
			sqlHook("Conn", "PrepareContext", 2, dbField),
			sqlFixed("Conn", "BeginTx", "BEGIN", dbField),
			sqlHook("Tx", "QueryContext", 2, dbField),
			sqlHook("Tx", "ExecContext", 2, dbField),
			sqlHook("Tx", "PrepareContext", 2, dbField),
			sqlFixed("Tx", "Commit", "COMMIT", dbField),
			sqlFixed("Tx", "Rollback", "ROLLBACK", dbField),
			{recv: "Stmt", name: "QueryContext", file: "sql.go", stmt: stmtBound},
			{recv: "Stmt", name: "ExecContext", file: "sql.go", stmt: stmtBound},
		},
		"net/http": {
			// Every request a server handles. While recording, the
			// request's trace context goes to the dispatch, so that exported
			// reports join the caller's trace, and so do its method, host and
			// scheme (never its path or query: the route is the scene).
			// The header is read by its canonical key, as the server stored
			// it: Header.Get would canonicalize the key on every request.
			{recv: "serverHandler", name: "ServeHTTP", stmt: func(p []string) string {
				if len(p) < 3 || p[2] == "_" {
					return beginEnd(kindHTTP, `"http"`)
				}
				r := p[2]
				return fmt.Sprintf("if __matrix_d := __matrix_begin_request(%d, %s, %s.Method, %s.Host, %s.TLS != nil); __matrix_d != nil { __matrix_trace_in(__matrix_d, %s.Header); defer __matrix_end(__matrix_d, \"\") }; ", kindHTTP, `"http"`, r, r, r, r)
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
			// A client request is a boundary named by its method, scheme and
			// host: never its path or query string, which may carry ids and
			// private data. A request without a traceparent header of its own
			// is sent as a copy with the dispatch's trace context
			// (beat.Config.NoPropagation), naming the boundary's span; one
			// without a header at all is left to fail as it would.
			{recv: "Transport", name: "roundTrip", file: "transport.go", stmt: func(p []string) string {
				if len(p) < 2 || p[1] == "_" {
					return ""
				}
				r := p[1]
				return fmt.Sprintf("if __matrix_on.v != 0 && %[1]s.URL != nil { if __matrix_ok, __matrix_tp := __matrix_bound_out(%[2]d, %[1]s.Method, %[1]s.URL.Scheme, %[1]s.URL.Host, %[1]s.Header != nil && %[1]s.Header[\"Traceparent\"] == nil); __matrix_ok { defer __matrix_unbound(); if __matrix_tp != \"\" { %[1]s = __matrix_propagate(%[1]s, __matrix_tp) } } }; ", r, abi.BoundHTTP)
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
		// no parent and only wait for them. A test's dispatch ends when its
		// function returns (or its goroutine exits through runtime.Goexit),
		// before tRunner's own deferred function tells the parent the test is
		// done: a test binary exits as soon as its last test has said so, and
		// the report of that test must be made by then.
		"testing": {
			{name: "tRunner", check: params("t", "fn"), stmt: func(p []string) string {
				return fmt.Sprintf("if %[1]s.parent != nil { if __matrix_d := __matrix_begin(%[3]d, %[1]s.name); __matrix_d != nil { __matrix_f := %[2]s; %[2]s = func(__matrix_t *T) { defer __matrix_end(__matrix_d, \"\"); __matrix_f(__matrix_t) } } }; ", p[0], p[1], kindTest)
			}},
			{recv: "B", name: "runN", stmt: func(p []string) string {
				return "if " + p[0] + ".parent != nil { " + beginEnd(kindBenchmark, p[0]+".name") + "}; "
			}},
		},
	}
})

// stmtBound hooks a prepared statement's execution: its statement is the
// one it was prepared with.
func stmtBound(p []string) string {
	if len(p) == 0 || p[0] == "_" {
		return ""
	}
	return sqlBound(p[0]+".db", p[0]+".query")
}

// HasStdHooks reports whether PatchStd changes package pkg.
func HasStdHooks(pkg string) bool { return stdHooks()[pkg] != nil }

// PatchStd adds the dispatch hooks of a standard package (net/http,
// testing), writing changed files to dir, and returns the new file list.
// Every hook must be found: a toolchain whose sources moved fails the build
// with a message naming the function rather than silently losing a source.
func PatchStd(pkg string, files []string, dir string) ([]string, error) {
	patch := pkgPatch{
		pkg:   pkg,
		hooks: stdHooks()[pkg],
		// First, so that __matrix_on precedes the package's own variables
		// in declaration order (see Plan.HooksFile).
		files: func(pkgName string) ([]addedFile, error) {
			files := []addedFile{{name: inject.StdFileName, content: inject.Std(pkgName), first: true}}
			if pkg == "net/http" {
				files = append(files, addedFile{name: inject.StdHTTPFileName, content: inject.StdHTTP(pkgName)})
			}
			return files, nil
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
