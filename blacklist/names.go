package blacklist

import (
	"fmt"
	"strings"
	"unicode"
)

// checkPrefix checks the argument of -keeppackage or -allowpackage and
// returns what is wrong with it, or "".
func checkPrefix(p string) string {
	if p == "*" {
		return ""
	}
	if p == "..." || strings.HasSuffix(p, "/...") {
		base := strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		if base == "" {
			return `use "*" to match every package`
		}
		return fmt.Sprintf("use %q to match a package and every package below it", base)
	}
	return checkImportPath(strings.TrimSuffix(p, "/"))
}

// checkImportPath reports what makes p an invalid import path, or "". It
// follows the rules of golang.org/x/mod/module.CheckImportPath for
// characters and path elements.
func checkImportPath(p string) string {
	if p == "" {
		return "empty import path"
	}
	for _, c := range p {
		if !importPathChar(c) {
			return fmt.Sprintf("invalid character %q in import path", c)
		}
	}
	for _, elem := range strings.Split(p, "/") {
		switch {
		case elem == "":
			return "empty path element"
		case elem[0] == '.':
			return fmt.Sprintf("leading dot in path element %q", elem)
		case elem[len(elem)-1] == '.':
			return fmt.Sprintf("trailing dot in path element %q", elem)
		}
	}
	return ""
}

