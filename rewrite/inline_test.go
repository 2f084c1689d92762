package rewrite

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// compilerInline runs the compiler with -m=2 on pkg and returns, per
// "file:line" of a function declaration, whether it can be inlined.
func compilerInline(t *testing.T, pkg string) (map[string]bool, map[string]int) {
	t.Helper()
	cmd := exec.Command("go", "build", "-gcflags=-m=2", pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build -gcflags=-m=2 %s: %v\n%s", pkg, err, out.Bytes())
	}
	can := regexp.MustCompile(`^(.*?):(\d+):\d+: can inline \S+ with cost (\d+)`)
	cannot := regexp.MustCompile(`^(.*?):(\d+):\d+: cannot inline \S+: (.*)`)
	costRe := regexp.MustCompile(`cost (\d+) exceeds`)
	res, costs := map[string]bool{}, map[string]int{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if m := can.FindStringSubmatch(sc.Text()); m != nil {
			key := filepath.Base(m[1]) + ":" + m[2]
			res[key] = true
			costs[key], _ = strconv.Atoi(m[3])
		} else if m := cannot.FindStringSubmatch(sc.Text()); m != nil {
			key := filepath.Base(m[1]) + ":" + m[2]
			res[key] = false
			if c := costRe.FindStringSubmatch(m[3]); c != nil {
				costs[key], _ = strconv.Atoi(c[1])
			} else {
				costs[key] = -1
			}
		}
	}
	return res, costs
}

// TestInlineEstimateMatchesCompiler measures the inlining estimate against
// the compiler's own decisions (-gcflags=-m=2) on real packages: the
// estimate must agree on at least 90% of the functions, and must almost
// never instrument a function the compiler inlines (that would cost the
// caller the inlining).
func TestInlineEstimateMatchesCompiler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds standard library packages with -m=2; skipped in -short mode")
	}
	pkgs := []string{"strings", "bytes", "net/url", "encoding/json", "text/template/parse", "bufio", "strconv", "net/textproto", "compress/flate", "go/scanner"}
	goroot := strings.TrimSpace(string(must(exec.Command("go", "env", "GOROOT").Output())))
	var total, agree, missedInline, extraInline int
	for _, pkg := range pkgs {
		decided, costs := compilerInline(t, pkg)
		dir := filepath.Join(goroot, "src", pkg)
		matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		fset := token.NewFileSet()
		var files []*ast.File
		for _, m := range matches {
			if strings.HasSuffix(m, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, m, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := decidedFile(decided, filepath.Base(m)); !ok {
				continue // excluded by build tags
			}
			files = append(files, f)
		}
		est := newEstimator(collectPackageInfo(files))
		for _, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil || fd.Type.TypeParams != nil || (fd.Recv != nil && isGenericRecv(fd.Recv)) {
					continue
				}
				key := filepath.Base(fset.Position(fd.Pos()).Filename) + ":" + strconv.Itoa(fset.Position(fd.Pos()).Line)
				can, ok := decided[key]
				if !ok {
					continue
				}
				if !hasCalls(fd.Body, est.pi) {
					continue // skipped for having no calls, whatever the estimate
				}
				oc := est.cost(fd, 1000)
				ours := oc <= DefaultInlineBudget
				if testing.Verbose() && ours != can {
					t.Logf("%s %s: ours %d, compiler %d", pkg, key, oc, costs[key])
				}
				total++
				switch {
				case ours == can:
					agree++
				case can:
					missedInline++ // we would instrument an inlinable function
				default:
					extraInline++ // we would skip a function that is not inlined
				}
			}
		}
	}
	t.Logf("%d functions: %d agree (%.1f%%), %d inlinable but instrumented, %d skipped but not inlinable",
		total, agree, 100*float64(agree)/float64(total), missedInline, extraInline)
	if total < 500 {
		t.Fatalf("only %d functions compared", total)
	}
	if float64(agree) < 0.9*float64(total) {
		t.Errorf("estimate agrees with the compiler on %.1f%% of functions, want >= 90%%", 100*float64(agree)/float64(total))
	}
}

func decidedFile(decided map[string]bool, base string) (bool, bool) {
	for k := range decided {
		if strings.HasPrefix(k, base+":") {
			return true, true
		}
	}
	return false, false
}

func isGenericRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch t.(type) {
	case *ast.IndexExpr, *ast.IndexListExpr:
		return true
	}
	return false
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
