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
