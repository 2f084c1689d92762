// Package commands implements matrixexec's user commands, which work on
// what instrumented programs report: show, top, pprof, html, diff,
// retrace, analyze and export (reportcmd.Names). The matrixreport command
// runs them; matrixexec, the -toolexec proxy, hands them to it.
package commands

import (
	"errors"
	"fmt"
	"io"
)

// ExitError is an exit status for the process to end with, without a
// message of its own (the command has written it, as flag errors are).
type ExitError int

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitError is the name the commands use.
type exitError = ExitError

// ErrUnknown is returned by Run for a name that is not one of its commands.
var ErrUnknown = errors.New("unknown command")

// Run runs the command args[0] with the arguments args[1:]. mapPath is the
// method mapping file the commands use unless given -map.
func Run(args []string, mapPath string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return ErrUnknown
	}
	switch args[0] {
	case "retrace":
		return retrace(mapPath, args[1:], stdin, stdout)
	case "analyze":
		return analyze(args[1:], stdin, stdout)
	case "show":
		return show(mapPath, args[1:], stdin, stdout, stderr)
	case "top":
		return top(mapPath, args[1:], stdin, stdout, stderr)
	case "pprof":
		return pprofCmd(mapPath, args[1:], stdin, stdout, stderr)
	case "html":
		return htmlCmd(mapPath, args[1:], stdin, stdout, stderr)
	case "diff":
		return diffCmd(mapPath, args[1:], stdin, stdout, stderr)
	case "export":
		return exportCmd(mapPath, args[1:], stdin, stdout, stderr)
	}
	return ErrUnknown
}
