package tracer

import (
	"strconv"
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
		"MATRIX_RECORD_MEMORY_MB":  "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EvilMethod || cfg.EvilThreshold != 250*time.Millisecond || cfg.Beat.BufferSize != 4096 ||
		cfg.Beat.MaxBuffers != 8 || cfg.QueueSize != 32 || cfg.Beat.MaxChildren != 3 || cfg.Beat.ChildBufferSize != 512 ||
		cfg.Beat.RecordMemory != 3<<20 {
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

func TestConfigFromEnvRepeats(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		calls, pct int
		bad        bool
	}{
		{nil, DefaultRepeatMinCalls, DefaultRepeatMinPercent, false},
		{map[string]string{"MATRIX_REPEAT_MIN_CALLS": "25", "MATRIX_REPEAT_MIN_PERCENT": "5"}, 25, 5, false},
		{map[string]string{"MATRIX_REPEAT_MIN_CALLS": "0"}, -1, DefaultRepeatMinPercent, false},
		{map[string]string{"MATRIX_REPEAT_MIN_CALLS": "many", "MATRIX_REPEAT_MIN_PERCENT": "101"}, DefaultRepeatMinCalls, DefaultRepeatMinPercent, true},
		{map[string]string{"MATRIX_REPEAT_MIN_PERCENT": "0"}, DefaultRepeatMinCalls, DefaultRepeatMinPercent, true},
	} {
		cfg, err := ConfigFromEnv(env(tc.env))
		if (err != nil) != tc.bad || cfg.Repeats.MinCalls != tc.calls || cfg.Repeats.MinPercent != tc.pct {
			t.Errorf("%v: %+v, %v", tc.env, cfg.Repeats, err)
		}
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
		{"MATRIX_RECORD_MEMORY_MB", "0"},
		{"MATRIX_RECORD_MEMORY_MB", "64MiB"},
		{"MATRIX_RECORD_MEMORY_MB", "100000"},
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
	// A bad value leaves its own setting at the default, and only it.
	cfg, err := ConfigFromEnv(env(map[string]string{"MATRIX_EVIL_THRESHOLD_MS": "abc", "MATRIX_QUEUE_SIZE": "32"}))
	if err == nil || cfg.EvilThreshold != DefaultEvilThreshold || !cfg.EvilMethod || cfg.QueueSize != 32 {
		t.Errorf("one bad variable: %+v, %v", cfg, err)
	}
	// Every bad variable is reported.
	_, err = ConfigFromEnv(env(map[string]string{"MATRIX_QUEUE_SIZE": "x", "MATRIX_MAX_BUFFERS": "y"}))
	if err == nil || !strings.Contains(err.Error(), "MATRIX_QUEUE_SIZE") || !strings.Contains(err.Error(), "MATRIX_MAX_BUFFERS") {
		t.Errorf("two bad variables: %v", err)
	}
}

// TestDynamicParsesAsEnv: a dynamic key's value is read as the environment
// variable it stands for: the same values are taken, and the same left out.
func TestDynamicParsesAsEnv(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		v    string
		want time.Duration // 0: left out
	}{
		{"", 0}, {" ", 0}, {"250", ms(250)}, {" 250 ", ms(250)}, {"0", 0}, {"-5", 0}, {"1", ms(1)}, {"x", 0}, {"1.5", 0},
		{strconv.Itoa(maxEnvThresholdMs), ms(maxEnvThresholdMs)}, {strconv.Itoa(maxEnvThresholdMs + 1), 0},
	} {
		dc := DynamicConfigFunc(func(string) (string, bool) { return c.v, true })
		if got, ok := dynMillis(dc, DynLagMs); got != c.want || ok != (c.want != 0) {
			t.Errorf("dynMillis(%q) = %v, %v; want %v", c.v, got, ok, c.want)
		}
		cfg, err := ConfigFromEnv(env(map[string]string{EnvLagMs: c.v}))
		if c.want != 0 && (err != nil || cfg.Watchdog.Lag != c.want) {
			t.Errorf("%s=%q: lag %v (%v), want %v", EnvLagMs, c.v, cfg.Watchdog.Lag, err, c.want)
		}
	}
	for _, c := range []struct {
		v       string
		on, set bool
	}{{"", false, false}, {"on", true, true}, {" OFF ", false, true}, {"yes", true, true}, {"0", false, true}, {"maybe", false, false}} {
		dc := DynamicConfigFunc(func(string) (string, bool) { return c.v, true })
		if on, ok := dynSwitch(dc, DynANREnabled); on != c.on || ok != c.set {
			t.Errorf("dynSwitch(%q) = %v, %v; want %v, %v", c.v, on, ok, c.on, c.set)
		}
	}
	// A broken source, or none, is not set.
	broken := DynamicConfigFunc(func(string) (string, bool) { panic("broken") })
	if _, ok := dynMillis(broken, DynLagMs); ok {
		t.Errorf("dynMillis of a panicking source is set")
	}
	if _, ok := dynSwitch(nil, DynANREnabled); ok {
		t.Errorf("dynSwitch of no source is set")
	}
}

// MATRIX_PROPAGATE turns off the trace context net/http's client passes
// on, which is on by default.
func TestConfigFromEnvPropagate(t *testing.T) {
	for _, tc := range []struct {
		v    string
		none bool
	}{{"", false}, {"on", false}, {"off", true}, {"0", true}} {
		cfg, err := ConfigFromEnv(env(map[string]string{EnvPropagate: tc.v}))
		if err != nil || cfg.Beat.NoPropagation != tc.none {
			t.Errorf("MATRIX_PROPAGATE=%q: NoPropagation %v, %v", tc.v, cfg.Beat.NoPropagation, err)
		}
	}
	if _, err := ConfigFromEnv(env(map[string]string{EnvPropagate: "maybe"})); err == nil || !strings.Contains(err.Error(), EnvPropagate) {
		t.Errorf("a bad MATRIX_PROPAGATE: %v", err)
	}
}
