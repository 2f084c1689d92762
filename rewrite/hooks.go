package rewrite

import (
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/inject"
	"github.com/matrixgo/matrix/internal/abi"
)

// Identifiers the rewritten files use. They are declared in the generated
// hooks file of the same package (inject/pkg/matrix_hooks.go and, in package
// main, inject/main/matrix_main.go) and linked to the recorder's entry
// points in the patched runtime (see package inject).
const (
	HookActive = "__matrix_on"
	HookEnter  = "__matrix_i"
	HookExit   = "__matrix_o"
	// hookMainEntered is called first in main.main: it ends the start-up
	// phase (package initialisation).
	hookMainEntered = "__matrix_main"
)

// HooksFileName is the name of the generated file added to every
// instrumented package.
const HooksFileName = inject.HooksFileName

// HooksFile renders the generated file that declares the hooks for package
// pkgName and registers the names of its instrumented functions with the
// recorder, so that reports are readable without the mapping file.
//
// The name table is one string: a line with the package path, then one line
// per function "<id> <name> <file:line>", then one line per go statement
// the compiler wraps (Plan.GoCalls; see abi.NameTable).
//
// The file must be the first of the package handed to the compiler: the
// instrumented functions reference __matrix_on, and package-level variables
// are initialized in declaration order, a variable waiting for the variables
// its initializer references. Declared after the package's own variables,
// __matrix_on would delay every variable whose initializer calls an
// instrumented function, and code that relies on declaration order for a
// dependency the compiler does not track (through an interface method)
// would read them uninitialized. The names are registered by a variable
// initializer, not an init function: first, an init function would shift
// the numbering of the package's own (init.0, init.1, …).
func (p *Plan) HooksFile(ids []uint32) []byte {
	var names strings.Builder
	names.WriteString(p.opts.PkgPath)
	names.WriteByte('\n')
	for i, f := range p.Funcs {
		names.WriteString(strconv.FormatUint(uint64(ids[i]), 10))
		names.WriteByte(' ')
		names.WriteString(f.Name)
		names.WriteByte(' ')
		names.WriteString(f.Pos)
		names.WriteByte('\n')
	}
	for _, g := range p.GoCalls {
		names.WriteString(abi.NameTableGo)
		names.WriteString(g.Func)
		names.WriteByte(' ')
		names.WriteString(g.Pos)
		names.WriteByte('\n')
	}
	return inject.Hooks(p.PkgName, names.String(), p.PkgName == "main")
}
