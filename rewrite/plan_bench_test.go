package rewrite

import (
	"go/types"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkPlan measures planning a large package (net/http, about 70
// files) without and with type checking against its export data: the
// price of the typed inlining estimate in every instrumented compile.
//
//	go test -run '^$' -bench Plan -count 10 ./rewrite
func BenchmarkPlan(b *testing.B) {
	const pkg = "net/http"
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}|{{join .GoFiles \"|\"}}", pkg).Output()
	if err != nil {
		b.Fatalf("go list: %v", err)
	}
	fields := strings.Split(strings.TrimSpace(string(out)), "|")
	var files []string
	for _, f := range fields[1:] {
		files = append(files, filepath.Join(fields[0], f))
	}
	importcfg := exportImportcfg(b, []string{pkg})
	for _, typed := range []bool{false, true} {
		name := "untyped"
		opts := Options{PkgPath: pkg}
		if typed {
			name = "typed"
			opts.Types = &TypesConfig{Importcfg: importcfg, Sizes: types.SizesFor("gc", runtime.GOARCH)}
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if _, err := NewPlan(files, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
