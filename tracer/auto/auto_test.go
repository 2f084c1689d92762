package auto

import (
	"slices"
	"strings"
	"testing"
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
