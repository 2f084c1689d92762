// Package corpus checks that matrixexec preserves the semantics of real
// third-party code: it runs the test suites of widely used modules, at
// pinned versions, once plain and built with -toolexec=matrixexec, both
// with recording off and with recording on (the zero-code tracer linked and
// started, every test a recorded dispatch, reports written to a file), and
// compares the sets of passing tests. The tracer is built in this checkout
// (MATRIX_ZEROCODE_MODULE), or, for a module whose graph has another build
// of a package the tracer links (protobuf), in the module's own graph, its
// go.mod made to require this checkout. A test that passes plain but not
// instrumented is a bug in matrixexec.
//
// The runner is TestCorpus in corpus_test.go; the modules are listed in
// modules_test.go. By default it runs a fast subset (skipped in -short
// mode), with recording on for part of it; the whole corpus, both ways,
// runs with
//
//	MATRIX_CORPUS=full go test ./integration/corpus -run TestCorpus -v -timeout 1h
//
// See the "Corpus" section of the README.
package corpus
