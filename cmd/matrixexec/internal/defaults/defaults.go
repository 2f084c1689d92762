// Package defaults says where matrixexec and matrixreport look for the id
// map and the blacklist when none is named: in .matrix at the module (or
// workspace) root, or, for a build with no module of its own, in
// matrixexec's part of the user's cache directory.
package defaults

import (
	"os"
	"path/filepath"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/gocmd"
)

// The default files, in FilesDir.
const (
	Dir       = ".matrix"           // their directory at the module root
	Map       = "methodMapping.txt" // the id map
	Blacklist = "blacklist.txt"     // the blacklist
)

// FilesDir returns the directory of the default map and blacklist: Dir at
// the module (or workspace) root. A build outside any module (GOPATH mode,
// go run file.go in a bare directory) has no module to keep a map with: the
// map goes to the user's cache, not to whatever the current directory is
// ($HOME, /tmp). Nor does go install or go run of pkg@version, which
// ignores the module of the current directory: its ids do not belong in
// that module's committed map. goLine returns the go command's line, nil
// if unknown; it is called only in a module.
func FilesDir(getenv func(string) string, goLine func() []string) string {
	dir := filepath.Join(gocmd.ModuleRoot(getenv), Dir)
	if !gocmd.InModule(getenv) || gocmd.PkgAtVersion(goLine()) {
		if c := UserCacheDir("nomodule"); c != "" {
			dir = c
		}
	}
	return dir
}

// UserCacheDir returns the directory sub of matrixexec's part of the
// user's cache directory, or "" if there is none.
func UserCacheDir(sub string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "matrix", sub)
}
