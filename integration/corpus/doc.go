// Package corpus checks that matrixexec preserves the semantics of real
// third-party code: it runs the test suites of widely used modules, at
// pinned versions, once plain and once built with -toolexec=matrixexec, and
// compares the sets of passing tests. A test that passes plain but not
// instrumented is a bug in matrixexec.
//
// The runner is TestCorpus in corpus_test.go; the modules are listed in
// modules_test.go. By default it runs a fast subset (skipped in -short
// mode); the whole corpus runs with
//
//	MATRIX_CORPUS=full go test ./integration/corpus -run TestCorpus -v -timeout 1h
//
// See the "Corpus" section of the README.
package corpus
