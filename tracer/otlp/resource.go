package otlp

import (
	"crypto/sha256"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/matrixgo/matrix/internal/modversion"
	"github.com/matrixgo/matrix/internal/self"
	"github.com/matrixgo/matrix/internal/uuidv4"
)

// SchemaURL is the version of the OpenTelemetry semantic conventions the
// spans and the resource follow (code.function.name and friends are from
// 1.30 on).
const SchemaURL = "https://opentelemetry.io/schemas/1.34.0"

// SDKName is the telemetry.sdk.name of the spans: Matrix exports them, not
// the OpenTelemetry SDK.
const SDKName = "matrix"

// modulePath is the module whose version is the scope's and the SDK's.
const modulePath = self.Module

// Resource describes the process the spans come from.
type Resource struct {
	// ServiceName is the service.name attribute (OTEL_SERVICE_NAME); empty
	// means service.name from Attributes, else
	// "unknown_service:<process>" (the OpenTelemetry default).
	ServiceName string
	// Attributes are OTEL_RESOURCE_ATTRIBUTES; they win over what was
	// detected.
	Attributes []KeyValue
	// Detected are the attributes of the running process (Detect); nil
	// when exporting report files, whose process is gone.
	Detected []KeyValue
}

// Detect returns the attributes of the running process: service.version
// (the main module's version, when the build knows it),
// service.instance.id (new for each call), host.name and
// process.runtime.*.
func Detect() []KeyValue {
	var out []KeyValue
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		out = append(out, str("service.version", bi.Main.Version))
	}
	out = append(out, str("service.instance.id", uuidv4.Random()))
	if h, err := os.Hostname(); err == nil && h != "" {
		out = append(out, str("host.name", h))
	}
	return append(out, runtimeAttrs(runtime.Version())...)
}

// runtimeAttrs returns the process.runtime.* attributes of a program built
// with Go release version.
func runtimeAttrs(version string) []KeyValue {
	return []KeyValue{str("process.runtime.name", "go"), str("process.runtime.version", version)}
}

// version is this module's version in the running binary, or "devel".
func version() string {
	if v := modversion.Running(modulePath); v != "" {
		return v
	}
	return "devel"
}

// NewResourceSpans wraps spans with the resource of the process that wrote
// r and the exporter's scope (name, version, schema URL). The resource is
// res's detected attributes, the report's process.pid and
// process.executable.name, the telemetry.sdk.* attributes, then
// OTEL_RESOURCE_ATTRIBUTES over them, and service.name. What was not
// detected (everything, for a report file) comes from the report: host.name
// and process.runtime.* are its hostName and goVersion, and
// service.instance.id is derived from its process and pid, so that
// exporting it again gives the same resource.
func NewResourceSpans(r *Report, res Resource, spans []Span) *ResourceSpans {
	var attrs []KeyValue
	index := map[string]int{}
	set := func(kv KeyValue) {
		if kv.Value.kind == valueNone {
			return
		}
		if i, ok := index[kv.Key]; ok {
			attrs[i] = kv
			return
		}
		index[kv.Key] = len(attrs)
		attrs = append(attrs, kv)
	}
	for _, kv := range res.Detected {
		set(kv)
	}
	// What was not detected (all of it for a report file) the report says.
	fill := func(kvs ...KeyValue) {
		if _, ok := index[kvs[0].Key]; !ok {
			for _, kv := range kvs {
				set(kv)
			}
		}
	}
	if r.Process != "" {
		h := sha256.Sum256([]byte("instance/" + r.Process + "/" + strconv.FormatInt(r.PID, 10)))
		fill(str("service.instance.id", uuidv4.Format([16]byte(h[:16]))))
	}
	if r.HostName != "" {
		fill(str("host.name", r.HostName))
	}
	if r.GoVersion != "" {
		fill(runtimeAttrs(r.GoVersion)...)
	}
	set(str("process.executable.name", r.Process))
	set(integer("process.pid", r.PID))
	set(str("telemetry.sdk.name", SDKName))
	set(str("telemetry.sdk.language", "go"))
	v := version()
	set(str("telemetry.sdk.version", v))
	for _, kv := range res.Attributes {
		set(kv)
	}
	name := res.ServiceName
	if name == "" {
		if i, ok := index["service.name"]; ok {
			name = attrs[i].Value.s
		}
	}
	if name == "" {
		name = "unknown_service"
		if r.Process != "" {
			name += ":" + r.Process
		}
	}
	set(str("service.name", name))
	return &ResourceSpans{Resource: attrs, Scope: ScopeName, ScopeVersion: v, SchemaURL: SchemaURL, Spans: spans}
}
