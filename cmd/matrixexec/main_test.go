package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"matrixexec": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the command-line scripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"mkdump": cmdMkdump,
	}})
}

// mkdump FILE EVENT... writes a raw buffer dump of events "i:ID:MS" or
// "o:ID:MS" (ID may be D) with beat.WriteDump.
func cmdMkdump(ts *testscript.TestScript, neg bool, args []string) {
	var recs []uint64
	for _, ev := range args[1:] {
		f := strings.Split(ev, ":")
		id := uint64(analysis.Dispatch)
		if f[1] != "D" {
			n, err := strconv.ParseUint(f[1], 10, 32)
			ts.Check(err)
			id = n
		}
		ms, err := strconv.ParseUint(f[2], 10, 64)
		ts.Check(err)
		recs = append(recs, uint64(analysis.MakeRecord(f[0] == "i", uint32(id), ms)))
	}
	var b bytes.Buffer
	ts.Check(beat.WriteDump(&b, recs))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o644))
}

func TestResponseFiles(t *testing.T) {
	dir := t.TempDir()
	rsp := filepath.Join(dir, "args")
	if err := os.WriteFile(rsp, []byte("-p\nexample.com/x\nline\\nbreak\nback\\\\slash\n/abs/a.go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := expandArgs([]string{"/tool/compile", "@" + rsp, "/abs/b.go"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/tool/compile", "-p", "example.com/x", "line\nbreak", `back\slash`, "/abs/a.go", "/abs/b.go"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("expandArgs = %q, want %q", got, want)
	}
	// Long argument lists go back into a response file that decodes the same.
	long := []string{"/tool/compile"}
	for i := 0; i < 5000; i++ {
		long = append(long, filepath.Join("/very/long/path/to/a/package", "file_with_a_long_name.go"))
	}
	long = append(long, "tricky\nname.go")
	packed, err := toolArgs(long, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(packed) != 2 || packed[1][0] != '@' {
		t.Fatalf("long args not packed: %d args", len(packed))
	}
	back, err := expandArgs(packed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, long) {
		t.Fatal("response file round trip changed the arguments")
	}
}

func TestParentBuildFlags(t *testing.T) {
	got := filterBuildFlags([]string{"go", "test", "-v", "-race", "-run", "X", "-tags", "a,b", "-gcflags=all=-N -l", "-pgo=auto", "-count=1", "./...", "-toolexec", "matrixexec -map m"}, "/src")
	want := []string{"-race", "-tags=a,b", "-gcflags=all=-N -l", "-toolexec=matrixexec -map m"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("build flags = %q, want %q", got, want)
	}
	// go run: what follows the package is the program's, not go's; a
	// flag's value is not a package.
	got = filterBuildFlags([]string{"go", "run", "-o", "out", "-tags", "x", ".", "-race", "-toolexec", "evil"}, "")
	want = []string{"-tags=x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("go run build flags = %q, want %q", got, want)
	}
	// go test: flags after the packages, but nothing after -args.
	got = filterBuildFlags([]string{"go", "test", "./...", "-race", "-args", "-tags", "y"}, "")
	want = []string{"-race"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("go test build flags = %q, want %q", got, want)
	}
	// File values are relative to the go command's directory: they are
	// made absolute for a nested build that may run elsewhere.
	dir := filepath.FromSlash("/src/mod")
	got = filterBuildFlags([]string{"go", "build", "-pgo", "cpu.pprof", "-modfile=alt.mod", "-overlay", filepath.FromSlash("/abs/o.json"), "./cmd/x"}, dir)
	want = []string{"-pgo=" + filepath.Join(dir, "cpu.pprof"), "-modfile=" + filepath.Join(dir, "alt.mod"), "-overlay=" + filepath.FromSlash("/abs/o.json")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("file flags = %q, want %q", got, want)
	}
	got = filterBuildFlags([]string{"go", "build", "-pgo=off", "."}, dir)
	if want = []string{"-pgo=off"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("-pgo=off: %q, want %q", got, want)
	}
}

// TestNestedPGO: the nested build names the profile the go command was
// given, never the compile's preprocessed copy of it.
func TestNestedPGO(t *testing.T) {
	t.Setenv("GOFLAGS", "")
	compile := []string{"-p", "main", "-pgoprofile=/cache/ab-d"}
	for _, tc := range []struct {
		name            string
		compile, parent []string
		want            string
	}{
		{"no profile", []string{"-p", "main"}, nil, ""},
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

// TestGoCommandArgs: the nested build's flags come from the go command that
// runs matrixexec, also when a wrapper runs matrixexec for it.
func TestGoCommandArgs(t *testing.T) {
	procs := map[int]process{
		40: {ppid: 1, exe: "/usr/local/go/bin/go", args: []string{"go", "build", "-tags", "x", "./..."}},
		50: {ppid: 40, exe: "/usr/bin/strace", args: []string{"strace", "-f", "matrixexec", "compile"}},
		60: {ppid: 1, exe: "/usr/bin/bash", args: []string{"bash"}},
		70: {ppid: 60, exe: "/usr/local/go/bin/go", args: []string{"go", "version"}},
		80: {ppid: 1, exe: "", args: []string{"/opt/go/bin/go", "test", "-race", "."}},
	}
	read := func(pid int) (process, error) {
		if p, ok := procs[pid]; ok {
			return p, nil
		}
		return process{}, errors.New("no such process")
	}
	for _, tc := range []struct {
		pid  int
		want []string
	}{
		{40, procs[40].args}, // go runs matrixexec
		{50, procs[40].args}, // through a wrapper
		{70, nil},            // go, but not a command that builds, and no go above
		{80, procs[80].args}, // the program known by its command line only
		{99, nil},            // unreadable
	} {
		if got := goCommandOf(read, tc.pid).args; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("pid %d: %q, want %q", tc.pid, got, tc.want)
		}
	}
	if got := filterBuildFlags(goCommandOf(read, 50).args, ""); !reflect.DeepEqual(got, []string{"-tags=x"}) {
		t.Errorf("build flags through the wrapper: %q", got)
	}
	// This process, read from /proc.
	if runtime.GOOS == "linux" {
		p, err := readProcess(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		wd, _ := os.Getwd()
		if p.ppid != os.Getppid() || !reflect.DeepEqual(p.args, os.Args) || p.exe == "" || p.cwd != wd {
			t.Errorf("readProcess(self) = %+v, want ppid %d args %q", p, os.Getppid(), os.Args)
		}
	}
}
