package auto

import (
	"slices"
	"strings"
	"testing"
)

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
