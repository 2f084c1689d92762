package beat

import (
	"os"
	"testing"

	"github.com/matrixgo/matrix/internal/testgo"
)

// A plain go test runs the no-op contract's test here, and every other
// test in a binary built with -toolexec=matrixexec (testgo.MainLinked,
// TestLinked).
func TestMain(m *testing.M) {
	os.Exit(testgo.MainLinked(m, Linked(), "TestPlainBuildIsNoOp"))
}

// TestLinked runs the package's tests in a binary built with
// -toolexec=matrixexec.
func TestLinked(t *testing.T) { testgo.RunLinked(t) }
