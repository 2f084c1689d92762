package otlp_test

import (
	. "github.com/matrixgo/matrix/tracer/otlp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The field numbers and enum values of tracer/otlp/testdata/fields.txt,
// which the encoder's own test checks it uses, are those of the official
// OTLP descriptors.
func TestFieldNumbers(t *testing.T) {
	msgs := map[string]proto.Message{}
	for _, m := range []proto.Message{
		&tracepb.TracesData{}, &collectortrace.ExportTraceServiceRequest{}, &tracepb.ResourceSpans{}, &resourcepb.Resource{},
		&tracepb.ScopeSpans{}, &commonpb.InstrumentationScope{}, &tracepb.Span{}, &tracepb.Span_Event{}, &tracepb.Status{},
		&commonpb.KeyValue{}, &commonpb.AnyValue{},
	} {
		msgs[string(m.ProtoReflect().Descriptor().FullName())] = m
	}
	enums := map[string]int32{}
	for _, e := range []protoreflect.EnumDescriptor{
		tracepb.Span_SPAN_KIND_INTERNAL.Descriptor(), tracepb.Status_STATUS_CODE_ERROR.Descriptor(), tracepb.SpanFlags_SPAN_FLAGS_DO_NOT_USE.Descriptor(),
	} {
		for i := range e.Values().Len() {
			v := e.Values().Get(i)
			enums[string(v.Name())] = int32(v.Number())
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "tracer", "otlp", "testdata", "fields.txt"))
	if err != nil {
		t.Fatal(err)
	}
	fields, values := 0, 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "#" && strings.ToUpper(f[1]) == f[1]:
			values++
			if want, ok := enums[f[1]]; !ok || strconv.Itoa(int(want)) != f[2] {
				t.Errorf("enum value %s: fields.txt says %s, the descriptor %d (%v)", f[1], f[2], want, ok)
			}
		case len(f) == 3 && f[0] != "#":
			fields++
			m, ok := msgs[f[0]]
			if !ok {
				t.Errorf("%s: not a message this test knows", f[0])
				continue
			}
			fd := m.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(f[1]))
			if fd == nil || strconv.Itoa(int(fd.Number())) != f[2] {
				t.Errorf("%s.%s: descriptor %v, fields.txt says %s", f[0], f[1], fd, f[2])
			}
		}
	}
	if fields < 30 || values < 9 {
		t.Errorf("fields.txt lists %d fields and %d enum values", fields, values)
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
		Attributes: []KeyValue{{Key: "s", Value: String("v")}, {Key: "empty", Value: String("")}, {Key: "i", Value: Int(-42)}, {Key: "b", Value: Bool(true)}, {Key: "f", Value: Bool(false)}, {Key: "d", Value: Double(2.5)}, {Key: "long", Value: String(long)}},
	}
	child := Span{TraceID: sp.TraceID, SpanID: [8]byte{1}, ParentSpanID: sp.SpanID, HasParent: true, Name: "c", Start: 1, End: 2}
	rs := []*ResourceSpans{
		{Resource: []KeyValue{{Key: "service.name", Value: String("svc")}}, Scope: ScopeName, ScopeVersion: "v1", Spans: []Span{sp, child}},
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
