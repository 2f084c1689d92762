package autostart

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer"
)

func TestReportTargetIgnoredInSecureMode(t *testing.T) {
	env := map[string]string{EnvReport: "/tmp/report.jsonl"}
	getenv := func(k string) string { return env[k] }
	if got := reportTarget(getenv, func() bool { return false }); got != "/tmp/report.jsonl" {
		t.Errorf("reportTarget = %q, want MATRIX_REPORT", got)
	}
	if got := reportTarget(getenv, func() bool { return true }); got != "" {
		t.Errorf("reportTarget in secure mode = %q, want it ignored", got)
	}
	env = nil
	if got := reportTarget(getenv, func() bool { return false }); got != "" {
		t.Errorf("reportTarget without MATRIX_REPORT = %q", got)
	}
}

func TestSinks(t *testing.T) {
	for target, want := range map[string][]string{
		"stderr":                   {"stderr"},
		"/tmp/r.jsonl":             {"/tmp/r.jsonl"},
		"otlp":                     {"otlp"},
		" /tmp/r.jsonl , otlp ":    {"/tmp/r.jsonl", "otlp"},
		"stderr,otlp,/var/x.jsonl": {"stderr", "otlp", "/var/x.jsonl"},
	} {
		got, err := Sinks(target)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Sinks(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
	for target, want := range map[string]string{
		"stderr,":          "empty sink",
		",otlp":            "empty sink",
		"otlp,otlp":        `sink "otlp" listed twice`,
		"a.jsonl, a.jsonl": `sink "a.jsonl" listed twice`,
	} {
		if _, err := Sinks(target); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Sinks(%q): err %v, want %q", target, err, want)
		}
	}
}

// captureStderr runs f with os.Stderr going to a file, and returns what f
// printed there.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	tmp, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	saved := os.Stderr
	os.Stderr = tmp
	defer func() { os.Stderr = saved }()
	f()
	data, err := os.ReadFile(tmp.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// startFor runs Start, without an OTLP sink, and fails the test if it blocks; in a binary that
// is not instrumented it gets as far as starting the plugin, which fails
// with beat.ErrNotInstrumented: that error means everything before went
// through.
func startFor(t *testing.T, target string, env map[string]string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		m, set, err := Start(target, func(k string) string { return env[k] }, os.Stderr, nil)
		if err == nil {
			m.StopAllPlugins()
			set.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if errors.Is(err, beat.ErrNotInstrumented) {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("start(%q) blocks", target)
		return nil
	}
}

// TestStartBadVariable: a bad value turns off that one setting, with one
// warning naming it; tracing starts with everything else.
func TestStartBadVariable(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.jsonl")
	var err error
	msgs := captureStderr(t, func() {
		err = startFor(t, report, map[string]string{"MATRIX_EVIL_THRESHOLD_MS": "abc", "MATRIX_LAG_MS": "500"})
	})
	if err != nil {
		t.Fatalf("tracing not started: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(msgs, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], `matrix: tracer: MATRIX_EVIL_THRESHOLD_MS="abc": not an integer`) ||
		!strings.HasSuffix(lines[0], "the setting keeps its default") {
		t.Errorf("stderr %q, want one warning naming MATRIX_EVIL_THRESHOLD_MS", msgs)
	}
	cfg, _ := tracer.ConfigFromEnv(func(k string) string {
		return map[string]string{"MATRIX_EVIL_THRESHOLD_MS": "abc", "MATRIX_LAG_MS": "500"}[k]
	})
	if !cfg.EvilMethod || cfg.EvilThreshold != tracer.DefaultEvilThreshold || !cfg.ANR || cfg.Watchdog.Lag != 500*time.Millisecond {
		t.Errorf("config with one bad variable: %+v", cfg)
	}
}

// In a program without the OTLP sink (tracer/auto/local), an otlp sink is
// left out with one line saying how to build the program with it; the
// other sinks get the reports, and alone it leaves the program untraced.
func TestOTLPSinkNotLinked(t *testing.T) {
	dir := t.TempDir()
	var warn strings.Builder
	_, set, err := Setup(filepath.Join(dir, "r.jsonl")+",otlp", func(string) string { return "" }, &warn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Remote() != nil || len(set.Listeners()) != 1 {
		t.Errorf("remote %v, %d listeners: want the file sink alone", set.Remote(), len(set.Listeners()))
	}
	want := "matrix: sink otlp: this program was built without the OTLP sink; build it with MATRIX_OTLP=on in matrixexec's environment, " +
		"or import _ \"github.com/matrixgo/matrix/tracer/auto\" in package main; reports go to the other sinks of MATRIX_REPORT\n"
	if warn.String() != want {
		t.Errorf("warning %q, want %q", warn.String(), want)
	}
	if _, _, err := Setup("otlp", func(string) string { return "" }, &warn, nil); !errors.Is(err, ErrNoOTLP) {
		t.Errorf("otlp alone: err %v, want ErrNoOTLP", err)
	}
}
