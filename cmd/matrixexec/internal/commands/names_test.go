package commands

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/reportcmd"
)

// TestNames: Run runs every command reportcmd.Names lists (the ones
// matrixexec hands over), and no other.
func TestNames(t *testing.T) {
	for _, name := range reportcmd.Names {
		// -h: each command's flags print their usage and fail, without
		// reading anything.
		err := Run([]string{name, "-h"}, "", strings.NewReader(""), io.Discard, io.Discard)
		if errors.Is(err, ErrUnknown) {
			t.Errorf("Run does not know %q, which matrixexec hands to it", name)
		}
	}
	for _, name := range []string{"version", "build", "Show", ""} {
		if err := Run([]string{name}, "", strings.NewReader(""), io.Discard, io.Discard); !errors.Is(err, ErrUnknown) {
			t.Errorf("Run(%q) = %v, want ErrUnknown", name, err)
		}
	}
}
