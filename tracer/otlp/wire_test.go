package otlp

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestFieldNumbers: the field numbers the encoder uses are those of
// testdata/fields.txt ("message field number" lines), which the
// integration module's otlp tests check against the official OTLP
// descriptors.
func TestFieldNumbers(t *testing.T) {
	used := map[string]int{
		"opentelemetry.proto.trace.v1.TracesData resource_spans":                          fieldTracesDataResourceSpans,
		"opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest resource_spans": fieldTracesDataResourceSpans,
		"opentelemetry.proto.trace.v1.ResourceSpans resource":                             fieldResourceSpansResource,
		"opentelemetry.proto.trace.v1.ResourceSpans scope_spans":                          fieldResourceSpansScopeSpans,
		"opentelemetry.proto.resource.v1.Resource attributes":                             fieldResourceAttributes,
		"opentelemetry.proto.trace.v1.ScopeSpans scope":                                   fieldScopeSpansScope,
		"opentelemetry.proto.trace.v1.ScopeSpans spans":                                   fieldScopeSpansSpans,
		"opentelemetry.proto.common.v1.InstrumentationScope name":                         fieldScopeName,
		"opentelemetry.proto.common.v1.InstrumentationScope version":                      fieldScopeVersion,
		"opentelemetry.proto.trace.v1.Span trace_id":                                      fieldSpanTraceID,
		"opentelemetry.proto.trace.v1.Span trace_state":                                   fieldSpanTraceState,
		"opentelemetry.proto.trace.v1.Span span_id":                                       fieldSpanSpanID,
		"opentelemetry.proto.trace.v1.Span parent_span_id":                                fieldSpanParentSpanID,
		"opentelemetry.proto.trace.v1.Span name":                                          fieldSpanName,
		"opentelemetry.proto.trace.v1.Span kind":                                          fieldSpanKind,
		"opentelemetry.proto.trace.v1.Span start_time_unix_nano":                          fieldSpanStart,
		"opentelemetry.proto.trace.v1.Span end_time_unix_nano":                            fieldSpanEnd,
		"opentelemetry.proto.trace.v1.Span attributes":                                    fieldSpanAttributes,
		"opentelemetry.proto.trace.v1.Span flags":                                         fieldSpanFlags,
		"opentelemetry.proto.trace.v1.Span events":                                        fieldSpanEvents,
		"opentelemetry.proto.trace.v1.Span status":                                        fieldSpanStatus,
		"opentelemetry.proto.trace.v1.Span.Event time_unix_nano":                          fieldEventTime,
		"opentelemetry.proto.trace.v1.Span.Event name":                                    fieldEventName,
		"opentelemetry.proto.trace.v1.Span.Event attributes":                              fieldEventAttributes,
		"opentelemetry.proto.trace.v1.Status code":                                        fieldStatusCode,
		"opentelemetry.proto.trace.v1.ResourceSpans schema_url":                           fieldResourceSpansSchemaURL,
		"opentelemetry.proto.trace.v1.ScopeSpans schema_url":                              fieldScopeSpansSchemaURL,
		"opentelemetry.proto.common.v1.KeyValue key":                                      fieldKeyValueKey,
		"opentelemetry.proto.common.v1.KeyValue value":                                    fieldKeyValueValue,
		"opentelemetry.proto.common.v1.AnyValue string_value":                             fieldAnyString,
		"opentelemetry.proto.common.v1.AnyValue bool_value":                               fieldAnyBool,
		"opentelemetry.proto.common.v1.AnyValue int_value":                                fieldAnyInt,
		"opentelemetry.proto.common.v1.AnyValue double_value":                             fieldAnyDouble,
	}
	data, err := os.ReadFile("testdata/fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		n, err := strconv.Atoi(f[2])
		if len(f) != 3 || err != nil {
			t.Fatalf("testdata/fields.txt: %q is not \"message field number\"", line)
		}
		listed++
		if got, ok := used[f[0]+" "+f[1]]; !ok || got != n {
			t.Errorf("%s.%s: the encoder uses %d (%v), testdata/fields.txt says %d", f[0], f[1], got, ok, n)
		}
	}
	if listed != len(used) {
		t.Errorf("testdata/fields.txt lists %d fields, the encoder uses %d", listed, len(used))
	}
	for name, want := range map[string]int{
		"SPAN_KIND_INTERNAL": SpanKindInternal, "SPAN_KIND_SERVER": SpanKindServer, "SPAN_KIND_CLIENT": SpanKindClient,
		"SPAN_KIND_PRODUCER": SpanKindProducer, "SPAN_KIND_CONSUMER": SpanKindConsumer,
		"STATUS_CODE_ERROR": StatusError, "STATUS_CODE_UNSET": StatusUnset,
		"SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK": FlagHasIsRemote, "SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK": FlagIsRemote,
	} {
		if !strings.Contains(string(data), "\n# "+name+" "+strconv.Itoa(want)+"\n") {
			t.Errorf("testdata/fields.txt does not list the enum value %s %d", name, want)
		}
	}
}
