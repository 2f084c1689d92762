package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/internal/self"
	"github.com/matrixgo/matrix/rewrite"
)

// unsupportedTarget returns, for every compile and link, the minor version
// of the toolchain's Go release (0 if it cannot be told), and fails for a
// Go release or a target the recorder does not support: such a build is
// run as a plain build runs it (toolexec). tool is the path of the
// compiler or the linker, $GOROOT/pkg/tool/<host>/<tool>; cmd/go sets GOOS
// and GOARCH for it. A release that cannot be told is left to the
// runtime's compile, which refuses it (rewrite.CheckGoRelease).
func unsupportedTarget(tool string) (minor int, err error) {
	goroot := toolGoroot(tool)
	minor, err = rewrite.GoRelease(goroot)
	if err != nil {
		return 0, checkArch()
	}
	if minor < rewrite.MinGoMinor || minor > rewrite.MaxGoMinor {
		return minor, rewrite.CheckGoRelease(goroot) // which names the toolchain
	}
	return minor, checkArch()
}

// checkArch checks the GOOS and GOARCH cmd/go set for the tool.
func checkArch() error {
	if err := rewrite.CheckOS(os.Getenv("GOOS")); err != nil {
		return err
	}
	goarch := os.Getenv("GOARCH")
	if goarch == "" {
		return nil // the host's: matrixexec runs there
	}
	return rewrite.CheckArch(goarch)
}

// toolGoroot returns the GOROOT of the toolchain whose compiler is at
// compileTool ($GOROOT/pkg/tool/<host>/compile): the one cmd/go sets for its
// tools, else the compiler's.
func toolGoroot(compileTool string) string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		return goroot
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(compileTool))))
}

// checkABI compares the ABI version of the abi package being compiled (the
// program's matrix module: beat and the tracers are built against it) with
// this matrixexec's, which patches the runtime and renders the hooks. A
// mismatch would corrupt memory at run time, so it fails the build.
func checkABI(files []string) error {
	for _, f := range files {
		if filepath.Base(f) != "abi.go" {
			continue
		}
		v, err := abiVersionOf(f)
		if err != nil {
			return err
		}
		if v != abi.Version {
			return abiSkew(strconv.Itoa(v))
		}
		return nil
	}
	return abiSkew("unknown (no abi.go)")
}

// checkBeatABI fails the build when the program's beat package predates
// the abi package (and so any ABI version): its importcfg does not list it.
func checkBeatABI(c *toolcmd.Cmd) error {
	cfg, err := c.Importcfg()
	if err != nil {
		return fmt.Errorf("compile %s: %w", beatPkg, err)
	}
	if cfg == nil {
		return nil
	}
	if _, ok := cfg.File(abiPkg); !ok {
		return abiSkew("1 (a matrix module without internal/abi)")
	}
	return nil
}

func abiSkew(module string) error {
	return fmt.Errorf("matrixexec %s speaks recorder ABI %d, but the program's %s module has ABI %s: "+
		"use the same version of both (go get %s@%s, or install the matrixexec of the module's version with go install %s/cmd/matrixexec)",
		version(), abi.Version, self.Module, module, self.Module, version(), self.Module)
}

// abiVersionOf reads the constant Version from the abi source file.
func abiVersionOf(path string) (int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return 0, fmt.Errorf("compile %s: %w", abiPkg, err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != "Version" || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
					if v, ok := constant.Int64Val(constant.MakeFromLiteral(lit.Value, lit.Kind, 0)); ok {
						return int(v), nil
					}
				}
			}
		}
	}
	return 0, fmt.Errorf("compile %s: %s declares no integer constant Version", abiPkg, path)
}
