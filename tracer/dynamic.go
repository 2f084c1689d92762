package tracer

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DynamicConfig is configuration consulted while the tracers run, Matrix's
// IDynamicConfig: a tracer asks for its keys on every check (the ANR
// watchdog on every tick), so a value changed at run time takes effect
// without restarting the plugin. Get returns the value of key and whether
// it is set; a key that is not set, or whose value does not parse, leaves
// the value given in code (TraceConfig, or a tracer's setters) in force.
//
// Get is called from the tracers' own goroutines, never from a dispatching
// goroutine; it must be safe for concurrent use and should be quick (a map
// lookup, not a network call).
//
// Keys (the Dyn* constants):
//
//	lag_ms       LAG threshold of the ANR watchdog, ms (integer >= 1)
//	anr_ms       ANR threshold of the ANR watchdog, ms (integer >= 1)
//	anr_enabled  ANR watchdog on or off (on/off, true/false, 1/0, yes/no)
type DynamicConfig interface {
	// Get returns the value of key and whether it is set.
	Get(key string) (string, bool)
}

// Keys of DynamicConfig.
const (
	// DynLagMs is the LAG threshold in ms.
	DynLagMs = "lag_ms"
	// DynANRMs is the ANR threshold in ms.
	DynANRMs = "anr_ms"
	// DynANREnabled switches the ANR watchdog on or off.
	DynANREnabled = "anr_enabled"
)

// DynamicConfigFunc adapts a function to DynamicConfig.
type DynamicConfigFunc func(key string) (string, bool)

// Get calls f(key).
func (f DynamicConfigFunc) Get(key string) (string, bool) { return f(key) }

// envAliases maps dynamic keys to the environment variables that
// ConfigFromEnv also reads, so one variable controls both.
var envAliases = map[string]string{
	DynLagMs:      EnvLagMs,
	DynANRMs:      EnvANRMs,
	DynANREnabled: EnvANR,
}

// EnvDynamicConfig returns the environment-backed DynamicConfig (getenv is
// os.Getenv, or a stub in tests). The keys lag_ms, anr_ms and anr_enabled
// read MATRIX_LAG_MS, MATRIX_ANR_MS and MATRIX_ANR; any other key k reads
// MATRIX_<K> (upper case). An empty variable is not set. ConfigFromEnv
// installs it as TraceConfig.Dynamic, so in zero-code mode a program can
// retune the watchdog with os.Setenv while it runs.
func EnvDynamicConfig(getenv func(string) string) DynamicConfig {
	return DynamicConfigFunc(func(key string) (string, bool) {
		name, ok := envAliases[key]
		if !ok {
			name = "MATRIX_" + strings.ToUpper(key)
		}
		v := strings.TrimSpace(getenv(name))
		return v, v != ""
	})
}

// parseSwitch parses on/off, true/false, 1/0 and yes/no (any case).
func parseSwitch(v string) (on, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "1", "yes":
		return true, true
	case "off", "false", "0", "no":
		return false, true
	}
	return false, false
}

// dynParser returns the parser of dc's values, the parser of the
// environment's: a key is parsed as the variable it stands for would be. A
// bad value leaves the setting in force; the parser's errors are not
// reported.
func dynParser(dc DynamicConfig) *envParser {
	return &envParser{getenv: func(key string) string {
		v, _ := safeGet(dc, key)
		return v
	}}
}

// dynMillis returns the duration in ms under key, if dc has a valid one
// (an integer from 1 to maxEnvThresholdMs, as envParser.msVar reads).
func dynMillis(dc DynamicConfig, key string) (d time.Duration, ok bool) {
	if dc == nil {
		return 0, false
	}
	ok = dynParser(dc).msVar(key, &d)
	return d, ok
}

// dynSwitch returns the switch under key, if dc has a valid one (as
// envParser.switchVar reads).
func dynSwitch(dc DynamicConfig, key string) (on, ok bool) {
	if dc == nil {
		return false, false
	}
	ok = dynParser(dc).switchVar(key, &on)
	return on, ok
}

// safeGet calls dc.Get, treating a panic as "not set": a broken
// configuration source must not take the tracer (or the program) down.
func safeGet(dc DynamicConfig, key string) (v string, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = "", false
		}
	}()
	return dc.Get(key)
}

// storeThreshold stores d in a tracer's run-time setting, or def if d <= 0.
func storeThreshold(a *atomic.Int64, d, def time.Duration) {
	if d <= 0 {
		d = def
	}
	a.Store(int64(d))
}

// envParser reads configuration variables (the one parser of ConfigFromEnv
// and the tracers' settings): an unset or empty variable leaves its
// setting alone, and every bad value is collected, naming its variable.
type envParser struct {
	getenv func(string) string
	errs   []error
}

// lookup returns the trimmed value of name, "" if unset.
func (p *envParser) lookup(name string) string { return strings.TrimSpace(p.getenv(name)) }

// switchVar applies an on/off variable (see parseSwitch) to dst, and
// reports whether it did.
func (p *envParser) switchVar(name string, dst *bool) bool {
	v := p.lookup(name)
	if v == "" {
		return false
	}
	on, ok := parseSwitch(v)
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("tracer: %s=%q: want on or off", name, v))
		return false
	}
	*dst = on
	return true
}

// intVar applies an integer variable in lo..hi to dst, and reports whether
// it did.
func (p *envParser) intVar(name string, lo, hi int, dst *int) bool {
	v := p.lookup(name)
	if v == "" {
		return false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("tracer: %s=%q: not an integer: %w", name, v, err))
		return false
	}
	if n < lo || n > hi {
		p.errs = append(p.errs, fmt.Errorf("tracer: %s=%q: out of range %d..%d", name, v, lo, hi))
		return false
	}
	*dst = n
	return true
}

// msVar applies a millisecond variable (1..maxEnvThresholdMs) to dst, and
// reports whether it did.
func (p *envParser) msVar(name string, dst *time.Duration) bool {
	var n int
	if !p.intVar(name, 1, maxEnvThresholdMs, &n) {
		return false
	}
	*dst = time.Duration(n) * time.Millisecond
	return true
}
