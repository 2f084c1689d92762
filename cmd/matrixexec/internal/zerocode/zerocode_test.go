package zerocode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
)

// TestNestedPGO: the nested build names the profile the go command was
// given, never the compile's preprocessed copy of it.
func TestNestedPGO(t *testing.T) {
	t.Setenv("GOFLAGS", "")
	compile := &toolcmd.Cmd{Tool: "compile", Flags: []string{"-p", "main", "-pgoprofile=/cache/ab-d"}}
	for _, tc := range []struct {
		name    string
		compile *toolcmd.Cmd
		parent  []string
		want    string
	}{
		{"no profile", &toolcmd.Cmd{Tool: "compile", Flags: []string{"-p", "main"}}, nil, ""},
		{"-pgo=FILE on the command line", compile, []string{"-pgo=/src/cpu.pprof"}, ""},
	} {
		got, err := nestedPGO(tc.compile, tc.parent, nil)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	// -pgo=auto (the default): default.pgo in the main package's
	// directory.
	dir := t.TempDir()
	mainDir := func() (string, error) { return dir, nil }
	if _, err := nestedPGO(compile, nil, mainDir); err == nil || !strings.Contains(err.Error(), "default.pgo does not exist") {
		t.Errorf("no default.pgo: err = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "default.pgo"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := nestedPGO(compile, nil, mainDir); err != nil || got != "-pgo="+filepath.Join(dir, "default.pgo") {
		t.Errorf("default.pgo: %q, %v", got, err)
	}
	if got, err := mainPackageDir("go", []string{filepath.Join(dir, "main.go")}); err != nil || got != dir {
		t.Errorf("mainPackageDir = %q, %v; want %q", got, err, dir)
	}
	t.Setenv("GOFLAGS", "-pgo=/src/cpu.pprof")
	if got, err := nestedPGO(compile, nil, mainDir); err != nil || got != "" {
		t.Errorf("-pgo=FILE in GOFLAGS: %q, %v", got, err)
	}
}
