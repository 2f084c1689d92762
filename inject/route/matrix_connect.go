//go:build matrixexec_inject

// This file is added to connectrpc.com/connect/v2/connecthttp, besides the
// declarations of matrix_route.go: what its hooks call to name a request
// after its procedure. matrixexec renders it with the package's clause and
// drops the build tag.

package route

import __matrix_rt_sync "sync"

// __matrix_rt_connect_procedures holds the procedures Mount has mounted a
// handler for. The handler of any other procedure is the one Mount's
// catch-all for a service builds for the request's path: its requests are
// unmatched, never named after a path.
var __matrix_rt_connect_procedures __matrix_rt_sync.Map

// __matrix_rt_connect_mounted records that Mount mounted a handler for
// procedure.
func __matrix_rt_connect_mounted(procedure string) {
	__matrix_rt_connect_procedures.Store(procedure, true)
}

// __matrix_rt_connect_route names the request of method that a handler for
// procedure serves: after the procedure ("POST /acme.foo.v1.FooService/Bar")
// if Mount mounted a handler for it, unmatched otherwise.
func __matrix_rt_connect_route(method, procedure string) {
	if !__matrix_rt_active() {
		return
	}
	if _, ok := __matrix_rt_connect_procedures.Load(procedure); ok {
		__matrix_rt_route(method, procedure)
		return
	}
	__matrix_rt_route(method, "")
}
