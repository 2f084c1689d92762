//go:build matrixexec_inject

// This file is added to google.golang.org/grpc, besides the declarations
// of matrix_route.go: what gRPC's client and server hooks call to pass a
// dispatch's trace context on in a call's metadata, and to read it from a
// call the server handles. Like matrix_route.go it spells any as
// interface{} (old releases of gRPC declare Go 1.17 or older), and
// matrixexec renders it with gRPC's package clause and drops the build tag.

package route

import (
	"context"
	__matrix_rt_unsafe "unsafe"

	"google.golang.org/grpc/metadata"
)

//go:linkname __matrix_rt_bound_out runtime.matrixBoundOut
func __matrix_rt_bound_out(kind int, a, b, c string, v interface{}) (bool, string)

// __matrix_rt_grpc_traceparent_key is the metadata key of the W3C trace
// context, as OpenTelemetry's gRPC instrumentation writes it.
const __matrix_rt_grpc_traceparent_key = "traceparent"

// __matrix_rt_rpc_bound opens the boundary of a client call of method
// (kind abi.BoundRPC) to target, and reports whether it did. A call whose
// metadata has no traceparent then gets one, the dispatch's trace context
// with the boundary's span id, in the context it returns.
func __matrix_rt_rpc_bound(ctx context.Context, kind int, method, target string) (context.Context, bool) {
	md, _ := metadata.FromOutgoingContext(ctx)
	ok, tp := __matrix_rt_bound_out(kind, method, target, "", len(md[__matrix_rt_grpc_traceparent_key]) == 0)
	if tp != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, __matrix_rt_grpc_traceparent_key, tp)
	}
	return ctx, ok
}

// __matrix_rt_rpc_traceparent hands the traceparent of the call whose
// incoming metadata ctx holds to its dispatch d.
func __matrix_rt_rpc_traceparent(d __matrix_rt_unsafe.Pointer, ctx context.Context) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md[__matrix_rt_grpc_traceparent_key]; len(v) != 0 {
			__matrix_rt_traceparent(d, v[0])
		}
	}
}
