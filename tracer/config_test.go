package tracer

import (
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/beat"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnvDefaults(t *testing.T) {
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.EvilMethod || cfg.EvilThreshold != 700*time.Millisecond || cfg.QueueSize != 256 ||
		cfg.Beat.BufferSize != beat.DefaultBufferSize || cfg.Beat.MaxBuffers != beat.DefaultMaxBuffers ||
		cfg.Beat.MaxChildren != beat.DefaultMaxChildren || cfg.Beat.ChildBufferSize != beat.DefaultChildBufferSize {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestConfigFromEnvValues(t *testing.T) {
	cfg, err := ConfigFromEnv(env(map[string]string{
		"MATRIX_EVIL_THRESHOLD_MS": "250",
		"MATRIX_BUFFER_SIZE":       "4096",
		"MATRIX_MAX_BUFFERS":       " 8 ",
		"MATRIX_QUEUE_SIZE":        "32",
		"MATRIX_EVIL_METHOD":       "OFF",
		"MATRIX_MAX_CHILDREN":      "3",
		"MATRIX_CHILD_BUFFER_SIZE": "512",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EvilMethod || cfg.EvilThreshold != 250*time.Millisecond || cfg.Beat.BufferSize != 4096 ||
		cfg.Beat.MaxBuffers != 8 || cfg.QueueSize != 32 || cfg.Beat.MaxChildren != 3 || cfg.Beat.ChildBufferSize != 512 {
		t.Errorf("got %+v", cfg)
	}
	// MATRIX_MAX_CHILDREN=0 records no goroutine a dispatch starts.
	cfg, err = ConfigFromEnv(env(map[string]string{"MATRIX_MAX_CHILDREN": "0"}))
	if err != nil || cfg.Beat.MaxChildren >= 0 {
		t.Errorf("MATRIX_MAX_CHILDREN=0: MaxChildren %d, %v", cfg.Beat.MaxChildren, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{"MATRIX_EVIL_METHOD": "on"}))
	if err != nil || !cfg.EvilMethod {
		t.Errorf("on: %+v, %v", cfg, err)
	}
}

func TestConfigFromEnvErrors(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"MATRIX_EVIL_THRESHOLD_MS", "fast"},
		{"MATRIX_EVIL_THRESHOLD_MS", "0"},
		{"MATRIX_EVIL_THRESHOLD_MS", "-5"},
		{"MATRIX_EVIL_THRESHOLD_MS", "700ms"},
		{"MATRIX_BUFFER_SIZE", "1e6"},
		{"MATRIX_BUFFER_SIZE", "99999999999"},
		{"MATRIX_MAX_BUFFERS", "0"},
		{"MATRIX_MAX_BUFFERS", "100000"},
		{"MATRIX_MAX_CHILDREN", "-1"},
		{"MATRIX_MAX_CHILDREN", "5000"},
		{"MATRIX_CHILD_BUFFER_SIZE", "0"},
		{"MATRIX_QUEUE_SIZE", "-1"},
		{"MATRIX_EVIL_METHOD", "maybe"},
	} {
		_, err := ConfigFromEnv(env(map[string]string{tc.name: tc.value}))
		if err == nil {
			t.Errorf("%s=%q accepted", tc.name, tc.value)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%q: error %q does not name the variable", tc.name, tc.value, err)
		}
	}
	// Every bad variable is reported.
	_, err := ConfigFromEnv(env(map[string]string{"MATRIX_QUEUE_SIZE": "x", "MATRIX_MAX_BUFFERS": "y"}))
	if err == nil || !strings.Contains(err.Error(), "MATRIX_QUEUE_SIZE") || !strings.Contains(err.Error(), "MATRIX_MAX_BUFFERS") {
		t.Errorf("two bad variables: %v", err)
	}
}
