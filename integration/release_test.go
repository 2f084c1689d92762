package integration

import (
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/matrixgo/matrix/internal/testgo"
	"github.com/rogpeppe/go-internal/testscript"
)

// builtWithScripts are the scripts TestBuiltWithRelease runs, besides those
// of testdata/release, with a matrixexec built with the release: what it
// needs the release's own go/parser or importer for.
var builtWithScripts = []string{
	"testdata/script/closurenames.txtar", // types of iterators, read from the release's export data
}

// builtWithSince is the first Go release whose changes need a matrixexec
// built with it: Go 1.27's methods with type parameters, which older
// go/parsers reject, and its export data, which older importers cannot
// read.
const builtWithSince = "go1.27"

// TestBuiltWithRelease builds matrixexec itself with each other supported
// Go release from builtWithSince on, and runs the scripts of
// testdata/release and builtWithScripts with it, building with that
// release. matrixexec parses and type-checks with the go/parser and the
// export data importer of the Go it was built with, as a module's pinned
// tool ("go tool matrixexec") is. The scripts find the matrixexec of the
// other tests as $HOSTMATRIXEXEC, and the map TestGoVersions uses with it
// as $HOSTMAP.
func TestBuiltWithRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds matrixexec with other Go toolchains; skipped in -short mode")
	}
	if len(testgo.OtherReleases()) == 0 {
		t.Skip(testgo.NoReleases)
	}
	ran := false
	for _, v := range testgo.OtherReleases() {
		if version.Compare(v, builtWithSince) < 0 {
			continue
		}
		ran = true
		t.Run(v, func(t *testing.T) {
			bin := t.TempDir()
			cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "../cmd/matrixexec/...")
			cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+v)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("building matrixexec with %s: %v\n%s", v, err, out)
			}
			p := params(t, "testdata/release")
			p.Condition = releaseCondition(v)
			files, err := filepath.Glob("testdata/release/*.txtar")
			if err != nil {
				t.Fatal(err)
			}
			p.Dir = ""
			p.Files = append(files, builtWithScripts...)
			setup := p.Setup
			p.Setup = func(e *testscript.Env) error {
				if err := setup(e); err != nil {
					return err
				}
				setRelease(t, e, v)
				e.Setenv("PATH", bin+string(os.PathListSeparator)+e.Getenv("PATH"))
				e.Setenv("HOSTMATRIXEXEC", filepath.Join(binDir, "matrixexec"+exeSuffix()))
				e.Setenv("HOSTMAP", releaseMap(v))
				// A map of its own: this matrixexec's plans differ from
				// those of the other tests' (it parses, and reads
				// export data, as the release does).
				e.Setenv("MATRIX_MAP", filepath.Join(filepath.Dir(sharedMap), "built-with-"+v, "methodMapping.txt"))
				return nil
			}
			testscript.Run(t, p)
		})
	}
	if !ran {
		t.Skipf("no Go release from %s on among the releases tested (%v)", builtWithSince, testgo.OtherReleases())
	}
}
