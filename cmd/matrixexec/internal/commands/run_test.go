package commands

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// run runs a command as matrixexec does (its exit code; errors on stderr).
// The default map is $MATRIX_MAP, or none.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := Run(args, os.Getenv("MATRIX_MAP"), stdin, stdout, stderr)
	var code ExitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUnknown):
		fmt.Fprintf(stderr, "matrixexec: unknown command %q\n", args[0])
		return 2
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintf(stderr, "matrixexec: %v\n", err)
	return 1
}
