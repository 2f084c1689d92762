// Package modversion reads the version of a module from the build
// information of the running program.
//
// A program built by go install MODULE@VERSION knows the version of its
// main module; a tool of another module (go get -tool) knows it as one of
// that module's dependencies; a build in a working tree knows the version
// cmd/go stamps from the repository, if any. A development build, or one
// whose module is replaced by a directory, does not know it.
package modversion

import "runtime/debug"

// Of returns the version of the module with the given path in bi: the main
// module's, or the dependency's (the version of the module that replaces
// it, if any). It returns "" when bi does not know it: bi is nil, the
// module is not in the build, or its version is "(devel)" or a directory.
func Of(bi *debug.BuildInfo, path string) string {
	if bi == nil {
		return ""
	}
	if bi.Main.Path == path {
		return known(bi.Main.Version)
	}
	for _, d := range bi.Deps {
		if d.Path != path {
			continue
		}
		if d.Replace != nil {
			return known(d.Replace.Version)
		}
		return known(d.Version)
	}
	return ""
}

// Running returns Of for the running program.
func Running(path string) string {
	bi, _ := debug.ReadBuildInfo()
	return Of(bi, path)
}

func known(v string) string {
	if v == "(devel)" {
		return ""
	}
	return v
}
