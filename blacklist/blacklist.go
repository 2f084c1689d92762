package blacklist

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/matrixgo/matrix/internal/self"
)

// AutoTracerPkg is the tracer package, with every sink, that zero-code
// mode links into main packages by default (with the OTLP sink):
// importing it starts the tracers from the environment.
const AutoTracerPkg = self.Module + "/tracer/auto"

// LocalTracerPkg is the tracer package zero-code mode links when the
// build leaves the OTLP sink out: the same without it.
const LocalTracerPkg = AutoTracerPkg + "/local"

// The directives of the blacklist format.
const (
	dirKeepPackage  = "-keeppackage"
	dirKeepFunc     = "-keepfunc"
	dirAllowPackage = "-allowpackage"
	dirAllowFunc    = "-allowfunc"
)

// Rules is a parsed blacklist together with the built-in rules. The zero
// value and a nil *Rules hold only the built-in rules, like [Default]. A Rules
// is immutable once built and safe for concurrent use.
type Rules struct {
	keepPackages  []string  // sorted, unique
	allowPackages []string  // sorted, unique
	keepFuncs     []funcKey // sorted, unique
	allowFuncs    []funcKey // sorted, unique

	// Indexes derived from the lists above.
	keepFuncSet   map[funcKey]bool
	allowFuncSet  map[funcKey]bool
	allowFuncPkgs map[string]bool
}

// funcKey identifies one function: its package path and its normalised name.
type funcKey struct {
	pkg, fn string
}

func (k funcKey) less(o funcKey) bool {
	if k.pkg != o.pkg {
		return k.pkg < o.pkg
	}
	return k.fn < o.fn
}

// String renders the key in the file format, escaping dots in the last
// element of the package path so that it splits back the same way.
func (k funcKey) String() string {
	return escapePkg(k.pkg) + "." + k.fn
}

// SyntaxError describes one bad line of a blacklist.
type SyntaxError struct {
	File string // the name given to Parse, or the path given to Load
	Line int    // 1-based line number
	Msg  string // what is wrong
}

// Error returns "<file>:<line>: <message>".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Parse parses blacklist data; name is used in error messages.
//
// On error, Parse returns nil rules and every syntax error of data, each a
// *SyntaxError, joined with errors.Join.
func Parse(name string, data []byte) (*Rules, error) {
	var (
		r    Rules
		errs []error
	)
	text := strings.TrimPrefix(string(data), "\ufeff")
	for i, line := range strings.Split(text, "\n") {
		if msg := r.parseLine(line); msg != "" {
			errs = append(errs, &SyntaxError{File: name, Line: i + 1, Msg: msg})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	r.finish()
	return &r, nil
}

// Load reads and parses a file. A missing file is not an error when optional is true: it yields Default().
func Load(path string, optional bool) (*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		return nil, fmt.Errorf("blacklist: %w", err)
	}
	return Parse(path, data)
}

// Default returns the rules with only the built-in defaults.
func Default() *Rules {
	r := new(Rules)
	r.finish()
	return r
}

// String renders the rules (without the built-in ones) in canonical form: one
// directive per line, -keeppackage, -keepfunc, -allowpackage and -allowfunc
// lines in that order, each group sorted, without duplicates or comments.
// The result parses back to equal rules. Default rules render as "".
func (r *Rules) String() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.keepPackages {
		b.WriteString(dirKeepPackage + " " + p + "\n")
	}
	for _, k := range r.keepFuncs {
		b.WriteString(dirKeepFunc + " " + k.String() + "\n")
	}
	for _, p := range r.allowPackages {
		b.WriteString(dirAllowPackage + " " + p + "\n")
	}
	for _, k := range r.allowFuncs {
		b.WriteString(dirAllowFunc + " " + k.String() + "\n")
	}
	return b.String()
}

