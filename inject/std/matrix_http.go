//go:build matrixexec_inject

// This file is added to net/http, besides the declarations of
// matrix_std.go: what its client's hook calls to pass the trace context of
// a recording goroutine's dispatch on to the service it calls. matrixexec
// renders it with the package clause of net/http and drops the build tag.

package std

import _ "unsafe" // for go:linkname

//go:linkname __matrix_bound_out runtime.matrixBoundOut
func __matrix_bound_out(kind int, a, b, c string, v any) (bool, string)

// __matrix_propagate returns a copy of req whose header is a copy of
// req's (not nil) with the traceparent tp: a RoundTripper must not change
// the request it is given, and the copy is what the transport sends.
func __matrix_propagate(req *Request, tp string) *Request {
	r := new(Request)
	*r = *req
	r.Header = req.Header.Clone()
	r.Header["Traceparent"] = []string{tp}
	return r
}
