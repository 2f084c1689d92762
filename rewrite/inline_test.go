package rewrite

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/inlinecost"
)

// compilerInline runs the compiler with -m=2 on pkg (built in dir, or the
// current directory if dir is empty) and returns, per "file:line" of a
// function declaration, whether it can be inlined, and its cost.
func compilerInline(t *testing.T, dir, pkg string) (map[string]bool, map[string]int) {
	t.Helper()
	cmd := exec.Command("go", "build", "-gcflags=-m=2", pkg)
	cmd.Dir = dir
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
// the compiler's own decisions (-gcflags=-m=2) on real packages, without
// types (calls resolved by name, calls into other packages priced as real
// calls) and with them (calls resolved by the type checker, calls into
// other packages priced at the costs in their export data). The estimate
// must agree on at least 90% of the functions without types and 97% with
// them, and with types must instrument at most 2% of the functions the
// compiler inlines (each would cost its callers the inlining).
func TestInlineEstimateMatchesCompiler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds standard library packages with -m=2; skipped in -short mode")
	}
	pkgs := []string{"strings", "bytes", "net/url", "encoding/json", "text/template/parse", "bufio", "strconv", "net/textproto", "compress/flate", "go/scanner", "net/http/internal", "mime", "encoding/csv", "log/slog"}
	importcfg := exportImportcfg(t, pkgs)
	goFiles := map[string][]string{}
	for _, line := range strings.Split(string(must(exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \"\\t\"}}"}, pkgs...)...).Output())), "\n") {
		if fields := strings.Split(line, "\t"); len(fields) > 2 {
			for _, f := range fields[2:] {
				goFiles[fields[0]] = append(goFiles[fields[0]], filepath.Join(fields[1], f))
			}
		}
	}
	for _, typed := range []bool{false, true} {
		var total, agree, missedInline, extraInline int
		for _, pkg := range pkgs {
			decided, costs := compilerInline(t, "", pkg)
			fset := token.NewFileSet()
			var files []*ast.File
			for _, m := range goFiles[pkg] {
				f, err := parser.ParseFile(fset, m, nil, parser.ParseComments|parser.SkipObjectResolution)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			pi := collectPackageInfo(files)
			if typed {
				imp, err := inlinecost.NewImporter(fset, importcfg)
				if err != nil {
					t.Fatal(err)
				}
				pi.typeCheck(fset, files, pkg, types.Config{Importer: imp, Sizes: types.SizesFor("gc", runtime.GOARCH)}, imp.Func)
				if pi.typed == nil || pi.typed.errs > 0 {
					t.Fatalf("%s: type check failed (%v)", pkg, pi.typed != nil)
				}
			}
			est := newEstimator(pi)
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
						t.Logf("typed=%v %s %s %s: ours %d, compiler %d", typed, pkg, key, fd.Name.Name, oc, costs[key])
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
		t.Logf("typed=%v: %d functions: %d agree (%.1f%%), %d inlinable but instrumented, %d skipped but not inlinable",
			typed, total, agree, 100*float64(agree)/float64(total), missedInline, extraInline)
		want := 0.90
		if typed {
			want = 0.97
			if float64(missedInline) > 0.02*float64(total) {
				t.Errorf("typed: %d of %d inlinable functions would be instrumented", missedInline, total)
			}
		}
		if total < 500 {
			t.Fatalf("only %d functions compared", total)
		}
		if float64(agree) < want*float64(total) {
			t.Errorf("typed=%v: estimate agrees with the compiler on %.1f%% of functions, want >= %.0f%%", typed, 100*float64(agree)/float64(total), 100*want)
		}
	}
}

// exportImportcfg returns an importcfg naming the export data of pkgs and
// all their dependencies, as cmd/go would write for a compile.
func exportImportcfg(t testing.TB, pkgs []string) []byte {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-export", "-deps", "-f", "{{if .Export}}packagefile {{.ImportPath}}={{.Export}}{{end}}"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	return out
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
