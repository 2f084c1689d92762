// Package reportcmd names the report commands and the program that runs
// them. matrixexec, which cmd/go starts several times in every build, links
// only what builds need; it hands these commands to matrixreport, which
// links what they need (a pprof encoder, an HTML renderer, an OTLP
// client).
package reportcmd

// Names are the report commands, as matrixexec and matrixreport take them.
var Names = []string{"show", "top", "pprof", "html", "diff", "retrace", "analyze", "export"}

// Tool is the name of the program that runs the report commands.
const Tool = "matrixreport"

// Package is the import path of Tool's main package.
const Package = "github.com/matrixgo/matrix/cmd/matrixexec/matrixreport"

// EnvMap is the variable through which matrixexec tells matrixreport the
// id map its own flags and environment name, so that
// "matrixexec -map FILE show" reads FILE. It is MATRIX_MAP, which
// matrixreport reads like matrixexec does.
const EnvMap = "MATRIX_MAP"

// EnvVersion is the variable through which matrixexec tells matrixreport
// the version of the matrix module it was built from ("" when its build
// does not know it), so that matrixreport can warn when it comes from
// another version.
const EnvVersion = "MATRIX_EXEC_VERSION"
