package otlp

import (
	"path"
	"strings"
)

// codeFilePath returns a frame's file as code.file.path: free of the build
// machine's directories, so that the same code has the same path wherever
// it was built. fn is the function whose package the file belongs to.
//
//   - A file in the module cache is named from it, by module, version and
//     path: github.com/go-chi/chi/v5@v5.2.1/mux.go.
//   - Any other file is named relative to the root its package's import
//     path starts from, as far as the two agree: the directory's trailing
//     elements that equal the import path's. A package of the standard
//     library or of a GOPATH-like tree gives its whole import path
//     (net/http/server.go); a package of a module checked out elsewhere
//     gives its path in the module (examples/shop/main.go).
//   - A file whose directory shares nothing with its package's import path
//     (a //line directive, generated code) is left as it is.
//
// A path that is already relative (a -trimpath build) is left as it is.
func codeFilePath(fn, file string) string {
	f := strings.ReplaceAll(file, "\\", "/")
	if i := strings.LastIndex(f, "/pkg/mod/"); i >= 0 {
		return f[i+len("/pkg/mod/"):]
	}
	if !strings.HasPrefix(f, "/") && !(len(f) > 2 && f[1] == ':') {
		return file
	}
	pkg := funcPackage(fn)
	if pkg == "" {
		return file
	}
	dir, base := path.Split(f)
	dirs := strings.Split(strings.Trim(dir, "/"), "/")
	elems := strings.Split(pkg, "/")
	n := 0
	for n < len(dirs) && n < len(elems) && dirs[len(dirs)-1-n] == elems[len(elems)-1-n] {
		n++
	}
	if n == 0 {
		return file
	}
	return strings.Join(elems[len(elems)-n:], "/") + "/" + base
}

// funcPackage returns the import path of a function's package from its
// name as the runtime and reports give it (net/http.(*conn).serve,
// example.com/shop.F[...].func1), or "".
func funcPackage(fn string) string {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i]
	}
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}
