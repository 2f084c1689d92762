package otlp

import (
	"encoding/binary"
	"math"
)

// The exporter writes the protobuf wire format itself, with
// encoding/binary's varints (protobuf's varint is LEB128, what
// binary.AppendUvarint writes) and little-endian fixed-width integers,
// rather than with the generated message types of
// go.opentelemetry.io/proto/otlp, which carry the protobuf reflection
// runtime (about 8 MB in every zero-code binary, see BENCHMARKS.md), or
// google.golang.org/protobuf's protowire, whose package initialisation
// opens and reads the program's own executable. It writes four wire
// types: varint, 64-bit, length-delimited and 32-bit. The field numbers
// below are those of the OTLP protos
// (opentelemetry/proto/trace/v1/trace.proto and friends); the tests check
// each against the descriptors of the official generated types and decode
// every encoding with them.

// number is a protobuf field number.
type number int32

// Protobuf wire types.
const (
	varintType  = 0
	fixed64Type = 1
	bytesType   = 2
	fixed32Type = 5
)

func appendTag(b []byte, n number, wireType int) []byte {
	return binary.AppendUvarint(b, uint64(n)<<3|uint64(wireType))
}

// appendLen appends v, length-delimited.
func appendLen[T string | []byte](b []byte, v T) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// sizeVarint is the length of v as a varint.
func sizeVarint(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

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
func appendMessage(b []byte, field number, body func([]byte) []byte) []byte {
	b = appendTag(b, field, bytesType)
	// Reserve one length byte, then move the body if it needs more.
	at := len(b)
	b = append(b, 0)
	b = body(b)
	n := len(b) - at - 1
	if size := sizeVarint(uint64(n)); size > 1 {
		b = append(b, make([]byte, size-1)...)
		copy(b[at+size:], b[at+1:at+1+n])
	}
	binary.AppendUvarint(b[at:at], uint64(n))
	return b
}

func appendString(b []byte, field number, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, field, bytesType)
	return appendLen(b, s)
}

func appendBytes(b []byte, field number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = appendTag(b, field, bytesType)
	return appendLen(b, v)
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
		b = appendTag(b, fieldSpanKind, varintType)
		b = binary.AppendUvarint(b, uint64(s.Kind))
	}
	b = appendTag(b, fieldSpanStart, fixed64Type)
	b = binary.LittleEndian.AppendUint64(b, s.Start)
	b = appendTag(b, fieldSpanEnd, fixed64Type)
	b = binary.LittleEndian.AppendUint64(b, s.End)
	b = appendAttributes(b, fieldSpanAttributes, s.Attributes)
	for i := range s.Events {
		ev := &s.Events[i]
		b = appendMessage(b, fieldSpanEvents, func(b []byte) []byte {
			b = appendTag(b, fieldEventTime, fixed64Type)
			b = binary.LittleEndian.AppendUint64(b, ev.Time)
			b = appendString(b, fieldEventName, ev.Name)
			return appendAttributes(b, fieldEventAttributes, ev.Attributes)
		})
	}
	if s.StatusCode != StatusUnset {
		b = appendMessage(b, fieldSpanStatus, func(b []byte) []byte {
			b = appendTag(b, fieldStatusCode, varintType)
			return binary.AppendUvarint(b, uint64(s.StatusCode))
		})
	}
	if s.Flags != 0 {
		b = appendTag(b, fieldSpanFlags, fixed32Type)
		b = binary.LittleEndian.AppendUint32(b, s.Flags)
	}
	return b
}

func appendAttributes(b []byte, field number, kvs []KeyValue) []byte {
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
		b = appendTag(b, fieldAnyString, bytesType)
		return appendLen(b, v.s)
	case valueBool:
		b = appendTag(b, fieldAnyBool, varintType)
		return append(b, boolByte(v.n != 0))
	case valueInt:
		b = appendTag(b, fieldAnyInt, varintType)
		return binary.AppendUvarint(b, uint64(v.n))
	case valueDouble:
		b = appendTag(b, fieldAnyDouble, fixed64Type)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.f))
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
