package main

import (
	"testing"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
)

func TestStartHeapFlag(t *testing.T) {
	compile := func(flags ...string) *toolcmd.Cmd {
		args := append([]string{"/go/pkg/tool/compile", "-p", "example.com/lib"}, flags...)
		c, err := toolcmd.ParseCompile(append(args, "/src/a.go"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		name   string
		c      *toolcmd.Cmd
		growth float64
		env    func(string) string
		want   string
	}{
		{"internal/impl", compile("-goversion", "go1.26.8", "-c=2"), 0.41, noEnv, "-d=gcstart=159"},
		{"go1.27", compile("-goversion", "go1.27.4", "-c=4"), 0.31, noEnv, "-d=gcstart=152"},
		{"capped", compile("-goversion", "go1.26.8", "-c=2"), 3, noEnv, "-d=gcstart=192"},
		{"nothing added", compile("-goversion", "go1.26.8", "-c=2"), 0, noEnv, ""},
		{"too little to matter", compile("-goversion", "go1.26.8", "-c=2"), 0.002, noEnv, ""},
		{"go1.25 has no flag", compile("-goversion", "go1.25.14", "-c=2"), 0.41, noEnv, ""},
		{"no goversion", compile("-c=2"), 0.41, noEnv, ""},
		{"one backend worker", compile("-goversion", "go1.26.8", "-c=1"), 0.41, noEnv, ""},
		{"default concurrency is one worker", compile("-goversion", "go1.26.8"), 0.41, noEnv, ""},
		{"GOGC", compile("-goversion", "go1.26.8", "-c=2"), 0.41, env("GOGC", "200"), ""},
		{"GOMEMLIMIT", compile("-goversion", "go1.26.8", "-c=2"), 0.41, env("GOMEMLIMIT", "1GiB"), ""},
		{"the build's own", compile("-goversion", "go1.26.8", "-c=2", "-d=ssa/check/on,gcstart=300"), 0.41, noEnv, ""},
		{"the build's own, separate", compile("-goversion", "go1.26.8", "-c=2", "-d", "gcstart=300"), 0.41, noEnv, ""},
		{"other debug flags", compile("-goversion", "go1.26.8", "-c=2", "-d=checkptr"), 0.41, noEnv, "-d=gcstart=159"},
	} {
		if got := startHeapFlag(tc.c, tc.growth, tc.env); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func env(key, value string) func(string) string {
	return func(k string) string {
		if k == key {
			return value
		}
		return ""
	}
}

func TestHasStartHeapFlag(t *testing.T) {
	for v, want := range map[string]bool{
		"go1.26.8": true, "go1.26": true, "go1.27rc1": true, "go1.30.1": true,
		"go1.25.14": false, "go1.24": false, "devel +abc": false, "": false,
	} {
		if got := hasStartHeapFlag(v); got != want {
			t.Errorf("hasStartHeapFlag(%q) = %v, want %v", v, got, want)
		}
	}
}
