// Package otlp sends Matrix issues to an OpenTelemetry collector as traces
// over OTLP/HTTP (protobuf), so that a slow call's tree appears in Jaeger,
// Tempo or any APM, inside the caller's distributed trace when the request
// carried a W3C traceparent.
//
// Each issue of tag Trace_EvilMethod (slow call, LAG, ANR, slow start-up)
// becomes one root span for the dispatch with one child span per call-tree
// node (Spans). The Exporter queues them (bounded), batches them, posts
// them with bounded retries and backoff on its own goroutine, and drops and
// counts what does not fit or cannot be sent: it never blocks the program.
//
// The wire format is the official OTLP protobuf types
// (go.opentelemetry.io/proto/otlp) marshalled with google.golang.org/protobuf;
// a body is a TracesData message, which is wire-identical to the
// collector's ExportTraceServiceRequest.
package otlp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Environment variables of the OpenTelemetry specification that
// ConfigFromEnv reads.
const (
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvHeaders         = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders   = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout         = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout   = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName     = "OTEL_SERVICE_NAME"
	DefaultEndpoint    = "http://localhost:4318"
	TracesPath         = "v1/traces"
	DefaultTimeout     = 10 * time.Second
	DefaultQueueSize   = 256
	DefaultMaxBatch    = 64
	DefaultMaxAttempts = 4
	DefaultBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
	// Protocol is the only OTLP protocol the exporter speaks.
	Protocol = "http/protobuf"
)

// Config configures an Exporter. Zero values mean the defaults.
type Config struct {
	// URL is where traces are posted: the traces endpoint, used as is.
	URL string
	// Headers are added to every request (for example an API key).
	Headers map[string]string
	// Timeout bounds one request. Default DefaultTimeout.
	Timeout time.Duration
	// QueueSize bounds the issues waiting to be sent; more are dropped
	// and counted. Default DefaultQueueSize.
	QueueSize int
	// MaxBatch is the most issues sent in one request. Default
	// DefaultMaxBatch.
	MaxBatch int
	// MaxAttempts bounds the attempts to send one batch (the first one
	// and the retries). Default DefaultMaxAttempts.
	MaxAttempts int
	// Backoff is the wait before the first retry; it doubles on each
	// retry up to MaxBackoff (a server's Retry-After is honoured up to
	// MaxBackoff too). Defaults DefaultBackoff and DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Resource describes the process (service.name).
	Resource Resource
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	return c
}

// ConfigFromEnv reads the standard OTLP exporter variables (getenv is
// os.Getenv, or a stub in tests), following the OpenTelemetry
// specification:
//
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the traces URL, used as is
//	OTEL_EXPORTER_OTLP_ENDPOINT         base URL; "v1/traces" is appended to
//	                                    its path (default http://localhost:4318)
//	OTEL_EXPORTER_OTLP_TRACES_HEADERS,
//	OTEL_EXPORTER_OTLP_HEADERS          "key=value,key2=value2", values
//	                                    URL-decoded; the traces variable wins
//	OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
//	OTEL_EXPORTER_OTLP_TIMEOUT          per-request timeout in ms (default 10000)
//	OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
//	OTEL_EXPORTER_OTLP_PROTOCOL         must be http/protobuf when set
//	OTEL_SERVICE_NAME                   service.name of the spans
//
// Every bad value is reported, each naming its variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }

	if v := get(EnvTracesEndpoint); v != "" {
		if err := checkURL(v); err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s=%q: %w", EnvTracesEndpoint, v, err))
		}
		cfg.URL = v
	} else {
		base, name := get(EnvEndpoint), EnvEndpoint
		if base == "" {
			base = DefaultEndpoint
		}
		u, err := TracesURL(base)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s=%q: %w", name, base, err))
		}
		cfg.URL = u
	}

	hname, hv := EnvTracesHeaders, get(EnvTracesHeaders)
	if hv == "" {
		hname, hv = EnvHeaders, get(EnvHeaders)
	}
	if hv != "" {
		h, err := ParseHeaders(hv)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s: %w", hname, err))
		}
		cfg.Headers = h
	}

	tname, tv := EnvTracesTimeout, get(EnvTracesTimeout)
	if tv == "" {
		tname, tv = EnvTimeout, get(EnvTimeout)
	}
	if tv != "" {
		ms, err := strconv.ParseInt(tv, 10, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("otlp: %s=%q: not an integer (ms): %w", tname, tv, err))
		case ms <= 0 || ms > 3600_000:
			errs = append(errs, fmt.Errorf("otlp: %s=%q: out of range 1..3600000 ms", tname, tv))
		default:
			cfg.Timeout = time.Duration(ms) * time.Millisecond
		}
	}

	for _, name := range []string{EnvTracesProtocol, EnvProtocol} {
		if v := get(name); v != "" {
			if v != Protocol {
				errs = append(errs, fmt.Errorf("otlp: %s=%q: only %s is supported", name, v, Protocol))
			}
			break
		}
	}
	cfg.Resource.ServiceName = get(EnvServiceName)
	return cfg, errors.Join(errs...)
}

// TracesURL returns the traces URL of a base OTLP/HTTP endpoint: the
// base with "v1/traces" appended to its path ("http://c:4318" and
// "http://c:4318/" both give "http://c:4318/v1/traces").
func TracesURL(base string) (string, error) {
	if err := checkURL(base); err != nil {
		return "", err
	}
	u, _ := url.Parse(base)
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if u.RawPath != "" && !strings.HasSuffix(u.RawPath, "/") {
		u.RawPath += "/"
	}
	u.Path += TracesPath
	if u.RawPath != "" {
		u.RawPath += TracesPath
	}
	return u.String(), nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("want an http:// or https:// URL")
	}
	if u.Host == "" {
		return errors.New("URL has no host")
	}
	return nil
}

// ParseHeaders parses an OTEL_EXPORTER_OTLP_HEADERS value: comma-separated
// key=value pairs, with surrounding spaces trimmed and keys and values
// URL-decoded (percent-encoding).
func ParseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	var errs []error
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q: want key=value", pair))
			continue
		}
		key, err1 := url.PathUnescape(strings.TrimSpace(k))
		val, err2 := url.PathUnescape(strings.TrimSpace(v))
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", pair, err))
			continue
		}
		if key == "" || strings.ContainsAny(key, " \t\r\n:") {
			errs = append(errs, fmt.Errorf("%q: bad header name", pair))
			continue
		}
		if strings.ContainsAny(val, "\r\n") {
			errs = append(errs, fmt.Errorf("%q: header value has a line break", pair))
			continue
		}
		h[key] = val
	}
	return h, errors.Join(errs...)
}
