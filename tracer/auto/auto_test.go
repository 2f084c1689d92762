package auto

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

func TestStartRejectsBadOTLPConfig(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}
	_, _, _, err := start("otlp", func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("err %v", err)
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

// startFor runs start and fails the test if it blocks; in a binary that
// is not instrumented it gets as far as starting the plugin, which fails
// with beat.ErrNotInstrumented: that error means everything before went
// through.
func startFor(t *testing.T, target string, env map[string]string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		m, exp, closers, err := start(target, func(k string) string { return env[k] })
		if err == nil {
			m.StopAllPlugins()
			for _, c := range closers {
				c.Close()
			}
			if exp != nil {
				exp.Close(0)
			}
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
