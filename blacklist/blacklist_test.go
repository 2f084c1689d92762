package blacklist

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/self"
)

func mustParse(t testing.TB, src string) *Rules {
	t.Helper()
	r, err := Parse("test.blacklist", []byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return r
}

func TestParseOK(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", ""},
		{"blank and comments", "\n   \n# comment\n\t# indented comment\n", ""},
		{"sections", "[package]\n[ keep ]\n[a#b]\n[x] # trailing comment\n", ""},
		{"keeppackage", "-keeppackage example.com/a/b\n", "-keeppackage example.com/a/b\n"},
		{"trailing slash kept", "-keeppackage example.com/a/\n", "-keeppackage example.com/a/\n"},
		{"star", "-keeppackage *\n", "-keeppackage *\n"},
		{"trimmed and CRLF", "  -keeppackage   a/b  \r\n\t-keepfunc\ta/b.F\t\r\n", "-keeppackage a/b\n-keepfunc a/b.F\n"},
		{"BOM", "\ufeff-keeppackage a\n", "-keeppackage a\n"},
		{"no final newline", "-keeppackage a", "-keeppackage a\n"},
		{"trailing comment", "-keeppackage a/b # generated\n-keepfunc a.F\t#why\n", "-keeppackage a/b\n-keepfunc a.F\n"},
		{"hash inside path is not a comment", "[s]\n-keeppackage a # b#c\n", "-keeppackage a\n"},
		{"sorted and deduplicated",
			"-allowfunc b.G\n-allowpackage z\n-keeppackage b\n-keeppackage a\n-keeppackage b\n-keepfunc b.F\n-keepfunc a.F\n-allowpackage y\n",
			"-keeppackage a\n-keeppackage b\n-keepfunc a.F\n-keepfunc b.F\n-allowpackage y\n-allowpackage z\n-allowfunc b.G\n"},
		{"func forms",
			"-keepfunc main.run\n-keepfunc example.com/a/b.(*T).M\n-keepfunc example.com/a/b.(T).M\n-keepfunc example.com/a/b.F.func1\n-keepfunc a.F.func1.2\n-keepfunc a.init.0\n-keepfunc a._\n-keepfunc a.Ünïcode\n",
			"-keepfunc a.F.func1.2\n-keepfunc a._\n-keepfunc a.init.0\n-keepfunc a.Ünïcode\n-keepfunc example.com/a/b.(*T).M\n-keepfunc example.com/a/b.F.func1\n-keepfunc example.com/a/b.T.M\n-keepfunc main.run\n"},
		{"value receivers as in the map",
			"-keepfunc a.(T).M\n-keepfunc a.T.M\n-keepfunc a.(L[T]).M.func1\n-keepfunc a.L[...].M.func1\n",
			"-keepfunc a.L[...].M.func1\n-keepfunc a.T.M\n"},
		{"package-level function literals",
			"-keepfunc example.com/p.glob..func2\n-keepfunc main.glob..func1.1\n-allowfunc a.glob..func10.func3\n",
			"-keepfunc example.com/p.glob..func2\n-keepfunc main.glob..func1.1\n-allowfunc a.glob..func10.func3\n"},
		{"generic receivers normalised",
			"-keepfunc a.(*List[T]).Push\n-keepfunc a.(Map[K,V]).Get\n-keepfunc a.(*List[...]).Pop\n-keepfunc a.(*N[T[U]]).M.func1\n-keepfunc a/b.(*L[example.com/x.T]).M\n-keepfunc a.Map[T]\n",
			"-keepfunc a.(*List[...]).Pop\n-keepfunc a.(*List[...]).Push\n-keepfunc a.(*N[...]).M.func1\n-keepfunc a.Map[...]\n-keepfunc a.Map[...].Get\n-keepfunc a/b.(*L[...]).M\n"},
		{"dotted last element escaped",
			"-keepfunc gopkg.in/yaml%2ev3.Marshal\n-keepfunc example%2Ecom.F\n",
			"-keepfunc example%2ecom.F\n-keepfunc gopkg.in/yaml%2ev3.Marshal\n"},
		{"dots before the last element", "-keepfunc example.com/a.F\n", "-keepfunc example.com/a.F\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, tt.src)
			if got := r.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestParseFuncSplit(t *testing.T) {
	tests := []struct{ arg, pkg, fn string }{
		{"example.com/a/b.(*T).M", "example.com/a/b", "(*T).M"},
		{"example.com/a/b.(T).M", "example.com/a/b", "T.M"},
		{"example.com/a/b.T.M", "example.com/a/b", "T.M"},
		{"example.com/a/b.(L[T]).M", "example.com/a/b", "L[...].M"},
		{"example.com/a/b.glob..func2", "example.com/a/b", "glob..func2"},
		{"main.glob..func1", "main", "glob..func1"},
		{"gopkg.in/yaml%2ev3.glob..func1.2", "gopkg.in/yaml.v3", "glob..func1.2"},
		{"main.run", "main", "run"},
		{"example.com/a/b.F.func1", "example.com/a/b", "F.func1"},
		{"a/b.(*L[x/y.T]).M", "a/b", "(*L[...]).M"},
		{"gopkg.in/yaml%2ev3.Marshal", "gopkg.in/yaml.v3", "Marshal"},
		{"example.com.F", "example", "com.F"}, // first dot of the last element
	}
	for _, tt := range tests {
		k, err := parseFunc(tt.arg)
		if err != "" || k.pkg != tt.pkg || k.fn != tt.fn {
			t.Errorf("parseFunc(%q) = %q, %q, %q; want %q, %q", tt.arg, k.pkg, k.fn, err, tt.pkg, tt.fn)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const unknown = `; want -keeppackage, -keepfunc, -allowpackage or -allowfunc`
	tests := []struct {
		src  string
		want string // the whole error text
	}{
		{"# ok\n[s]\n-keepclass a.b.C\n", `matrix.blacklist:3: unknown directive "-keepclass"` + unknown},
		{"example.com/a\n", `matrix.blacklist:1: unknown directive "example.com/a"` + unknown},
		{"-KEEPPACKAGE a\n", `matrix.blacklist:1: unknown directive "-KEEPPACKAGE"` + unknown},
		{"-keeppackage#a\n", `matrix.blacklist:1: unknown directive "-keeppackage#a"` + unknown},
		{"\n\n-keeppackage\n", `matrix.blacklist:3: -keeppackage: missing argument; want an import path prefix`},
		{"-allowpackage # comment\n", `matrix.blacklist:1: -allowpackage: missing argument; want an import path prefix`},
		{"-keepfunc\n", `matrix.blacklist:1: -keepfunc: missing argument; want a function (<pkgpath>.<Func> or <pkgpath>.(*T).Method)`},
		{"-allowfunc\n", `matrix.blacklist:1: -allowfunc: missing argument; want a function (<pkgpath>.<Func> or <pkgpath>.(*T).Method)`},
		{"-keeppackage a b\n", `matrix.blacklist:1: -keeppackage: want one argument, got 2: "a" "b"`},
		{"-keepfunc a.F b.G c.H\n", `matrix.blacklist:1: -keepfunc: want one argument, got 3: "a.F" "b.G" "c.H"`},
		{"-keepfunc a.(Map[K, V]).Get\n", `matrix.blacklist:1: -keepfunc: want one argument, got 2: "a.(Map[K," "V]).Get" (write type parameter lists without spaces, e.g. [K,V], or as [...])`},
		{"-keeppackage a//b\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "a//b": empty path element`},
		{"-keeppackage /a\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "/a": empty path element`},
		{"-keeppackage /\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "/": empty import path`},
		{"-keeppackage a//\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "a//": empty path element`},
		{"-keeppackage a/*\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "a/*": invalid character '*' in import path`},
		{"-keeppackage **\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "**": invalid character '*' in import path`},
		{"-allowpackage a\\b\n", `matrix.blacklist:1: -allowpackage: bad import path prefix "a\\b": invalid character '\\' in import path`},
		{"-keeppackage a/b...\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "a/b...": trailing dot in path element "b..."`},
		{"-keeppackage a/./b\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "a/./b": leading dot in path element "."`},
		{"-keeppackage ../a\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "../a": leading dot in path element ".."`},
		{"-keeppackage a/b/...\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "a/b/...": use "a/b" to match a package and every package below it`},
		{"-keeppackage ...\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "...": use "*" to match every package`},
		{"-keeppackage ünï/code\n", `matrix.blacklist:1: -keeppackage: bad import path prefix "ünï/code": invalid character 'ü' in import path`},
		{"-keepfunc a/b\n", `matrix.blacklist:1: -keepfunc: bad function "a/b": missing function name; want <pkgpath>.<Func>, <pkgpath>.(*T).Method or <pkgpath>.(T).Method`},
		{"-keepfunc a/b.\n", `matrix.blacklist:1: -keepfunc: bad function "a/b.": missing function name`},
		{"-keepfunc .F\n", `matrix.blacklist:1: -keepfunc: bad function ".F": missing package path; want <pkgpath>.<Func>`},
		{"-keepfunc (*T).M\n", `matrix.blacklist:1: -keepfunc: bad function "(*T).M": missing package path; want <pkgpath>.<Func>`},
		{"-keepfunc a/.F\n", `matrix.blacklist:1: -keepfunc: bad function "a/.F": package path: empty path element`},
		{"-keepfunc a*b.F\n", `matrix.blacklist:1: -keepfunc: bad function "a*b.F": package path: invalid character '*' in import path`},
		{"-keepfunc a%2e.F\n", `matrix.blacklist:1: -keepfunc: bad function "a%2e.F": package path: trailing dot in path element "a."`},
		{"-keepfunc a%41.F\n", `matrix.blacklist:1: -keepfunc: bad function "a%41.F": package path: invalid character '%' in import path`},
		{"-keepfunc a.1F\n", `matrix.blacklist:1: -keepfunc: bad function "a.1F": bad function name "1F"`},
		{"-keepfunc a.F-G\n", `matrix.blacklist:1: -keepfunc: bad function "a.F-G": bad function name "F-G"`},
		{"-keepfunc a.F#x\n", `matrix.blacklist:1: -keepfunc: bad function "a.F#x": bad function name "F#x"`},
		{"-keepfunc a.F..func1\n", `matrix.blacklist:1: -keepfunc: bad function "a.F..func1": bad closure suffix "" in "F..func1"; want e.g. F.func1`},
		{"-keepfunc a.F.func1.\n", `matrix.blacklist:1: -keepfunc: bad function "a.F.func1.": bad closure suffix "" in "F.func1."; want e.g. F.func1`},
		{"-keepfunc a.F.fu-nc\n", `matrix.blacklist:1: -keepfunc: bad function "a.F.fu-nc": bad closure suffix "fu-nc" in "F.fu-nc"; want e.g. F.func1`},
		{"-keepfunc a.glob..func\n", `matrix.blacklist:1: -keepfunc: bad function "a.glob..func": bad package-level function literal "glob..func"; want glob..func1, glob..func2, …`},
		{"-keepfunc a.glob..funcX\n", `matrix.blacklist:1: -keepfunc: bad function "a.glob..funcX": bad package-level function literal "glob..funcX"; want glob..func1, glob..func2, …`},
		{"-keepfunc a.glob..1\n", `matrix.blacklist:1: -keepfunc: bad function "a.glob..1": bad package-level function literal "glob..1"; want glob..func1, glob..func2, …`},
		{"-keepfunc a.glob...func1\n", `matrix.blacklist:1: -keepfunc: bad function "a.glob...func1": bad package-level function literal "glob.."; want glob..func1, glob..func2, …`},
		{"-keepfunc a.glob..\n", `matrix.blacklist:1: -keepfunc: bad function "a.glob..": bad package-level function literal "glob.."; want glob..func1, glob..func2, …`},
		{"-keepfunc a.glob..func1..2\n", `matrix.blacklist:1: -keepfunc: bad function "a.glob..func1..2": bad closure suffix "" in "glob..func1..2"; want e.g. F.func1`},
		{"-keepfunc a.(*T.M\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*T.M": missing ')' after receiver`},
		{"-keepfunc a.(**T).M\n", `matrix.blacklist:1: -keepfunc: bad function "a.(**T).M": bad receiver "(**T)"; want (T), (*T), (T[...]) or (*T[...])`},
		{"-keepfunc a.().M\n", `matrix.blacklist:1: -keepfunc: bad function "a.().M": bad receiver "()"; want (T), (*T), (T[...]) or (*T[...])`},
		{"-keepfunc a.(*T)\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*T)": missing method name after receiver "(*T)"`},
		{"-keepfunc a.(*T).\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*T).": missing method name after receiver "(*T)"`},
		{"-keepfunc a.(*T)M\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*T)M": missing method name after receiver "(*T)"`},
		{"-keepfunc a.(*T).1\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*T).1": bad method name "1"`},
		{"-keepfunc a.(*T).M[T]x\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*T).M[T]x": bad method name "M[...]x"`},
		{"-keepfunc a.F-range\n", `matrix.blacklist:1: -keepfunc: bad function "a.F-range": bad function name "F-range"`},
		{"-keepfunc a.F.func1-rangeX.1\n", `matrix.blacklist:1: -keepfunc: bad function "a.F.func1-rangeX.1": bad closure suffix "func1-rangeX" in "F.func1-rangeX.1"; want e.g. F.func1`},
		{"-keepfunc a.(*L[]).M\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*L[]).M": empty type parameter list []`},
		{"-keepfunc a.(*L[T).M\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*L[T).M": unbalanced '['`},
		{"-keepfunc a.(*L]).M\n", `matrix.blacklist:1: -keepfunc: bad function "a.(*L]).M": unbalanced ']'`},
		{"-keepfunc a.([T]).M\n", `matrix.blacklist:1: -keepfunc: bad function "a.([T]).M": bad receiver "([...])"; want (T), (*T), (T[...]) or (*T[...])`},
		{"-keepfunc a.F[T]x\n", `matrix.blacklist:1: -keepfunc: bad function "a.F[T]x": bad function name "F[...]x"`},
		{"-keepfunc a.F[T][U]\n", `matrix.blacklist:1: -keepfunc: bad function "a.F[T][U]": bad function name "F[...][...]"`},
		{"-allowfunc a.(*T)[x].M\n", `matrix.blacklist:1: -allowfunc: bad function "a.(*T)[x].M": missing method name after receiver "(*T)"`},
		{"[]\n", `matrix.blacklist:1: empty section name`},
		{"[  ] # x\n", `matrix.blacklist:1: empty section name`},
		{"[section\n", `matrix.blacklist:1: malformed section header "[section"; want [name]`},
		{"[\n", `matrix.blacklist:1: malformed section header "["; want [name]`},
		{"]\n", `matrix.blacklist:1: malformed section header "]"; want [name]`},
		{"[a]b]\n", `matrix.blacklist:1: malformed section header "[a]b]"; want [name]`},
		{"[a] -keeppackage b\n", `matrix.blacklist:1: malformed section header "[a] -keeppackage b"; want [name]`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			r, err := Parse("matrix.blacklist", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded with %q", r.String())
			}
			if r != nil {
				t.Errorf("Parse returned rules with an error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.File != "matrix.blacklist" {
				t.Errorf("error %v is not a *SyntaxError for matrix.blacklist", err)
			}
		})
	}
}

func TestParseReportsAllErrors(t *testing.T) {
	src := strings.Join([]string{
		"# matrix blacklist",    // 1
		"[package]",             // 2
		"-keepclass a.b.C",      // 3
		"-keeppackage ok/pkg",   // 4
		"",                      // 5
		"-keeppackage",          // 6
		"-keepfunc a/b",         // 7
		"-allowpackage a b",     // 8
		"[]",                    // 9
		"-allowfunc ok/pkg.Run", // 10
	}, "\n")
	_, err := Parse("x.txt", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	var lines []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var se *SyntaxError
		if !errors.As(e, &se) {
			t.Fatalf("%v is not a *SyntaxError", e)
		}
		if !strings.HasPrefix(e.Error(), "x.txt:") {
			t.Errorf("%v does not start with the file name", e)
		}
		lines = append(lines, se.Line)
	}
	if want := []int{3, 6, 7, 8, 9}; !reflect.DeepEqual(lines, want) {
		t.Errorf("error lines = %v, want %v\n%v", lines, want, err)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 5 {
		t.Errorf("joined error has %d lines, want 5:\n%v", n, err)
	}
}

func TestMatchPrefix(t *testing.T) {
	tests := []struct {
		prefix, path string
		want         bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", true},
		{"a/b", "a/b/c/d", true},
		{"a/b", "a/bc", false},
		{"a/b", "a/b.c", false},
		{"a/b", "a", false},
		{"a/b", "x/a/b", false},
		{"a/b/", "a/b/c", true},
		{"a/b/", "a/b", false},
		{"a/b/", "a/bc", false},
		{"a/b/", "a/b/c/d", true},
		{"*", "a", true},
		{"*", "main", true},
		{"*", "", true},
		{"main", "main", true},
		{"example.com", "example.com/x", true},
		{"example.com", "example.community", false},
	}
	for _, tt := range tests {
		if got := matchPrefix(tt.prefix, tt.path); got != tt.want {
			t.Errorf("matchPrefix(%q, %q) = %v, want %v", tt.prefix, tt.path, got, tt.want)
		}
		// The same through the public API.
		r := mustParse(t, "-keeppackage "+tt.prefix)
		ok, reason := r.Package(tt.path, false)
		if ok == tt.want || (!ok && reason != ReasonKeepPackage) {
			t.Errorf("-keeppackage %s: Package(%q) = %v, %q; want kept=%v", tt.prefix, tt.path, ok, reason, tt.want)
		}
	}
}

type pkgCase struct {
	path   string
	std    bool
	ok     bool
	reason string
}

func checkPackages(t *testing.T, r *Rules, cases []pkgCase) {
	t.Helper()
	for _, c := range cases {
		ok, reason := r.Package(c.path, c.std)
		if ok != c.ok || reason != c.reason {
			t.Errorf("Package(%q, %v) = %v, %q; want %v, %q", c.path, c.std, ok, reason, c.ok, c.reason)
		}
	}
}

type funcCase struct {
	pkg, fn string
	ok      bool
	reason  string
}

func checkFuncs(t *testing.T, r *Rules, cases []funcCase) {
	t.Helper()
	for _, c := range cases {
		ok, reason := r.Func(c.pkg, c.fn)
		if ok != c.ok || reason != c.reason {
			t.Errorf("Func(%q, %q) = %v, %q; want %v, %q", c.pkg, c.fn, ok, reason, c.ok, c.reason)
		}
	}
}

func TestDefaults(t *testing.T) {
	cases := []pkgCase{
		{"fmt", true, false, "std"},
		{"net/http", true, false, "std"},
		{"runtime", false, false, "std"},
		{"runtime/internal/atomic", false, false, "std"},
		{"internal/abi", false, false, "std"},
		{"unsafe", false, false, "std"},
		{"C", false, false, "std"},
		{"vendor/golang.org/x/net/http2/hpack", false, false, "std"},
		{"runtimefoo", false, true, ""},
		{"example.com/internal/x", false, true, ""},
		{"example.com/runtime", false, true, ""},
		{"Cx", false, true, ""},
		{"vendor/example.com/x", false, true, ""},
		{self.Module, false, false, "self"},
		{self.Module + "/beat", false, false, "self"},
		{self.Module + "/beat/internal/ring", false, false, "self"},
		{self.Module + "/tracer", false, false, "self"},
		{self.Module + "/tracer/analysis", false, false, "self"},
		{self.Module + "/cmd/matrixexec", false, false, "self"},
		{self.Module + "/integration", false, false, "self"},
		{self.Module + "/examples", false, true, ""},
		{self.Module + "/examples/httpdemo", false, true, ""},
		{self.Module + "/examplesx", false, false, "self"},
		{self.Module + "/integration/testdata/generics", false, true, ""},
		{self.Module + "/integration/testdataX", false, false, "self"},
		{self.Module + "x/beat", false, true, ""},
		{self.Module + "/beat [" + self.Module + "/beat.test]", false, false, "self"},
		{"example.com/app", false, true, ""},
		{"example.com/app [example.com/app.test]", false, true, ""},
		{"main", false, true, ""},
		{"command-line-arguments", false, true, ""},
	}
	for _, r := range []*Rules{Default(), mustParse(t, ""), new(Rules), nil} {
		checkPackages(t, r, cases)
		checkFuncs(t, r, []funcCase{
			{"example.com/app", "main", true, ""},
			{"runtime", "gopark", false, "std"},
			{self.Module + "/beat", "(*Ring).Push", false, "self"},
			{self.Module + "/examples/x", "F", true, ""},
		})
		if s := r.String(); s != "" {
			t.Errorf("String() of default rules = %q", s)
		}
	}
	if !reflect.DeepEqual(Default(), mustParse(t, "# nothing\n[section]\n")) {
		t.Error("Default() differs from the rules of an empty file")
	}
}

func TestDefaultsCannotBeOverridden(t *testing.T) {
	r := mustParse(t, `
-allowpackage fmt
-allowpackage runtime
-allowpackage github.com/matrixgo/matrix/beat
-allowpackage *
-allowfunc fmt.Println
-allowfunc runtime.gopark
-allowfunc github.com/matrixgo/matrix/beat.Enter
-allowfunc internal/abi.FuncPCABI0
`)
	checkPackages(t, r, []pkgCase{
		{"fmt", true, false, "std"},
		{"runtime", true, false, "std"},
		{"runtime", false, false, "std"},
		{"internal/abi", false, false, "std"},
		{self.Module + "/beat", false, false, "self"},
		{"example.com/x", false, true, ""},
	})
	checkFuncs(t, r, []funcCase{
		{"runtime", "gopark", false, "std"},
		{"internal/abi", "FuncPCABI0", false, "std"},
		{self.Module + "/beat", "Enter", false, "self"},
	})
}

func TestKeep(t *testing.T) {
	r := mustParse(t, `
[package]
-keeppackage example.com/gen
-keeppackage example.com/vendor/
-keepfunc example.com/app.hot
-keepfunc example.com/app.(*Server).ServeHTTP
-keepfunc example.com/app.(Point).String
-keepfunc example.com/app.run.func1
-keepfunc main.run
`)
	checkPackages(t, r, []pkgCase{
		{"example.com/gen", false, false, "keeppackage"},
		{"example.com/gen/proto", false, false, "keeppackage"},
		{"example.com/generic", false, true, ""},
		{"example.com/vendor", false, true, ""},
		{"example.com/vendor/x", false, false, "keeppackage"},
		{"example.com/app", false, true, ""},
		{"main", false, true, ""},
	})
	checkFuncs(t, r, []funcCase{
		{"example.com/app", "hot", false, "keepfunc"},
		{"example.com/app", "hot.func1", true, ""}, // closures are separate functions
		{"example.com/app", "hotter", true, ""},
		{"example.com/app", "(*Server).ServeHTTP", false, "keepfunc"},
		{"example.com/app", "(Server).ServeHTTP", true, ""},
		{"example.com/app", "(Point).String", false, "keepfunc"},
		{"example.com/app", "(*Point).String", true, ""},
		{"example.com/app", "run", true, ""},
		{"example.com/app", "run.func1", false, "keepfunc"},
		{"example.com/app [example.com/app.test]", "hot", false, "keepfunc"},
		{"example.com/other", "hot", true, ""},
		{"main", "run", false, "keepfunc"},
		{"example.com/gen/proto", "Marshal", false, "keeppackage"},
	})
}

func TestAllowList(t *testing.T) {
	r := mustParse(t, `
-allowpackage example.com/app
-allowpackage example.com/lib/
-keeppackage example.com/app/gen
-keepfunc example.com/app.hot
-keepfunc example.com/app.(*S).M
-allowfunc example.com/app/gen.Important
-allowfunc example.com/app.(*S).M
-allowfunc example.com/other.Handler
`)
	checkPackages(t, r, []pkgCase{
		{"example.com/app", false, true, ""},
		{"example.com/app/sub", false, true, ""},
		{"example.com/apps", false, false, "not-allowed"},
		{"example.com/app/gen", false, true, ""}, // holds an -allowfunc
		{"example.com/app/gen/x", false, false, "keeppackage"},
		{"example.com/lib", false, false, "not-allowed"},
		{"example.com/lib/x", false, true, ""},
		{"example.com/other", false, true, ""}, // holds an -allowfunc
		{"example.com/third", false, false, "not-allowed"},
		{"main", false, false, "not-allowed"},
		{"fmt", true, false, "std"},
	})
	checkFuncs(t, r, []funcCase{
		{"example.com/app", "cold", true, ""},
		{"example.com/app", "hot", false, "keepfunc"},
		{"example.com/app", "(*S).M", true, ""}, // -allowfunc beats -keepfunc
		{"example.com/app/gen", "Important", true, ""},
		{"example.com/app/gen", "Other", false, "keeppackage"},
		{"example.com/other", "Handler", true, ""},
		{"example.com/other", "Handler.func1", false, "not-allowed"},
		{"example.com/third", "F", false, "not-allowed"},
	})

	// -allowfunc alone does not turn the allow list on.
	r = mustParse(t, "-keeppackage example.com/gen\n-allowfunc example.com/gen.F\n")
	checkPackages(t, r, []pkgCase{
		{"example.com/app", false, true, ""},
		{"example.com/gen", false, true, ""},
		{"example.com/gen/x", false, false, "keeppackage"},
	})
	checkFuncs(t, r, []funcCase{
		{"example.com/app", "F", true, ""},
		{"example.com/gen", "F", true, ""},
		{"example.com/gen", "G", false, "keeppackage"},
	})

	// An allow list of only std paths enables nothing.
	r = mustParse(t, "-allowpackage net/http\n")
	checkPackages(t, r, []pkgCase{
		{"net/http", true, false, "std"},
		{"example.com/app", false, false, "not-allowed"},
	})
}

func TestGenericReceivers(t *testing.T) {
	r := mustParse(t, `
-keepfunc example.com/ds.(*List[T]).Push
-keepfunc example.com/ds.(Map[K,V]).Get
-keepfunc example.com/ds.(*Tree[...]).Walk.func1
-keepfunc example.com/ds.Sort[S]
`)
	checkFuncs(t, r, []funcCase{
		{"example.com/ds", "(*List[...]).Push", false, "keepfunc"},
		{"example.com/ds", "(*List[T]).Push", false, "keepfunc"},
		{"example.com/ds", "(*List[E]).Push", false, "keepfunc"},
		{"example.com/ds", "(*List[T any]).Push", false, "keepfunc"},
		{"example.com/ds", "(List[T]).Push", true, ""},
		{"example.com/ds", "(*List[T]).Pop", true, ""},
		{"example.com/ds", "(*List).Push", true, ""},
		{"example.com/ds", "(Map[...]).Get", false, "keepfunc"},
		{"example.com/ds", "(Map[K, V]).Get", false, "keepfunc"},
		{"example.com/ds", "(Map[string,[]int]).Get", false, "keepfunc"},
		{"example.com/ds", "(*Tree[T]).Walk.func1", false, "keepfunc"},
		{"example.com/ds", "(*Tree[T]).Walk", true, ""},
		{"example.com/ds", "Sort[...]", false, "keepfunc"},
		{"example.com/ds", "Sort", true, ""},
		{"example.com/ds", "(*List[T).Push", true, ""}, // unbalanced: looked up as is
	})
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.blacklist")

	r, err := Load(missing, true)
	if err != nil || !reflect.DeepEqual(r, Default()) {
		t.Errorf("Load(missing, optional) = %v, %v; want Default()", r, err)
	}
	if _, err := Load(missing, false); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing, required) error = %v; want ErrNotExist", err)
	}
	// A directory is not a missing file, even when optional.
	if _, err := Load(dir, true); err == nil {
		t.Errorf("Load(directory) succeeded")
	}

	good := filepath.Join(dir, "good.blacklist")
	if err := os.WriteFile(good, []byte("-keeppackage example.com/gen\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	r, err = Load(good, false)
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := r.Package("example.com/gen", false); ok || reason != "keeppackage" {
		t.Errorf("loaded rules: Package = %v, %q", ok, reason)
	}

	bad := filepath.Join(dir, "bad.blacklist")
	if err := os.WriteFile(bad, []byte("\n-keepclass a.B\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad, true)
	if err == nil || !strings.HasPrefix(err.Error(), bad+":2: unknown directive") {
		t.Errorf("Load(bad) error = %v; want it to start with %s:2:", err, bad)
	}
}

func TestRoundTrip(t *testing.T) {
	src := `
[keep]
-keeppackage example.com/gen # generated
-keeppackage example.com/x/
-keeppackage *
-keepfunc gopkg.in/yaml%2ev3.Marshal
-keepfunc example.com/ds.(*List[T]).Push
-keepfunc main.run.func1.2
[allow]
-allowpackage example.com
-allowfunc example.com/gen.(T).M
`
	r := mustParse(t, src)
	r2 := mustParse(t, r.String())
	if !reflect.DeepEqual(r, r2) {
		t.Errorf("round trip changed rules:\n%s\n%s", r, r2)
	}
	checkFuncs(t, r2, []funcCase{
		{"gopkg.in/yaml.v3", "Marshal", false, "not-allowed"},
		{"example.com/y", "F", false, "keeppackage"},
		{"example.com/gen", "(T).M", true, ""},
		{"example.com/gen", "T.M", true, ""},
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"# comment\n[section]\n",
		"-keeppackage a/b\n-keeppackage a/b/\n-keeppackage *\n",
		"-keepfunc example.com/a/b.(*T).M\n-keepfunc main.run\n",
		"-keepfunc a.(*List[T]).Push\n-allowfunc a.(Map[K,V]).Get.func1\n",
		"-allowpackage example.com # c\n-allowfunc gopkg.in/yaml%2ev3.Marshal\n",
		"-keepfunc a/b.(*L[x/y.T]).M\n",
		"\ufeff-keeppackage a\r\n",
		"-keepclass a.b.C\n[]\n-keeppackage\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("fuzz", data)
		if err != nil {
			if r != nil {
				t.Fatal("rules returned with an error")
			}
			return
		}
		s := r.String()
		r2, err := Parse("roundtrip", []byte(s))
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, s)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed rules:\n%s\n%s", s, r2)
		}
		if s2 := r2.String(); s2 != s {
			t.Fatalf("canonical form not stable:\n%s\n%s", s, s2)
		}
		// Matching must not panic either.
		for _, p := range r.keepPackages {
			r.Package(p, false)
		}
		for _, k := range r.keepFuncs {
			r.Func(k.pkg, k.fn)
		}
	})
}
