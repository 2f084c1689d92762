// Package otlp sends Matrix issues to an OpenTelemetry collector as traces
// over OTLP, HTTP (protobuf) or gRPC, so that a slow call's tree appears in
// Jaeger, Tempo or any APM, inside the caller's distributed trace when the
// request carried a W3C traceparent.
//
// Each issue of tag Trace_EvilMethod (slow call, LAG, ANR, slow start-up)
// becomes spans following the OpenTelemetry semantic conventions (Spans).
// The Exporter queues them (bounded), batches them, sends them with bounded
// retries and backoff on its own goroutine, and drops and counts what does
// not fit or cannot be sent: it never blocks the program.
//
// The wire format is that of the official OTLP protobuf types
// (go.opentelemetry.io/proto/otlp), written with encoding/binary's varints;
// a body is a TracesData message, which is wire-identical to the
// collector's ExportTraceServiceRequest. OTLP/HTTP is sent over HTTP/1.1
// with net/http's request writer and answer reader, and gRPC over HTTP/2
// with golang.org/x/net's HPACK, by two small clients of the sink's own
// rather than net/http's Client, whose Transport would be the larger part
// of the sink in every zero-code program (see docs/reports.md, and there
// too for why not the official exporter packages).
package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables of the OpenTelemetry specification that
// ConfigFromEnv reads, and the defaults.
const (
	EnvEndpoint              = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint        = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvHeaders               = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders         = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvTimeout               = "OTEL_EXPORTER_OTLP_TIMEOUT"
	EnvTracesTimeout         = "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
	EnvProtocol              = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol        = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvCompression           = "OTEL_EXPORTER_OTLP_COMPRESSION"
	EnvTracesCompression     = "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"
	EnvCertificate           = "OTEL_EXPORTER_OTLP_CERTIFICATE"
	EnvTracesCertificate     = "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"
	EnvClientCertificate     = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
	EnvTracesClientCert      = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"
	EnvClientKey             = "OTEL_EXPORTER_OTLP_CLIENT_KEY"
	EnvTracesClientKey       = "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"
	EnvInsecure              = "OTEL_EXPORTER_OTLP_INSECURE"
	EnvTracesInsecure        = "OTEL_EXPORTER_OTLP_TRACES_INSECURE"
	EnvServiceName           = "OTEL_SERVICE_NAME"
	EnvResourceAttributes    = "OTEL_RESOURCE_ATTRIBUTES"
	EnvSDKDisabled           = "OTEL_SDK_DISABLED"
	DefaultEndpoint          = "http://localhost:4318"
	DefaultGRPCEndpoint      = "http://localhost:4317"
	TracesPath               = "v1/traces"
	DefaultTimeout           = 10 * time.Second
	DefaultQueueSize         = 256
	DefaultMaxBatch          = 64
	DefaultMaxAttempts       = 4
	DefaultBackoff           = 500 * time.Millisecond
	DefaultMaxBackoff        = 5 * time.Second
	ProtocolHTTPProtobuf     = "http/protobuf"
	ProtocolGRPC             = "grpc"
	CompressionGzip          = "gzip"
	grpcExportPath           = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	maxResourceAttributeSize = 4096
)

// ErrDisabled is returned by ConfigFromEnv when OTEL_SDK_DISABLED is true.
var ErrDisabled = errors.New("otlp: " + EnvSDKDisabled + "=true: OTLP export is disabled")

