package rewrite

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
)

// A pkgPatch is the change matrixexec makes to a package of the toolchain
// (runtime, net/http, testing, a test binary's main), declared rather than
// spliced by hand: fields added to struct types, statements added at the top
// of functions, and files added to the package. apply makes every change to
// a file through one editBuffer, so that no line of the original moves.
//
// Every field's type and every hooked function must be found: a toolchain
// whose sources moved fails the build with a message that names what is
// missing, rather than silently losing a hook.
type pkgPatch struct {
	// pkg names the package in messages ("runtime", "test main").
	pkg    string
	fields []fieldPatch
	hooks  []stdHook
	// files, if set, renders the files added to the package, given its
	// name.
	files func(pkgName string) ([]addedFile, error)
}

// A fieldPatch adds fields to a struct type: they are inserted before the
// struct's closing brace, on that brace's line.
type fieldPatch struct {
	file string // the file that declares the type
	typ  string // the struct type's name
	text string // the fields, each "name type; "
}

// A stdHook is a statement added at the top of a function. The dispatch
// sources of the standard packages are stdHooks: the Go counterparts of
// Matrix's Looper printer hook, which turn every request served by net/http
// and every test run by testing into a dispatch with no change to the
// program.
type stdHook struct {
	recv, name string   // receiver type (without *) and function name
	file       string   // the file that declares it, if known: no other is read
	results    []string // result names the statement uses: checked
	// check, if set, vets the function's declaration before it is
	// patched (a signature the statement relies on).
	check func(*ast.FuncDecl) error
	// stmt renders the statement inserted at the top of the body, given
	// the names of the function's parameters (receiver first).
	stmt func(params []string) string
	// ifCompiled hooks the function only where its file is compiled: a
	// file of some operating systems only (signal_unix.go). Elsewhere the
	// hook is left out; where the file is compiled, the function must be
	// found.
	ifCompiled bool
	// match, if set, hooks every function whose name it accepts, instead
	// of the one named name (which then only names the hook in
	// messages); with ifCompiled, none needs to be found.
	match func(name string) bool
	// stmtFor, if set, renders the statement instead of stmt, given the
	// function's declaration too: a statement that depends on what this
	// release's body holds.
	stmtFor func(fd *ast.FuncDecl, params []string) string
}

// An addedFile is a file a pkgPatch adds to the package.
type addedFile struct {
	name    string
	content []byte
	// first puts it before the package's own files, rather than after.
	first bool
}

// apply patches the package's files, writing the changed and the added files
// to dir, and returns the new file list.
func (pp *pkgPatch) apply(files []string, dir string) ([]string, error) {
	foundHook := make([]bool, len(pp.hooks))
	foundField := make([]bool, len(pp.fields))
	fileSeen := make([]bool, len(pp.fields))
	out := append([]string(nil), files...)
	pkgName := ""
	for i, path := range files {
		base := filepath.Base(path)
		if !pp.mayChange(base) {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", pp.pkg, err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("patch %s: %w", pp.pkg, err)
		}
		pkgName = f.Name.Name
		sf := &srcFile{editBuffer: editBuffer{path: path, src: src}, ast: f, lineNames: lineDirectiveNames(f, path)}
		for k, fp := range pp.fields {
			if fp.file != base {
				continue
			}
			fileSeen[k] = true
			if closing := structClosing(f, fp.typ); closing.IsValid() {
				sf.insert(fset.Position(closing).Offset, fp.text)
				foundField[k] = true
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			for h, hook := range pp.hooks {
				named := fd.Name.Name == hook.name
				if hook.match != nil {
					named = hook.match(fd.Name.Name)
				}
				if hook.file != "" && hook.file != base || !named || recvTypeName(fd) != hook.recv {
					continue
				}
				if hook.check != nil {
					if err := hook.check(fd); err != nil {
						return nil, fmt.Errorf("patch %s: %s %w", pp.pkg, hookName(hook), err)
					}
				}
				if !hasResults(fd, hook.results) {
					return nil, fmt.Errorf("patch %s: %s no longer has the results %v in this Go release; matrixexec does not support it", pp.pkg, hookName(hook), hook.results)
				}
				stmt := hook.stmt
				if hook.stmtFor != nil {
					stmt = func(p []string) string { return hook.stmtFor(fd, p) }
				}
				sf.insert(fset.Position(fd.Body.Lbrace).Offset+1, stmt(paramNames(fd))+resumeDirective(fset, sf, fd.Body.Lbrace))
				foundHook[h] = true
			}
		}
		if !sf.changed() {
			continue
		}
		dst := filepath.Join(dir, base)
		if err := os.WriteFile(dst, sf.render(nil), 0o644); err != nil {
			return nil, fmt.Errorf("patch %s: %w", pp.pkg, err)
		}
		out[i] = dst
	}
	for k, fp := range pp.fields {
		switch {
		case !fileSeen[k]:
			return nil, fmt.Errorf("patch %s: %s not among the compiled files; matrixexec does not support this Go release", pp.pkg, fp.file)
		case !foundField[k]:
			return nil, fmt.Errorf("patch %s: %s: no type %s struct in this Go release; matrixexec does not support it", pp.pkg, fp.file, fp.typ)
		}
	}
	compiled := make(map[string]bool, len(files))
	for _, path := range files {
		compiled[filepath.Base(path)] = true
	}
	for h, ok := range foundHook {
		if !ok && pp.hooks[h].ifCompiled && (!compiled[pp.hooks[h].file] || pp.hooks[h].match != nil) {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("patch %s: function %s not found in this Go release's sources; matrixexec does not support it", pp.pkg, hookName(pp.hooks[h]))
		}
	}
	if pp.files == nil {
		return out, nil
	}
	added, err := pp.files(pkgName)
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", pp.pkg, err)
	}
	for _, a := range added {
		path := filepath.Join(dir, a.name)
		if err := os.WriteFile(path, a.content, 0o644); err != nil {
			return nil, fmt.Errorf("patch %s: %w", pp.pkg, err)
		}
		if a.first {
			out = append([]string{path}, out...)
		} else {
			out = append(out, path)
		}
	}
	return out, nil
}

// mayChange reports whether the patch may change the file named base.
func (pp *pkgPatch) mayChange(base string) bool {
	for _, fp := range pp.fields {
		if fp.file == base {
			return true
		}
	}
	for _, h := range pp.hooks {
		if h.file == "" || h.file == base {
			return true
		}
	}
	return false
}

// structClosing returns the position of the closing brace of the struct type
// named name declared at package level in f.
func structClosing(f *ast.File, name string) token.Pos {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			if ts.Name.Name != name {
				continue
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				return st.Fields.Closing
			}
		}
	}
	return token.NoPos
}

func hookName(h stdHook) string {
	if h.recv != "" {
		return "(" + h.recv + ")." + h.name
	}
	return h.name
}

func recvTypeName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) != 1 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func hasResults(fd *ast.FuncDecl, want []string) bool {
	have := map[string]bool{}
	if fd.Type.Results != nil {
		for _, f := range fd.Type.Results.List {
			for _, n := range f.Names {
				have[n.Name] = true
			}
		}
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

// paramNames returns the receiver and parameter names, "_" for unnamed.
func paramNames(fd *ast.FuncDecl) []string {
	var names []string
	for _, fl := range []*ast.FieldList{fd.Recv, fd.Type.Params} {
		if fl == nil {
			continue
		}
		for _, f := range fl.List {
			if len(f.Names) == 0 {
				names = append(names, "_")
			}
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
		}
	}
	return names
}
