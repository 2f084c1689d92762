package inlinecost

import (
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"

	"github.com/matrixgo/matrix/internal/importcfg"
	"golang.org/x/tools/go/gcexportdata"
)

// Importer is a types.Importer over the export data a compile step is
// given: the packagefile and importmap lines of its -importcfg file. It
// also answers the compiler's inlining decisions about the functions of
// the packages it imported.
type Importer struct {
	fset    *token.FileSet
	cfg     *importcfg.Config
	imports map[string]*types.Package
	pkgs    map[string]*Package
	errs    map[string]error
	// std is the standard library's importer, for export data that
	// gcexportdata does not know (see read); made when first needed.
	std types.Importer
}

// NewImporter returns an importer for the contents of an importcfg file.
func NewImporter(fset *token.FileSet, data []byte) (*Importer, error) {
	cfg, err := importcfg.Parse(data)
	if err != nil {
		return nil, err
	}
	return &Importer{
		fset:    fset,
		cfg:     cfg,
		imports: map[string]*types.Package{},
		pkgs:    map[string]*Package{},
		errs:    map[string]error{},
	}, nil
}

// Import implements types.Importer.
func (im *Importer) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	path, _, _ = im.cfg.Lookup(path)
	p, err := im.load(path)
	if err != nil {
		return nil, err
	}
	return p.Types, nil
}

// Preload reads the export data of every package of the importcfg, as
// the imports of a type check would: so that a caller can do it while it
// does other work (parsing the files to check, say). Errors are kept for
// the imports that meet them. Preload must not run at the same time as
// the importer's other methods.
func (im *Importer) Preload() {
	for _, path := range im.cfg.Files() {
		im.load(path)
	}
}

func (im *Importer) load(path string) (*Package, error) {
	if p, ok := im.pkgs[path]; ok {
		return p, nil
	}
	if err, ok := im.errs[path]; ok {
		return nil, err
	}
	p, err := im.read(path)
	if err != nil {
		im.errs[path] = err
		return nil, err
	}
	im.pkgs[path] = p
	return p, nil
}

func (im *Importer) read(path string) (*Package, error) {
	file, ok := im.cfg.File(path)
	if !ok {
		return nil, fmt.Errorf("import %q: not in the importcfg", path)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("import %q: %w", path, err)
	}
	defer f.Close()
	r, err := gcexportdata.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("import %q: %s: %w", path, file, err)
	}
	p, err := Read(r, im.fset, im.imports, path)
	if err == nil {
		return p, nil
	}
	// A Go release newer than gcexportdata writes export data in a
	// format it does not know yet (Go 1.27's, say). The importer of the
	// standard library reads the format of the Go release this binary
	// was built with: the package's types then come from it, without
	// the compiler's decisions (Package.Func knows none).
	tp, stdErr := im.stdImport(path)
	if stdErr != nil {
		return nil, err
	}
	return &Package{Types: tp, path: path}, nil
}

// stdImport imports path with the standard library's importer, over the
// files of the importcfg. That importer panics on a format it does not
// know: the panic is returned as an error.
func (im *Importer) stdImport(path string) (tp *types.Package, err error) {
	if im.std == nil {
		im.std = importer.ForCompiler(im.fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := im.cfg.File(path)
			if !ok {
				return nil, fmt.Errorf("import %q: not in the importcfg", path)
			}
			return os.Open(file)
		})
	}
	defer func() {
		if r := recover(); r != nil {
			tp, err = nil, fmt.Errorf("import %q: %v", path, r)
		}
	}()
	return im.std.Import(path)
}

// Func returns the compiler's decision about fn, a function or method of
// a package in the importcfg. It reads that package's export data if no
// import has yet. The decision is unknown for packages the importcfg does
// not name.
func (im *Importer) Func(fn *types.Func) (Cost, error) {
	if fn.Pkg() == nil {
		return Cost{}, nil
	}
	if _, ok := im.cfg.File(fn.Pkg().Path()); !ok {
		return Cost{}, nil // not imported directly: no export data at hand
	}
	p, err := im.load(fn.Pkg().Path())
	if err != nil {
		return Cost{}, err
	}
	if p.Types != fn.Pkg() {
		return Cost{}, nil // another view of the package
	}
	return p.Func(fn)
}