// Config configures an Exporter. Zero values mean the defaults.
type Config struct {
	// Protocol is ProtocolHTTPProtobuf (the default) or ProtocolGRPC.
	Protocol string
	// URL is where traces are sent: for OTLP/HTTP the traces endpoint,
	// used as is; for gRPC the collector's http:// (plain text HTTP/2) or
	// https:// URL, whose path is ignored.
	URL string
	// Compression is "" or CompressionGzip.
	Compression string
	// TLS configures https endpoints (CA, client certificate); nil means
	// the system's roots.
	TLS *tls.Config
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
	// Resource describes the process.
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
// specification; each traces-specific variable wins over the general one:
//
//	OTEL_EXPORTER_OTLP_PROTOCOL         http/protobuf (default) or grpc
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the traces URL, used as is
//	OTEL_EXPORTER_OTLP_ENDPOINT         base URL; for http/protobuf "v1/traces"
//	                                    is appended to its path (default
//	                                    http://localhost:4318, for grpc
//	                                    http://localhost:4317)
//	OTEL_EXPORTER_OTLP_HEADERS          "key=value,key2=value2", values
//	                                    URL-decoded
//	OTEL_EXPORTER_OTLP_TIMEOUT          per-request timeout in ms (default 10000)
//	OTEL_EXPORTER_OTLP_COMPRESSION      gzip or none
//	OTEL_EXPORTER_OTLP_CERTIFICATE      PEM file of the CAs to trust
//	OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE,
//	OTEL_EXPORTER_OTLP_CLIENT_KEY       PEM files of a client certificate (mTLS)
//	OTEL_EXPORTER_OTLP_INSECURE         true or false: a gRPC endpoint without
//	                                    a scheme (host:port) is plain text when
//	                                    true, TLS otherwise; else the scheme
//	                                    decides (http:// is plain text), and
//	                                    true with https:// is an error
//	OTEL_SERVICE_NAME                   service.name of the spans
//	OTEL_RESOURCE_ATTRIBUTES            "key=value,…" resource attributes,
//	                                    values URL-decoded
//	OTEL_SDK_DISABLED                   true: no export (ErrDisabled)
//
// Every bad value is reported, each naming its variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	// pick returns the traces-specific variable if set, else the general one.
	pick := func(traces, general string) (string, string) {
		if v := get(traces); v != "" {
			return traces, v
		}
		return general, get(general)
	}

	if v := get(EnvSDKDisabled); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s=%q: want true or false", EnvSDKDisabled, v))
		} else if b {
			return cfg, ErrDisabled
		}
	}

	cfg.Protocol = ProtocolHTTPProtobuf
	if name, v := pick(EnvTracesProtocol, EnvProtocol); v != "" {
		switch v {
		case ProtocolHTTPProtobuf, ProtocolGRPC:
			cfg.Protocol = v
		default:
			errs = append(errs, fmt.Errorf("otlp: %s=%q: want %s or %s (http/json is not supported)", name, v, ProtocolHTTPProtobuf, ProtocolGRPC))
		}
	}

	insecureName, insecureValue := pick(EnvTracesInsecure, EnvInsecure)
	insecure := false
	if insecureValue != "" {
		b, err := strconv.ParseBool(insecureValue)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s=%q: want true or false", insecureName, insecureValue))
		}
		insecure = b
	}
	// withScheme gives a gRPC endpoint without a scheme ("collector:4317")
	// the one OTEL_EXPORTER_OTLP_INSECURE says: TLS unless it is true.
	withScheme := func(v string) string {
		if v == "" || cfg.Protocol != ProtocolGRPC || strings.Contains(v, "://") {
			return v
		}
		if insecure {
			return "http://" + v
		}
		return "https://" + v
	}

	if v := withScheme(get(EnvTracesEndpoint)); v != "" {
		if err := checkURL(v); err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s=%q: %w", EnvTracesEndpoint, v, err))
		}
		cfg.URL = v
	} else {
		base, name := withScheme(get(EnvEndpoint)), EnvEndpoint
		if base == "" {
			base = DefaultEndpoint
			if cfg.Protocol == ProtocolGRPC {
				base = DefaultGRPCEndpoint
			}
		}
		u, err := base, checkURL(base)
		if err == nil && cfg.Protocol == ProtocolHTTPProtobuf {
			u, err = TracesURL(base)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s=%q: %w", name, base, err))
		}
		cfg.URL = u
	}
	if insecure && strings.HasPrefix(strings.ToLower(cfg.URL), "https://") {
		errs = append(errs, fmt.Errorf("otlp: %s=%q but the endpoint %s is https://: use an http:// endpoint for plain text", insecureName, insecureValue, cfg.URL))
	}

	if hname, hv := pick(EnvTracesHeaders, EnvHeaders); hv != "" {
		h, err := ParseHeaders(hv)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s: %w", hname, err))
		}
		cfg.Headers = h
	}

	if tname, tv := pick(EnvTracesTimeout, EnvTimeout); tv != "" {
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

	if name, v := pick(EnvTracesCompression, EnvCompression); v != "" {
		switch v {
		case CompressionGzip:
			cfg.Compression = v
		case "none":
		default:
			errs = append(errs, fmt.Errorf("otlp: %s=%q: want gzip or none", name, v))
		}
	}

	tlsCfg, err := tlsFromEnv(pick)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.TLS = tlsCfg

	cfg.Resource.ServiceName = get(EnvServiceName)
	if v := get(EnvResourceAttributes); v != "" {
		attrs, err := ParseResourceAttributes(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s: %w", EnvResourceAttributes, err))
		}
		cfg.Resource.Attributes = attrs
	}
	return cfg, errors.Join(errs...)
}

