package gocmd

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

func TestParentBuildFlags(t *testing.T) {
	got := FilterBuildFlags([]string{"go", "test", "-v", "-race", "-run", "X", "-tags", "a,b", "-gcflags=all=-N -l", "-pgo=auto", "-count=1", "./...", "-toolexec", "matrixexec -map m"}, "/src")
	want := []string{"-race", "-tags=a,b", "-gcflags=all=-N -l", "-toolexec=matrixexec -map m"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("build flags = %q, want %q", got, want)
	}
	// go run: what follows the package is the program's, not go's; a
	// flag's value is not a package.
	got = FilterBuildFlags([]string{"go", "run", "-o", "out", "-tags", "x", ".", "-race", "-toolexec", "evil"}, "")
	want = []string{"-tags=x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("go run build flags = %q, want %q", got, want)
	}
	// go test: flags after the packages, but nothing after -args.
	got = FilterBuildFlags([]string{"go", "test", "./...", "-race", "-args", "-tags", "y"}, "")
	want = []string{"-race"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("go test build flags = %q, want %q", got, want)
	}
	// File values are relative to the go command's directory: they are
	// made absolute for a nested build that may run elsewhere.
	dir := filepath.FromSlash("/src/mod")
	got = FilterBuildFlags([]string{"go", "build", "-pgo", "cpu.pprof", "-modfile=alt.mod", "-overlay", filepath.FromSlash("/abs/o.json"), "./cmd/x"}, dir)
	want = []string{"-pgo=" + filepath.Join(dir, "cpu.pprof"), "-modfile=" + filepath.Join(dir, "alt.mod"), "-overlay=" + filepath.FromSlash("/abs/o.json")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("file flags = %q, want %q", got, want)
	}
	got = FilterBuildFlags([]string{"go", "build", "-pgo=off", "."}, dir)
	if want = []string{"-pgo=off"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("-pgo=off: %q, want %q", got, want)
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
	if got := FilterBuildFlags(goCommandOf(read, 50).args, ""); !reflect.DeepEqual(got, []string{"-tags=x"}) {
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
