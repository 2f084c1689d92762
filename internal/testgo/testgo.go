// Package testgo names the Go releases the tests build with, in one place.
package testgo

import (
	"os"
	"strings"
)

// OtherReleases are the supported Go releases, besides the installed
// toolchain, that the release tests build with. The toolchains come through
// the Go command's own mechanism (GOTOOLCHAIN), from the module proxy.
// Building with every release is an exhaustive tier: the list is empty
// unless MATRIX_TEST_LONG=1 (see Long). MATRIX_GO_VERSIONS
// (space-separated) overrides the list in either tier; "none" empties it.
func OtherReleases() []string {
	if v := os.Getenv("MATRIX_GO_VERSIONS"); v != "" {
		if v == "none" {
			return nil
		}
		return strings.Fields(v)
	}
	if !Long() {
		return nil
	}
	return Releases
}

// Releases are the supported Go releases besides the installed one.
var Releases = []string{"go1.24.13", "go1.25.14", "go1.27.4"}

// NoReleases is why a test of other Go releases has none to test.
const NoReleases = "no other Go release to build with: set MATRIX_TEST_LONG=1 (the exhaustive tier) or MATRIX_GO_VERSIONS"

// EnvLong names the switch of the exhaustive test tiers.
const EnvLong = "MATRIX_TEST_LONG"

// Long reports whether the exhaustive test tiers run (MATRIX_TEST_LONG=1):
// the test suites of third-party modules run plain and under matrixexec,
// and every supported Go release besides the installed one, beside the
// tests every run of the test command has. CI sets it.
func Long() bool { return os.Getenv(EnvLong) == "1" }
