package inlinecost

import (
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"

	"github.com/matrixgo/matrix/internal/importcfg"
)

// Importer is a types.Importer over the export data a compile step is
// given: the packagefile and importmap lines of its -importcfg file. It
// also answers the compiler's inlining decisions about the functions of
// the packages it imported.
type Importer struct {
	fset *token.FileSet
	cfg  *importcfg.Config
	pkgs map[string]*Package
	errs map[string]error
	// std is the standard library's importer, which reads the go/types
	// view of every package; its lookup serves the contents of the
	// archive being read (current, at currentPath) or opens the file the
	// importcfg names.
	std         types.Importer
	current     []byte
	currentPath string
}

// NewImporter returns an importer for the contents of an importcfg file.
func NewImporter(fset *token.FileSet, data []byte) (*Importer, error) {
	cfg, err := importcfg.Parse(data)
	if err != nil {
		return nil, err
	}
	im := &Importer{
		fset: fset,
		cfg:  cfg,
		pkgs: map[string]*Package{},
		errs: map[string]error{},
	}
	im.std = importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if path == im.currentPath && im.current != nil {
			return io.NopCloser(bytes.NewReader(im.current)), nil
		}
		file, ok := im.cfg.File(path)
		if !ok {
			return nil, fmt.Errorf("import %q: not in the importcfg", path)
		}
		return os.Open(file)
	})
	return im, nil
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
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("import %q: %w", path, err)
	}
	im.current, im.currentPath = data, path
	defer func() { im.current, im.currentPath = nil, "" }()
	p, err := read(im.std, data, path)
	if err != nil {
		return nil, fmt.Errorf("import %q: %s: %w", path, file, err)
	}
	return p, nil
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
