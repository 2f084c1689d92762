//go:build ignore && matrixexec_inject

// This file is added to google.golang.org/grpc, besides the declarations
// of matrix_route.go: what gRPC's client and server hooks call to pass a
// dispatch's trace context on in a call's metadata, and to read it from a
// call the server handles. Like matrix_route.go it spells any as
// interface{} (old releases of gRPC declare Go 1.17 or older), and
// matrixexec renders it with gRPC's package clause and drops the build tag.
// The tag ignore keeps go mod tidy, which reads every other file whatever
// its tags, from making gRPC a requirement of this module: the file is
// compiled only inside the program's own gRPC.

package route

import (
	"context"
	__matrix_rt_strings "strings"
	__matrix_rt_unsafe "unsafe"

	"google.golang.org/grpc/metadata"
)

// The metadata keys of the W3C trace context and baggage, as
// OpenTelemetry's gRPC instrumentation writes them.
const (
	__matrix_rt_grpc_traceparent_key = "traceparent"
	__matrix_rt_grpc_tracestate_key  = "tracestate"
	__matrix_rt_grpc_baggage_key     = "baggage"
)

// __matrix_rt_rpc_bound opens the boundary of a client call of method
// (kind abi.BoundRPC) to target, and reports whether it did. A call whose
// metadata has no traceparent then gets one, the dispatch's trace context
// with the boundary's span id, in the context it returns, with the
// tracestate and baggage of the dispatch's call or request unless the
// metadata has its own.
func __matrix_rt_rpc_bound(ctx context.Context, kind int, method, target string) (context.Context, bool) {
	md, _ := metadata.FromOutgoingContext(ctx)
	ok, tp := __matrix_rt_bound_out(kind, method, target, "", len(md[__matrix_rt_grpc_traceparent_key]) == 0)
	if tp != "" {
		kv := []string{__matrix_rt_grpc_traceparent_key, tp}
		state, baggage := __matrix_rt_trace_state()
		if state != "" && len(md[__matrix_rt_grpc_tracestate_key]) == 0 {
			kv = append(kv, __matrix_rt_grpc_tracestate_key, state)
		}
		if baggage != "" && len(md[__matrix_rt_grpc_baggage_key]) == 0 {
			kv = append(kv, __matrix_rt_grpc_baggage_key, baggage)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	}
	return ctx, ok
}

// __matrix_rt_rpc_traceparent hands the trace context of the call whose
// incoming metadata ctx holds (traceparent, tracestate, baggage) to its
// dispatch d.
func __matrix_rt_rpc_traceparent(d __matrix_rt_unsafe.Pointer, ctx context.Context) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return
	}
	tp, baggage := md[__matrix_rt_grpc_traceparent_key], md[__matrix_rt_grpc_baggage_key]
	if len(tp) == 0 && len(baggage) == 0 {
		return
	}
	parent := ""
	if len(tp) != 0 {
		parent = tp[0]
	}
	__matrix_rt_trace_context(d, parent, __matrix_rt_strings.Join(md[__matrix_rt_grpc_tracestate_key], ","), __matrix_rt_strings.Join(baggage, ","))
}