func importPathChar(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// parseFunc parses the argument of -keepfunc or -allowfunc. It returns the
// function's key, or what is wrong with the argument.
func parseFunc(s string) (funcKey, string) {
	// The package path ends at the first '.' of its last '/'-separated
	// element. A package path never contains '(' or '[', so slashes after
	// one of them (in a type parameter list) are not path separators.
	end := strings.IndexAny(s, "([")
	if end < 0 {
		end = len(s)
	}
	start := strings.LastIndexByte(s[:end], '/') + 1
	dot := strings.IndexByte(s[start:], '.')
	if dot < 0 {
		return funcKey{}, "missing function name; want <pkgpath>.<Func>, <pkgpath>.(*T).Method or <pkgpath>.(T).Method"
	}
	dot += start
	pkg, fn := s[:dot], s[dot+1:]
	if pkg == "" || strings.ContainsAny(pkg, "([") {
		return funcKey{}, "missing package path; want <pkgpath>.<Func>"
	}
	pkg = strings.NewReplacer("%2e", ".", "%2E", ".").Replace(pkg)
	if err := checkImportPath(pkg); err != "" {
		return funcKey{}, "package path: " + err
	}
	fn, err := normalizeTypeParams(fn)
	if err != "" {
		return funcKey{}, err
	}
	if err := checkFuncName(fn); err != "" {
		return funcKey{}, err
	}
	return funcKey{pkg: pkg, fn: dropValueReceiverParens(fn)}, ""
}

// canonicalFunc returns a function name in the form the instrumenter
// writes to the mapping file (and the compiler uses in symbol names): type
// parameter lists normalised to "[...]", and a value receiver without
// parentheses ("(T).M" becomes "T.M", "(L[T]).M" becomes "L[...].M"). It
// reports unbalanced brackets and empty lists.
func canonicalFunc(fn string) (string, string) {
	fn, err := normalizeTypeParams(fn)
	if err != "" {
		return fn, err
	}
	return dropValueReceiverParens(fn), ""
}

// dropValueReceiverParens turns "(T).M…" into "T.M…"; other names are
// returned as they are.
func dropValueReceiverParens(fn string) string {
	if !strings.HasPrefix(fn, "(") || strings.HasPrefix(fn, "(*") {
		return fn
	}
	end := strings.IndexByte(fn, ')')
	if end < 0 {
		return fn
	}
	return fn[1:end] + fn[end+1:]
}

// escapePkg escapes the dots in the last element of a package path as "%2e"
// (as the Go linker does in symbol names), so that parseFunc splits
// escapePkg(pkg)+"."+fn back into pkg and fn.
func escapePkg(pkg string) string {
	i := strings.LastIndexByte(pkg, '/') + 1
	if !strings.Contains(pkg[i:], ".") {
		return pkg
	}
	return pkg[:i] + strings.ReplaceAll(pkg[i:], ".", "%2e")
}

// normalizeTypeParams replaces every outermost bracketed list in fn by
// "[...]": "(*List[T]).Push" becomes "(*List[...]).Push". It reports
// unbalanced brackets and empty lists.
func normalizeTypeParams(fn string) (string, string) {
	if !strings.ContainsAny(fn, "[]") {
		return fn, ""
	}
	var b strings.Builder
	depth, open := 0, 0
	for i := 0; i < len(fn); i++ {
		switch c := fn[i]; c {
		case '[':
			if depth == 0 {
				b.WriteString("[...]")
				open = i
			}
			depth++
		case ']':
			switch {
			case depth == 0:
				return fn, "unbalanced ']'"
			case depth == 1 && open == i-1:
				return fn, "empty type parameter list []"
			}
			depth--
		default:
			if depth == 0 {
				b.WriteByte(c)
			}
		}
	}
	if depth != 0 {
		return fn, "unbalanced '['"
	}
	return b.String(), ""
}

// checkFuncName checks a normalised function name: Func, Func[...],
// T.Method, (T).Method, (*T).Method, T[...].Method, (T[...]).Method,
// (*T[...]).Method, init.0 or glob..func1 (a function literal in a
// package-level declaration), followed by any number of closure suffixes
// (".func1", ".1", ".gowrap2").
func checkFuncName(fn string) string {
	if fn == "" {
		return "missing function name"
	}
	var rest string
	if lit, ok := strings.CutPrefix(fn, globPrefix); ok {
		var name string
		name, rest = splitName(lit)
		if n, ok := strings.CutPrefix(name, "func"); !ok || !isDigits(n) {
			return fmt.Sprintf("bad package-level function literal %q; want %sfunc1, %sfunc2, …", globPrefix+name, globPrefix, globPrefix)
		}
	} else if fn[0] == '(' {
		end := strings.IndexByte(fn, ')')
		if end < 0 {
			return "missing ')' after receiver"
		}
		recv := strings.TrimSuffix(strings.TrimPrefix(fn[1:end], "*"), "[...]")
		if !isIdent(recv) {
			return fmt.Sprintf("bad receiver %q; want (T), (*T), (T[...]) or (*T[...])", fn[:end+1])
		}
		method, ok := strings.CutPrefix(fn[end+1:], ".")
		if !ok || method == "" {
			return fmt.Sprintf("missing method name after receiver %q", fn[:end+1])
		}
		var name string
		name, rest = splitName(method)
		// A method may have type parameters of its own (Go 1.27 on).
		if !isIdent(strings.TrimSuffix(trimRanges(name), "[...]")) {
			return fmt.Sprintf("bad method name %q", name)
		}
	} else {
		var name string
		name, rest = splitName(fn)
		if !isIdent(strings.TrimSuffix(trimRanges(name), "[...]")) {
			return fmt.Sprintf("bad function name %q", name)
		}
	}
	// Closure suffixes; or, first, the method of a value receiver written
	// without parentheses (T.M, T.M[...]).
	for i := 0; rest != ""; i++ {
		var s string
		s, rest = splitName(rest[1:])
		if s = trimRanges(s); i == 0 {
			s = strings.TrimSuffix(s, "[...]")
		}
		if !isIdent(s) && !isDigits(s) {
			return fmt.Sprintf("bad closure suffix %q in %q; want e.g. F.func1", s, fn)
		}
	}
	return ""
}

// trimRanges strips the "-range1"-like suffixes that name the body of a
// range over a function, which the compiler makes a function literal of:
// F-range1, F.func2-range1-range2.
func trimRanges(s string) string {
	for {
		i := strings.LastIndex(s, "-range")
		if i <= 0 || !isDigits(s[i+len("-range"):]) {
			return s
		}
		s = s[:i]
	}
}

// globPrefix starts the names the compiler gives function literals that are
// not inside a function (in package-level variable initialisers):
// "glob..func1", "glob..func2", ….
const globPrefix = "glob.."

// splitName splits s at its first '.' outside a normalised type parameter
// list "[...]".
func splitName(s string) (name, rest string) {
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "[...]") {
			i += len("[...]") - 1
		} else if s[i] == '.' {
			return s[:i], s[i:]
		}
	}
	return s, ""
}

// isIdent reports whether s is a Go identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(unicode.IsLetter(c) || c == '_' || i > 0 && unicode.IsDigit(c)) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