// parseLine parses one line into r and returns an error message, or "".
func (r *Rules) parseLine(line string) string {
	line = strings.TrimSpace(stripComment(strings.TrimSpace(line)))
	switch {
	case line == "":
		return ""
	case line[0] == '[' || line[0] == ']':
		return checkSection(line)
	}
	fields := strings.Fields(line)
	dir, args := fields[0], fields[1:]
	var what string
	switch dir {
	case dirKeepPackage, dirAllowPackage:
		what = "an import path prefix"
	case dirKeepFunc, dirAllowFunc:
		what = "a function (<pkgpath>.<Func> or <pkgpath>.(*T).Method)"
	default:
		return fmt.Sprintf("unknown directive %q; want %s, %s, %s or %s",
			dir, dirKeepPackage, dirKeepFunc, dirAllowPackage, dirAllowFunc)
	}
	switch {
	case len(args) == 0:
		return fmt.Sprintf("%s: missing argument; want %s", dir, what)
	case len(args) > 1:
		msg := fmt.Sprintf("%s: want one argument, got %d: %s", dir, len(args), quoteAll(args))
		if (dir == dirKeepFunc || dir == dirAllowFunc) && strings.Count(args[0], "[") > strings.Count(args[0], "]") {
			msg += " (write type parameter lists without spaces, e.g. [K,V], or as [...])"
		}
		return msg
	}
	arg := args[0]
	switch dir {
	case dirKeepPackage, dirAllowPackage:
		if err := checkPrefix(arg); err != "" {
			return fmt.Sprintf("%s: bad import path prefix %q: %s", dir, arg, err)
		}
		if dir == dirKeepPackage {
			r.keepPackages = append(r.keepPackages, arg)
		} else {
			r.allowPackages = append(r.allowPackages, arg)
		}
	default:
		k, err := parseFunc(arg)
		if err != "" {
			return fmt.Sprintf("%s: bad function %q: %s", dir, arg, err)
		}
		if dir == dirKeepFunc {
			r.keepFuncs = append(r.keepFuncs, k)
		} else {
			r.allowFuncs = append(r.allowFuncs, k)
		}
	}
	return ""
}

// stripComment removes a comment: a '#' at the start of line or after white
// space, and everything after it.
func stripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] != '#' {
			continue
		}
		if i == 0 {
			return ""
		}
		if r, _ := utf8.DecodeLastRuneInString(line[:i]); unicode.IsSpace(r) {
			return line[:i]
		}
	}
	return line
}

// checkSection checks a section header line, which is otherwise ignored.
func checkSection(line string) string {
	if line[0] != '[' || line[len(line)-1] != ']' || len(line) < 2 {
		return fmt.Sprintf("malformed section header %q; want [name]", line)
	}
	name := strings.TrimSpace(line[1 : len(line)-1])
	switch {
	case name == "":
		return "empty section name"
	case strings.ContainsAny(name, "[]"):
		return fmt.Sprintf("malformed section header %q; want [name]", line)
	}
	return ""
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// finish sorts and deduplicates the rule lists and builds the indexes.
func (r *Rules) finish() {
	r.keepPackages = uniqStrings(r.keepPackages)
	r.allowPackages = uniqStrings(r.allowPackages)
	r.keepFuncs = uniqFuncs(r.keepFuncs)
	r.allowFuncs = uniqFuncs(r.allowFuncs)
	r.keepFuncSet = make(map[funcKey]bool, len(r.keepFuncs))
	for _, k := range r.keepFuncs {
		r.keepFuncSet[k] = true
	}
	r.allowFuncSet = make(map[funcKey]bool, len(r.allowFuncs))
	r.allowFuncPkgs = make(map[string]bool)
	for _, k := range r.allowFuncs {
		r.allowFuncSet[k] = true
		r.allowFuncPkgs[k.pkg] = true
	}
}

func uniqStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	sort.Strings(s)
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

func uniqFuncs(s []funcKey) []funcKey {
	if len(s) == 0 {
		return nil
	}
	sort.Slice(s, func(i, j int) bool { return s[i].less(s[j]) })
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
