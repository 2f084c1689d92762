// Package doclinks holds the test that keeps the documentation's links
// working: every relative link and image in README.md, BENCHMARKS.md,
// CONTRIBUTING.md and docs/*.md must name a file or directory of the
// repository, and every #anchor, in the same file or in another markdown
// file, must name one of its headings as GitHub spells heading anchors.
//
// The package has no code of its own; run it with
//
//	go test ./internal/doclinks
package doclinks