// tlsFromEnv reads the certificate variables; nil when none is set.
func tlsFromEnv(pick func(traces, general string) (string, string)) (*tls.Config, error) {
	caName, ca := pick(EnvTracesCertificate, EnvCertificate)
	certName, cert := pick(EnvTracesClientCert, EnvClientCertificate)
	keyName, key := pick(EnvTracesClientKey, EnvClientKey)
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var errs []error
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s: %w", caName, err))
		} else {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("otlp: %s=%q: no PEM certificate in the file", caName, ca))
			}
			cfg.RootCAs = pool
		}
	}
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			errs = append(errs, fmt.Errorf("otlp: %s, %s: %w", certName, keyName, err))
		} else {
			cfg.Certificates = []tls.Certificate{pair}
		}
	case cert != "":
		errs = append(errs, fmt.Errorf("otlp: %s is set without %s", certName, keyName))
	case key != "":
		errs = append(errs, fmt.Errorf("otlp: %s is set without %s", keyName, certName))
	}
	return cfg, errors.Join(errs...)
}

// ParseResourceAttributes parses an OTEL_RESOURCE_ATTRIBUTES value:
// comma-separated key=value pairs, keys and values URL-decoded, as string
// attributes in their order.
func ParseResourceAttributes(s string) ([]KeyValue, error) {
	if len(s) > maxResourceAttributeSize {
		return nil, fmt.Errorf("longer than %d bytes", maxResourceAttributeSize)
	}
	var out []KeyValue
	err := parsePairs(s, func(key, val string) error {
		if key == "" {
			return errors.New("empty key")
		}
		out = append(out, KeyValue{Key: key, Value: String(val)})
		return nil
	})
	return out, err
}

// parsePairs parses the comma-separated key=value pairs of an OTEL_*
// variable, with surrounding spaces trimmed and keys and values URL-decoded
// (percent-encoding), and calls add with each. Every pair that cannot be
// parsed, or that add refuses, is an error naming it; the others are added.
func parsePairs(s string, add func(key, val string) error) error {
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
		err := errors.Join(err1, err2)
		if err == nil {
			err = add(key, val)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", pair, err))
		}
	}
	return errors.Join(errs...)
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
	err := parsePairs(s, func(key, val string) error {
		if key == "" || strings.ContainsAny(key, " \t\r\n:") {
			return errors.New("bad header name")
		}
		if strings.ContainsAny(val, "\r\n") {
			return errors.New("header value has a line break")
		}
		h[key] = val
		return nil
	})
	return h, err
}
