// Package testgo names the Go releases the tests build with, in one place.
package testgo

import (
	"os"
	"strings"
)

// OtherReleases are the supported Go releases, besides the installed
// toolchain, that the release tests build with. The toolchains come through
// the Go command's own mechanism (GOTOOLCHAIN), from the module proxy.
// MATRIX_GO_VERSIONS (space-separated) overrides the list; "none" empties it.
func OtherReleases() []string {
	if v := os.Getenv("MATRIX_GO_VERSIONS"); v != "" {
		if v == "none" {
			return nil
		}
		return strings.Fields(v)
	}
	return []string{"go1.24.13", "go1.25.14", "go1.27.4"}
}

// EnvLong names the switch of the exhaustive test tiers.
const EnvLong = "MATRIX_TEST_LONG"

// Long reports whether the exhaustive test tiers run (MATRIX_TEST_LONG=1):
// the test suites of large third-party modules run under matrixexec, beside
// the tiers every run of the test command has. CI sets it.
func Long() bool { return os.Getenv(EnvLong) == "1" }
