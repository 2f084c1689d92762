package blacklist

import (
	"strings"

	"github.com/matrixgo/matrix/internal/self"
)

// The reason tokens returned by [Rules.Package] and [Rules.Func] when
// something must not be instrumented.
const (
	// ReasonStd is the reason for a standard library package (compiled
	// with -std) or one of the runtime paths that are never instrumented.
	ReasonStd = "std"
	// ReasonSelf is the reason for a package of this module (self.Module)
	// that is linked into user binaries.
	ReasonSelf = "self"
	// ReasonKeepPackage is the reason for a package excluded by a
	// -keeppackage rule.
	ReasonKeepPackage = "keeppackage"
	// ReasonNotAllowed is the reason for a package that no -allowpackage
	// rule matches when there are -allowpackage rules.
	ReasonNotAllowed = "not-allowed"
	// ReasonKeepFunc is the reason for a function excluded by a -keepfunc
	// rule.
	ReasonKeepFunc = "keepfunc"
)

// builtinStd lists the prefixes (element-wise, see the package
// documentation) that are never instrumented even when the caller does not
// say they are compiled with -std.
var builtinStd = []string{
	"internal",
	"runtime",
	"vendor/golang.org/x",
}

// builtinStdExact lists the packages that are never instrumented.
var builtinStdExact = []string{"unsafe", "C"}

// selfInstrumentable lists the subtrees of self.Module that are ordinary user
// code and may be instrumented.
var selfInstrumentable = []string{
	self.Module + "/examples",
	self.Module + "/integration/testdata",
}

// Package reports whether package path (compiled with -std iff std) may be instrumented at all, and if not, a short reason token ("std", "self", "keeppackage", "not-allowed").
//
// path is an import path; a TOOLEXEC_IMPORTPATH value such as
// "example.com/p [example.com/p.test]" may be passed as it is (the part from
// the first space on is ignored). Note that the compiler's -p flag is "main"
// for every main package, whereas TOOLEXEC_IMPORTPATH holds the real path.
//
// The checks run in this order: the built-in standard library exclusions
// ("std"), this module ("self"), then the file's rules. A package that holds
// an -allowfunc function is reported instrumentable even when it is kept or
// not allowed, so that the instrumenter visits it; [Rules.Func] then admits
// only that function.
func (r *Rules) Package(path string, std bool) (ok bool, reason string) {
	path = trimVariant(path)
	if std || isBuiltinStd(path) {
		return false, ReasonStd
	}
	if isSelf(path) {
		return false, ReasonSelf
	}
	if r == nil {
		return true, ""
	}
	if r.allowFuncPkgs[path] {
		return true, ""
	}
	return r.pkgRules(path)
}

// Func reports whether function fn of package pkg may be instrumented ("keepfunc" reason when not).
//
// fn is named as in the mapping file or a -keepfunc rule, without the
// package: "Run", "(*T).Method", "T.Method", "Run.func1", "init.0",
// "glob..func1", "(*List[...]).Push" (type parameter lists are normalised,
// so "(*List[T]).Push" works too, and so is a value receiver, so
// "(T).Method" works too). pkg is an import path as for [Rules.Package].
//
// Func applies the package rules too, so it is correct on its own for any
// package except one of the standard library that is not among the built-in
// runtime paths (Func does not know about -std): call [Rules.Package] first.
// An -allowfunc rule admits its function whatever the -keeppackage, -keepfunc
// and -allowpackage rules say; other reasons are "std", "self", "not-allowed"
// and "keeppackage".
func (r *Rules) Func(pkg, fn string) (ok bool, reason string) {
	pkg = trimVariant(pkg)
	if isBuiltinStd(pkg) {
		return false, ReasonStd
	}
	if isSelf(pkg) {
		return false, ReasonSelf
	}
	if r == nil {
		return true, ""
	}
	if norm, err := canonicalFunc(fn); err == "" {
		fn = norm
	}
	k := funcKey{pkg: pkg, fn: fn}
	if r.allowFuncSet[k] {
		return true, ""
	}
	if ok, reason := r.pkgRules(pkg); !ok {
		return false, reason
	}
	if r.keepFuncSet[k] {
		return false, ReasonKeepFunc
	}
	return true, ""
}

// pkgRules applies the file's package rules: the allow list, then the keep
// list.
func (r *Rules) pkgRules(path string) (bool, string) {
	if len(r.allowPackages) > 0 && !matchAny(r.allowPackages, path) {
		return false, ReasonNotAllowed
	}
	if matchAny(r.keepPackages, path) {
		return false, ReasonKeepPackage
	}
	return true, ""
}

// trimVariant drops a test variant suffix from a TOOLEXEC_IMPORTPATH value:
// "p [p.test]" becomes "p".
func trimVariant(path string) string {
	if i := strings.IndexByte(path, ' '); i >= 0 {
		return path[:i]
	}
	return path
}

func isBuiltinStd(path string) bool {
	for _, p := range builtinStdExact {
		if path == p {
			return true
		}
	}
	return matchAny(builtinStd, path)
}

func isSelf(path string) bool {
	return matchPrefix(self.Module, path) && !matchAny(selfInstrumentable, path)
}

func matchAny(prefixes []string, path string) bool {
	for _, p := range prefixes {
		if matchPrefix(p, path) {
			return true
		}
	}
	return false
}

// matchPrefix reports whether import path prefix matches path: "*" matches
// everything, a prefix ending in '/' is a plain string prefix, and any other
// prefix matches the package itself and the packages below it.
func matchPrefix(prefix, path string) bool {
	switch {
	case prefix == "*":
		return true
	case strings.HasSuffix(prefix, "/"):
		return strings.HasPrefix(path, prefix)
	default:
		return strings.HasPrefix(path, prefix) && (len(path) == len(prefix) || path[len(prefix)] == '/')
	}
}
