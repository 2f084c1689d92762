// Package blacklist parses and matches the rules that tell the matrixexec
// instrumenter (a `go build -toolexec` wrapper) what it must not instrument.
//
// # File format
//
// A blacklist is a UTF-8 text file with one directive per line. Every line is
// trimmed of surrounding white space first (so CRLF files work, and a leading
// byte order mark is ignored). Then:
//
//	# a comment                     whole-line comment
//	[section]                       section header: ignored (Tencent Matrix compatibility)
//	-keeppackage <prefix>           do not instrument packages matching prefix
//	-keepfunc <pkgpath>.<func>      do not instrument that one function
//	-allowpackage <prefix>          allow list: see below
//	-allowfunc <pkgpath>.<func>     force that one function in: see below
//
// A '#' that follows white space starts a comment that runs to the end of the
// line, so "-keeppackage example.com/gen # generated code" is a valid line.
// Blank lines are ignored. Directives are case-sensitive and take exactly one
// argument.
//
// Anything else is an error: an unknown directive (Matrix's -keepclass
// included), a missing or extra argument, an import path with characters
// Go does not allow in import paths (anything but ASCII letters, digits and
// "-._~+/") or with an empty element or one that starts or ends with a dot, a
// malformed function name, or a section header that is not "[name]" with a
// non-empty name. Parse does not stop at the first error: it reports every
// bad line, each as a *SyntaxError rendered "<file>:<line>: <message>", all
// joined with errors.Join, and returns no rules.
//
// # Package prefixes
//
// The argument of -keeppackage and -allowpackage is an import path prefix:
//
//   - "a/b" matches package "a/b" and every package below it ("a/b/c",
//     "a/b/c/d"), but not "a/bc": the prefix matches whole path elements;
//   - "a/b/" (with a trailing slash) is a plain string prefix, the form Matrix
//     files use: it matches "a/b/c" but not "a/b" itself;
//   - "*" alone matches every package.
//
// There is no other wildcard: write "a/b", not "a/b/...". An external test
// package ("a/b_test") has its own path and needs its own rule.
//
// # Function names
//
// The argument of -keepfunc and -allowfunc is a package path and a function
// name joined by a dot, in the form the instrumenter writes to its mapping
// file (and the Go runtime prints in stack traces), so any name copied from
// the map or a stack trace works:
//
//	example.com/a/b.Run               function
//	example.com/a/b.Map[...]          generic function (also Map[T])
//	example.com/a/b.(*T).Method       method with a pointer receiver
//	example.com/a/b.T.Method          method with a value receiver (also (T).Method)
//	example.com/a/b.(*List[T]).Push   method of a generic type (also List[T].Len)
//	example.com/a/b.Run.func1         closure inside Run (Run.func1.2 when nested)
//	example.com/a/b.init.0            the first init function (init.0.func1: its closure)
//	example.com/a/b.glob..func2       the second function literal in a package-level
//	                                  variable (glob..func2.1: a closure inside it)
//	main.run                          function run of package main
//
// The package is split from the function at the first '.' of the last
// '/'-separated element of the package path (slashes inside a receiver's type
// parameter list do not count): "example.com/a/b.(*T).M" is package
// "example.com/a/b", function "(*T).M". A package path whose last element
// contains a dot ("gopkg.in/yaml.v3") is written with that dot escaped as
// "%2e", as the Go linker does: "gopkg.in/yaml%2ev3.Marshal".
//
// Type parameter lists are normalised to "[...]" both in rules and in the
// names passed to [Rules.Func], so the rule "(*List[T]).Push" matches a method
// the instrumenter names "(*List[...]).Push", "(*List[T]).Push" or
// "(*List[E]).Push". A type parameter list must not contain spaces (write
// "Map[K,V].Get" or "Map[...].Get"). Likewise a value receiver may be
// written in parentheses, "(T).Method", and is normalised to the map's
// "T.Method".
//
// A function rule names exactly one function: keeping "pkg.Run" does not keep
// the closures "pkg.Run.func1", … declared inside it; list them too if needed.
//
// # Allow list
//
// When at least one -allowpackage line exists, only packages that match an
// -allowpackage prefix are instrumented, and the keep rules still apply within
// them. -allowfunc names a function that is instrumented whatever the
// -keeppackage, -keepfunc and -allowpackage rules say; -allowfunc lines alone
// do not turn the package allow list on.
//
// # Built-in rules
//
// Some packages are never instrumented, whatever the file says (neither
// -allowpackage nor -allowfunc can bring them in):
//
//   - the standard library, i.e. every package compiled with -std. The
//     recorder that instrumented code calls into depends on the runtime and
//     parts of the standard library, so instrumenting them would recurse; an
//     -allowpackage line naming a standard library path therefore has no
//     effect. For safety, "runtime", "runtime/...", "internal/...", "unsafe",
//     "C" and the vendored "vendor/golang.org/x/..." are excluded even when the
//     caller does not report them as -std;
//   - this module (self.Module) and every package below it — the recorder
//     (beat), the tracers and everything else that is linked into user
//     binaries — except its "examples" and "integration/testdata" subtrees,
//     which are ordinary user code used to demonstrate and test the tool.
//
// # Canonical form
//
// [Rules.String] renders rules in a canonical form (sorted, without
// duplicates, comments or sections) that parses back to equal rules; it is
// suitable for hashing into the compiler's tool id, so that an edit that
// changes the rules (and only such an edit) invalidates the build cache.
package blacklist
