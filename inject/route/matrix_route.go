//go:build matrixexec_inject

// This file is added to the routers and RPC servers that matrixexec hooks
// (gin, echo, chi, gorilla/mux, httprouter, gRPC; see rewrite.PatchRoutes).
// It is Go 1.7's (no generics, no any): httprouter's module declares no
// Go version, and so compiles with -lang=go1.7.
// matrixexec renders it with the package clause of the package it joins and
// drops the build tag; the statements it inserts into the package's
// functions call the declarations below. Every name starts with
// __matrix_rt_, so that it cannot clash with the package's own names or
// with the hooks file of an instrumented package.

package route

import __matrix_rt_unsafe "unsafe"

//go:linkname __matrix_rt_flag runtime.matrixFlag
func __matrix_rt_flag() *uint32

// __matrix_rt_on points at the recording flag: the package's hooks file,
// when it is instrumented, declares the flag itself, and one package
// cannot declare it twice.
var __matrix_rt_on = __matrix_rt_flag()

//go:linkname __matrix_rt_bound runtime.matrixBound
func __matrix_rt_bound(kind int, a, b, c string, v interface{}) bool

//go:linkname __matrix_rt_unbound runtime.matrixUnbound
func __matrix_rt_unbound()

//go:linkname __matrix_rt_current runtime.matrixCurrent
func __matrix_rt_current() __matrix_rt_unsafe.Pointer

//go:linkname __matrix_rt_scene runtime.matrixDispatchScene
func __matrix_rt_scene(scene string)

//go:linkname __matrix_rt_route_scene runtime.matrixDispatchRoute
func __matrix_rt_route_scene(method, route string)

//go:linkname __matrix_rt_begin runtime.matrixDispatchBegin
func __matrix_rt_begin(kind int, name string) __matrix_rt_unsafe.Pointer

//go:linkname __matrix_rt_end runtime.matrixDispatchEnd
func __matrix_rt_end(d __matrix_rt_unsafe.Pointer, scene string)

// __matrix_rt_active reports whether the goroutine serves a dispatch that
// is being recorded: a scene computed at some cost is computed only then.
func __matrix_rt_active() bool { return __matrix_rt_current() != nil }

// __matrix_rt_route names the scene of the goroutine's dispatch after the
// route template a request matched ("GET /users/:id"), or "GET unmatched"
// when route is empty: never after the request's path, whose values are
// unbounded and may be private.
func __matrix_rt_route(method, route string) {
	if __matrix_rt_current() == nil {
		return
	}
	if route != "" {
		__matrix_rt_route_scene(method, route)
		return
	}
	__matrix_rt_scene(__matrix_rt_name(method, route))
}

// __matrix_rt_name returns the scene of a request of method that matched
// route ("" for none).
func __matrix_rt_name(method, route string) string {
	if route != "" {
		return method + " " + route
	}
	switch method {
	case "GET":
		return "GET unmatched"
	case "POST":
		return "POST unmatched"
	case "PUT":
		return "PUT unmatched"
	case "DELETE":
		return "DELETE unmatched"
	case "HEAD":
		return "HEAD unmatched"
	case "PATCH":
		return "PATCH unmatched"
	case "OPTIONS":
		return "OPTIONS unmatched"
	case "":
		return "unmatched"
	}
	return method + " unmatched"
}

// __matrix_rt_template names the scene after a matched route's path
// template (gorilla/mux's routes); a route without one names the method
// alone.
func __matrix_rt_template(method string, r interface{ GetPathTemplate() (string, error) }) {
	if __matrix_rt_current() == nil {
		return
	}
	if t, err := r.GetPathTemplate(); err == nil && t != "" {
		__matrix_rt_route_scene(method, t)
		return
	}
	__matrix_rt_scene(method)
}

// __matrix_rt_named names the scene of the goroutine's dispatch, if it
// serves one: a handler wrapped where its route is registered (httprouter
// keeps no template past registration) runs it first.
func __matrix_rt_named(scene string) {
	if __matrix_rt_current() != nil {
		__matrix_rt_scene(scene)
	}
}

// __matrix_rt_call begins the dispatch of an RPC a server handles, of
// kind and named name (nested in the goroutine's dispatch if it serves one
// already: a gRPC server behind net/http), whose scene is the RPC's full
// method ("/shop.Orders/Get"). It returns the dispatch, nil while nothing
// records, for __matrix_rt_end.
func __matrix_rt_call(kind int, name, method string) __matrix_rt_unsafe.Pointer {
	d := __matrix_rt_begin(kind, name)
	if d != nil {
		__matrix_rt_scene(method)
	}
	return d
}
