package rewrite

import (
	"go/ast"
	"go/token"
	"strings"
)

// skippedPragmas are the compiler directives under which a hook must not be
// added: the function runs where a call, a stack check, a write barrier or a
// race annotation is not allowed, or its identity matters to someone else.
var skippedPragmas = map[string]bool{
	"go:nosplit":             true,
	"go:systemstack":         true,
	"go:nowritebarrier":      true,
	"go:nowritebarrierrec":   true,
	"go:yeswritebarrierrec":  true,
	"go:norace":              true,
	"go:uintptrescapes":      true,
	"go:uintptrkeepalive":    true,
	"go:linkname":            true,
	"go:cgo_unsafe_args":     true,
	"go:wasmimport":          true,
	"go:wasmexport":          true,
	"go:nocheckptr":          true,
	"go:registerparams":      true,
	"go:cgo_export_static":   true,
	"go:cgo_export_dynamic":  true,
	"go:notinheap":           true,
	"go:nointerface":         true,
	"go:noescape":            true,
	"go:build":               false,
	"go:generate":            false,
	"go:noinline":            false,
	"go:embed":               false,
	"go:fix":                 false,
	"go:debug":               false,
	"go:cgo_import_dynamic":  true,
	"go:cgo_import_static":   true,
	"go:cgo_ldflag":          true,
	"go:cgo_dynamic_linker":  true,
	"go:wasmimport_optional": true,
}

// skipPragma returns the first directive in a function's doc comment that
// excludes it, without the leading "//", or "".
func skipPragma(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	for _, c := range doc.List {
		if !strings.HasPrefix(c.Text, "//go:") && !strings.HasPrefix(c.Text, "//export ") {
			continue
		}
		if strings.HasPrefix(c.Text, "//export ") {
			return "export"
		}
		name, _, _ := strings.Cut(c.Text[2:], " ")
		if skip, known := skippedPragmas[name]; skip || !known {
			// An unknown directive belongs to a newer toolchain: leave
			// the function alone rather than guess.
			return name
		}
	}
	return ""
}

// linknamedNames returns the local names named by //go:linkname directives
// anywhere in the file: such functions are part of somebody else's ABI.
func linknamedNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if rest, ok := strings.CutPrefix(c.Text, "//go:linkname "); ok {
				if fields := strings.Fields(rest); len(fields) > 0 {
					names[fields[0]] = true
				}
			}
		}
	}
	return names
}

// isTrivial reports whether a body is a plain accessor: a single return of
// a field, variable or constant, or a single assignment of one to a field.
func isTrivial(body *ast.BlockStmt) bool {
	if len(body.List) != 1 {
		return len(body.List) == 0
	}
	switch s := body.List[0].(type) {
	case *ast.ReturnStmt:
		if len(s.Results) > 1 {
			return false
		}
		return len(s.Results) == 0 || isPlainValue(s.Results[0])
	case *ast.AssignStmt:
		if len(s.Lhs) != 1 || len(s.Rhs) != 1 || s.Tok != token.ASSIGN {
			return false
		}
		_, field := s.Lhs[0].(*ast.SelectorExpr)
		return field && isPlainValue(s.Rhs[0])
	}
	return false
}

func isPlainValue(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident, *ast.BasicLit:
		return true
	case *ast.SelectorExpr:
		return isPlainValue(e.X)
	case *ast.StarExpr:
		return isPlainValue(e.X)
	case *ast.UnaryExpr:
		return e.Op == token.AND && isPlainValue(e.X)
	}
	return false
}

// packageInfo is what the filters know about the package without type
// checking it: its type names (so conversions are not taken for calls) and
// its function declarations (so the inlining estimate can follow calls).
type packageInfo struct {
	types   map[string]bool
	funcs   map[string]*ast.FuncDecl
	methods map[string][]*ast.FuncDecl // by method name
	typed   *typedInfo                 // nil unless the package was type-checked
}

func collectPackageInfo(files []*ast.File) *packageInfo {
	pi := &packageInfo{types: map[string]bool{}, funcs: map[string]*ast.FuncDecl{}, methods: map[string][]*ast.FuncDecl{}}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, s := range d.Specs {
					pi.types[s.(*ast.TypeSpec).Name.Name] = true
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					pi.funcs[d.Name.Name] = d
				} else {
					pi.methods[d.Name.Name] = append(pi.methods[d.Name.Name], d)
				}
			}
		}
	}
	return pi
}

// predeclaredTypes are the universe-scope type names.
var predeclaredTypes = map[string]bool{
	"bool": true, "byte": true, "complex64": true, "complex128": true, "error": true,
	"float32": true, "float64": true, "int": true, "int8": true, "int16": true,
	"int32": true, "int64": true, "rune": true, "string": true, "uint": true,
	"uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true,
	"any": true, "comparable": true,
}

// builtinFuncs are the universe-scope functions that do not call user code.
var builtinFuncs = map[string]bool{
	"append": true, "cap": true, "clear": true, "close": true, "complex": true,
	"copy": true, "delete": true, "imag": true, "len": true, "make": true,
	"max": true, "min": true, "new": true, "panic": true, "print": true,
	"println": true, "real": true, "recover": true,
}

// callKind classifies a call expression: from its resolved callee if the
// package was type-checked, else syntactically.
type callKind int

const (
	realCall callKind = iota
	conversion
	builtinCall
)

func classifyCall(c *ast.CallExpr, pi *packageInfo) callKind {
	if pi.typed != nil {
		if kind, ok := pi.typed.classify(c); ok {
			return kind
		}
	}
	fun := c.Fun
	for {
		p, ok := fun.(*ast.ParenExpr)
		if !ok {
			break
		}
		fun = p.X
	}
	switch f := fun.(type) {
	case *ast.ArrayType, *ast.MapType, *ast.ChanType, *ast.FuncType, *ast.InterfaceType, *ast.StructType, *ast.StarExpr:
		return conversion
	case *ast.IndexExpr:
		if id, ok := f.X.(*ast.Ident); ok && pi.types[id.Name] {
			return conversion
		}
	case *ast.IndexListExpr:
		if id, ok := f.X.(*ast.Ident); ok && pi.types[id.Name] {
			return conversion
		}
	case *ast.Ident:
		switch {
		case pi.types[f.Name] || predeclaredTypes[f.Name]:
			return conversion
		case builtinFuncs[f.Name] && pi.funcs[f.Name] == nil:
			return builtinCall
		}
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && x.Name == "unsafe" {
			return builtinCall
		}
	}
	return realCall
}

// hasCalls reports whether a body calls a function, not counting the bodies
// of nested function literals (they are functions of their own).
func hasCalls(body *ast.BlockStmt, pi *packageInfo) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if classifyCall(n, pi) == realCall {
				found = true
				return false
			}
		}
		return true
	})
	return found
}
