// Command matrixreport runs Matrix for Go's report commands on what
// programs built with matrixexec report. matrixexec hands its report
// commands here (matrixexec show … runs matrixreport show …), so that the
// build wrapper cmd/go starts several times in every build links only what
// builds need. Its commands and their flags are matrixexec's (matrixexec
// help lists them): show, top, pprof, html, diff, retrace, analyze and
// export.
//
// Without -map, the commands read the id map MATRIX_MAP names, else the
// one matrixexec keeps by default: .matrix/methodMapping.txt at the root of
// the current module. Install it beside matrixexec, as a tool of the module
// or into one directory:
//
//	go get -tool github.com/matrixgo/matrix/cmd/matrixexec github.com/matrixgo/matrix/cmd/matrixexec/matrixreport
//	go install github.com/matrixgo/matrix/cmd/matrixexec/...@latest
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/commands"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/defaults"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/gocmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/reportcmd"
	"github.com/matrixgo/matrix/internal/modversion"
	"github.com/matrixgo/matrix/internal/self"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, modversion.Running(self.Module)))
}

// run is main without the process, for a matrixreport of the given version
// of the matrix module ("" if unknown): it returns the exit code. Its
// messages, like the commands' own, speak as matrixexec, whose commands
// these are to the user.
func run(args []string, getenv func(string) string, version string) int {
	const name = "matrixexec"
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		w, code := os.Stdout, 0
		if len(args) == 0 {
			w, code = os.Stderr, 2
		}
		fmt.Fprintf(w, "usage: %s COMMAND [ARGS]: one of %s (see matrixexec help)\n", reportcmd.Tool, strings.Join(reportcmd.Names, ", "))
		return code
	}
	if theirs := getenv(reportcmd.EnvVersion); theirs != "" && version != "" && theirs != version {
		fmt.Fprintf(os.Stderr, "%s: warning: matrixexec is %s but %s, which runs its report commands, is %s: install both from one version (go install %s/cmd/matrixexec/...@%s)\n",
			name, theirs, reportcmd.Tool, version, self.Module, theirs)
	}
	err := commands.Run(args, mapFile(getenv), os.Stdin, os.Stdout, os.Stderr)
	var code commands.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.Is(err, commands.ErrUnknown):
		fmt.Fprintf(os.Stderr, "%s: unknown command %q (see matrixexec help)\n", name, args[0])
		return 2
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	return 1
}

// mapFile returns the id map the commands read unless given -map: the one
// MATRIX_MAP names, else matrixexec's default for the current module.
func mapFile(getenv func(string) string) string {
	path := getenv(reportcmd.EnvMap)
	if path == "" {
		path = filepath.Join(defaults.FilesDir(getenv, gocmd.Line), defaults.Map)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}
