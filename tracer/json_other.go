//go:build !unix

package tracer

import "io/fs"

// oNoFollow is 0 where the system has no O_NOFOLLOW.
const oNoFollow = 0

// oNonblock is 0 where the system has no O_NONBLOCK.
const oNonblock = 0

// checkReportOwner checks nothing where files have no unix owner.
func checkReportOwner(fs.FileInfo) error { return nil }

// openErrorReason adds nothing to the system's errors here.
func openErrorReason(error) string { return "" }

// checkReportLinks checks nothing where files have no unix link count.
func checkReportLinks(fs.FileInfo) error { return nil }

// safeReportPath returns path: symbolic links are not checked here.
func safeReportPath(path string) (string, error) { return path, nil }
