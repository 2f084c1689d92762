package otlp

import (
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The field numbers the encoder uses are those of the official OTLP
// descriptors.
func TestFieldNumbers(t *testing.T) {
	type f struct {
		msg   proto.Message
		field string
		num   int
	}
	for _, c := range []f{
		{&tracepb.TracesData{}, "resource_spans", fieldTracesDataResourceSpans},
		{&collectortrace.ExportTraceServiceRequest{}, "resource_spans", fieldTracesDataResourceSpans},
		{&tracepb.ResourceSpans{}, "resource", fieldResourceSpansResource},
		{&tracepb.ResourceSpans{}, "scope_spans", fieldResourceSpansScopeSpans},
		{&resourcepb.Resource{}, "attributes", fieldResourceAttributes},
		{&tracepb.ScopeSpans{}, "scope", fieldScopeSpansScope},
		{&tracepb.ScopeSpans{}, "spans", fieldScopeSpansSpans},
		{&commonpb.InstrumentationScope{}, "name", fieldScopeName},
		{&commonpb.InstrumentationScope{}, "version", fieldScopeVersion},
		{&tracepb.Span{}, "trace_id", fieldSpanTraceID},
		{&tracepb.Span{}, "trace_state", fieldSpanTraceState},
		{&tracepb.Span{}, "span_id", fieldSpanSpanID},
		{&tracepb.Span{}, "parent_span_id", fieldSpanParentSpanID},
		{&tracepb.Span{}, "name", fieldSpanName},
		{&tracepb.Span{}, "kind", fieldSpanKind},
		{&tracepb.Span{}, "start_time_unix_nano", fieldSpanStart},
		{&tracepb.Span{}, "end_time_unix_nano", fieldSpanEnd},
		{&tracepb.Span{}, "attributes", fieldSpanAttributes},
		{&tracepb.Span{}, "flags", fieldSpanFlags},
		{&tracepb.Span{}, "events", fieldSpanEvents},
		{&tracepb.Span{}, "status", fieldSpanStatus},
		{&tracepb.Span_Event{}, "time_unix_nano", fieldEventTime},
		{&tracepb.Span_Event{}, "name", fieldEventName},
		{&tracepb.Span_Event{}, "attributes", fieldEventAttributes},
		{&tracepb.Status{}, "code", fieldStatusCode},
		{&tracepb.ResourceSpans{}, "schema_url", fieldResourceSpansSchemaURL},
		{&tracepb.ScopeSpans{}, "schema_url", fieldScopeSpansSchemaURL},
		{&commonpb.KeyValue{}, "key", fieldKeyValueKey},
		{&commonpb.KeyValue{}, "value", fieldKeyValueValue},
		{&commonpb.AnyValue{}, "string_value", fieldAnyString},
		{&commonpb.AnyValue{}, "bool_value", fieldAnyBool},
		{&commonpb.AnyValue{}, "int_value", fieldAnyInt},
		{&commonpb.AnyValue{}, "double_value", fieldAnyDouble},
	} {
		fd := c.msg.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(c.field))
		if fd == nil || int(fd.Number()) != c.num {
			t.Errorf("%s.%s: descriptor %v, encoder uses %d", c.msg.ProtoReflect().Descriptor().FullName(), c.field, fd, c.num)
		}
	}
	if SpanKindInternal != int(tracepb.Span_SPAN_KIND_INTERNAL) ||
		SpanKindServer != int(tracepb.Span_SPAN_KIND_SERVER) ||
		SpanKindClient != int(tracepb.Span_SPAN_KIND_CLIENT) ||
		SpanKindProducer != int(tracepb.Span_SPAN_KIND_PRODUCER) ||
		SpanKindConsumer != int(tracepb.Span_SPAN_KIND_CONSUMER) ||
		StatusError != int(tracepb.Status_STATUS_CODE_ERROR) ||
		StatusUnset != int(tracepb.Status_STATUS_CODE_UNSET) ||
		FlagHasIsRemote != int(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK) ||
		FlagIsRemote != int(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK) {
		t.Error("enum values differ from the official ones")
	}
}

// Encode's output decodes with the official types into the message they
// would have built, for every kind of value and for lengths that need
// multi-byte varints.
func TestEncodeMatchesOfficialTypes(t *testing.T) {
	long := strings.Repeat("x", 300)
	sp := Span{
		TraceID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: [8]byte{9, 9, 9, 9, 9, 9, 9, 9},
		ParentSpanID: [8]byte{7, 7, 7, 7, 7, 7, 7, 7}, HasParent: true, TraceState: "congo=t61rcWkgMzE", Name: long, Kind: SpanKindInternal,
		Flags: FlagHasIsRemote | FlagIsRemote | 1, Start: 1 << 60, End: 1<<60 + 5,
		Attributes: []KeyValue{{"s", String("v")}, {"empty", String("")}, {"i", Int(-42)}, {"b", Bool(true)}, {"f", Bool(false)}, {"d", Double(2.5)}, {"long", String(long)}},
	}
	child := Span{TraceID: sp.TraceID, SpanID: [8]byte{1}, ParentSpanID: sp.SpanID, HasParent: true, Name: "c", Start: 1, End: 2}
	rs := []*ResourceSpans{
		{Resource: []KeyValue{{"service.name", String("svc")}}, Scope: ScopeName, ScopeVersion: "v1", Spans: []Span{sp, child}},
		{Scope: "other"},
	}
	var got collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(Encode(rs), &got); err != nil {
		t.Fatal(err)
	}
	sv := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	want := &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: sv("svc")}}},
			ScopeSpans: []*tracepb.ScopeSpans{{
				Scope: &commonpb.InstrumentationScope{Name: ScopeName, Version: "v1"},
				Spans: []*tracepb.Span{
					{
						TraceId: sp.TraceID[:], SpanId: sp.SpanID[:], TraceState: sp.TraceState, ParentSpanId: sp.ParentSpanID[:], Name: long,
						Kind: tracepb.Span_SPAN_KIND_INTERNAL, Flags: sp.Flags, StartTimeUnixNano: sp.Start, EndTimeUnixNano: sp.End,
						Attributes: []*commonpb.KeyValue{
							{Key: "s", Value: sv("v")},
							{Key: "empty", Value: sv("")},
							{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -42}}},
							{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
							{Key: "f", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}}},
							{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 2.5}}},
							{Key: "long", Value: sv(long)},
						},
					},
					{TraceId: sp.TraceID[:], SpanId: child.SpanID[:], ParentSpanId: sp.SpanID[:], Name: "c", StartTimeUnixNano: 1, EndTimeUnixNano: 2},
				},
			}},
		},
		{Resource: &resourcepb.Resource{}, ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "other"}}}},
	}}
	if !proto.Equal(&got, want) {
		t.Errorf("got  %v\nwant %v", &got, want)
	}
}
