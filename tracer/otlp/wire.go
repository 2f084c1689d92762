package otlp

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The exporter encodes OTLP with google.golang.org/protobuf's wire
// primitives (protowire) rather than the generated message types of
// go.opentelemetry.io/proto/otlp: those carry the protobuf reflection
// runtime, which would add about 8 MB to every zero-code binary (see
// BENCHMARKS.md). The field numbers below are those of the OTLP protos
// (opentelemetry/proto/trace/v1/trace.proto and friends); the tests check
// each against the descriptors of the official generated types and decode
// every encoding with them.

// Field numbers of the OTLP messages the exporter writes.
const (
	fieldTracesDataResourceSpans = 1 // TracesData.resource_spans (= ExportTraceServiceRequest.resource_spans)

	fieldResourceSpansResource   = 1
	fieldResourceSpansScopeSpans = 2
	fieldResourceSpansSchemaURL  = 3

	fieldResourceAttributes = 1

	fieldScopeSpansScope     = 1
	fieldScopeSpansSpans     = 2
	fieldScopeSpansSchemaURL = 3

	fieldScopeName    = 1
	fieldScopeVersion = 2

	fieldSpanTraceID      = 1
	fieldSpanSpanID       = 2
	fieldSpanTraceState   = 3
	fieldSpanParentSpanID = 4
	fieldSpanName         = 5
	fieldSpanKind         = 6
	fieldSpanStart        = 7
	fieldSpanEnd          = 8
	fieldSpanAttributes   = 9
	fieldSpanEvents       = 11
	fieldSpanStatus       = 15
	fieldSpanFlags        = 16

	fieldEventTime       = 1
	fieldEventName       = 2
	fieldEventAttributes = 3

	fieldStatusCode = 3

	fieldKeyValueKey   = 1
	fieldKeyValueValue = 2

	fieldAnyString = 1
	fieldAnyBool   = 2
	fieldAnyInt    = 3
	fieldAnyDouble = 4
)

// OTLP enum and flag values the exporter uses.
const (
	// SpanKindInternal, SpanKindServer, SpanKindClient,
	// SpanKindProducer and SpanKindConsumer are Span.SpanKind
	// SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, SPAN_KIND_CLIENT,
	// SPAN_KIND_PRODUCER and SPAN_KIND_CONSUMER.
	SpanKindInternal = 1
	SpanKindServer   = 2
	SpanKindClient   = 3
	SpanKindProducer = 4
	SpanKindConsumer = 5
	// StatusUnset and StatusError are Status.StatusCode STATUS_CODE_UNSET
	// and STATUS_CODE_ERROR.
	StatusUnset = 0
	StatusError = 2
	// FlagHasIsRemote and FlagIsRemote are SpanFlags
	// SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK and _IS_REMOTE_MASK.
	FlagHasIsRemote = 0x100
	FlagIsRemote    = 0x200
)

// Encode returns the OTLP/HTTP request body for rs: a TracesData message,
// which is wire-identical to the collector's ExportTraceServiceRequest.
func Encode(rs []*ResourceSpans) []byte {
	var b []byte
	for _, r := range rs {
		b = appendMessage(b, fieldTracesDataResourceSpans, r.append)
	}
	return b
}

// appendMessage appends a length-delimited sub-message.
func appendMessage(b []byte, field protowire.Number, body func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	// Reserve one length byte, then move the body if it needs more.
	at := len(b)
	b = append(b, 0)
	b = body(b)
	n := len(b) - at - 1
	if size := protowire.SizeVarint(uint64(n)); size > 1 {
		b = append(b, make([]byte, size-1)...)
		copy(b[at+size:], b[at+1:at+1+n])
	}
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, field protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func (r *ResourceSpans) append(b []byte) []byte {
	b = appendMessage(b, fieldResourceSpansResource, func(b []byte) []byte {
		return appendAttributes(b, fieldResourceAttributes, r.Resource)
	})
	b = appendMessage(b, fieldResourceSpansScopeSpans, func(b []byte) []byte {
		b = appendMessage(b, fieldScopeSpansScope, func(b []byte) []byte {
			b = appendString(b, fieldScopeName, r.Scope)
			return appendString(b, fieldScopeVersion, r.ScopeVersion)
		})
		for i := range r.Spans {
			b = appendMessage(b, fieldScopeSpansSpans, r.Spans[i].append)
		}
		return appendString(b, fieldScopeSpansSchemaURL, r.SchemaURL)
	})
	return appendString(b, fieldResourceSpansSchemaURL, r.SchemaURL)
}

func (s *Span) append(b []byte) []byte {
	b = appendBytes(b, fieldSpanTraceID, s.TraceID[:])
	b = appendBytes(b, fieldSpanSpanID, s.SpanID[:])
	if s.TraceState != "" {
		b = appendString(b, fieldSpanTraceState, s.TraceState)
	}
	if s.HasParent {
		b = appendBytes(b, fieldSpanParentSpanID, s.ParentSpanID[:])
	}
	b = appendString(b, fieldSpanName, s.Name)
	if s.Kind != 0 {
		b = protowire.AppendTag(b, fieldSpanKind, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s.Kind))
	}
	b = protowire.AppendTag(b, fieldSpanStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, s.Start)
	b = protowire.AppendTag(b, fieldSpanEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, s.End)
	b = appendAttributes(b, fieldSpanAttributes, s.Attributes)
	for i := range s.Events {
		ev := &s.Events[i]
		b = appendMessage(b, fieldSpanEvents, func(b []byte) []byte {
			b = protowire.AppendTag(b, fieldEventTime, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, ev.Time)
			b = appendString(b, fieldEventName, ev.Name)
			return appendAttributes(b, fieldEventAttributes, ev.Attributes)
		})
	}
	if s.StatusCode != StatusUnset {
		b = appendMessage(b, fieldSpanStatus, func(b []byte) []byte {
			b = protowire.AppendTag(b, fieldStatusCode, protowire.VarintType)
			return protowire.AppendVarint(b, uint64(s.StatusCode))
		})
	}
	if s.Flags != 0 {
		b = protowire.AppendTag(b, fieldSpanFlags, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, s.Flags)
	}
	return b
}

func appendAttributes(b []byte, field protowire.Number, kvs []KeyValue) []byte {
	for i := range kvs {
		kv := &kvs[i]
		b = appendMessage(b, field, func(b []byte) []byte {
			b = appendString(b, fieldKeyValueKey, kv.Key)
			return appendMessage(b, fieldKeyValueValue, kv.Value.append)
		})
	}
	return b
}

func (v Value) append(b []byte) []byte {
	switch v.kind {
	case valueString:
		// Written even when empty: the oneof is set.
		b = protowire.AppendTag(b, fieldAnyString, protowire.BytesType)
		return protowire.AppendString(b, v.s)
	case valueBool:
		b = protowire.AppendTag(b, fieldAnyBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.n != 0))
	case valueInt:
		b = protowire.AppendTag(b, fieldAnyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.n))
	case valueDouble:
		b = protowire.AppendTag(b, fieldAnyDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.f))
	}
	return b
}
