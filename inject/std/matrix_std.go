//go:build matrixexec_inject

// This file is added to the standard packages that matrixexec turns into
// dispatch sources (net/http, testing). matrixexec renders it with the
// package clause of the package it joins, drops the build tag and appends
// the flag's padding constants from the abi package; the statements it
// inserts into the package's functions call the declarations below.

package std

import __matrix_unsafe "unsafe"

//go:linkname __matrix_on runtime.matrixOn
var __matrix_on struct {
	_ [__matrix_flagPadBefore]byte
	v uint32
	_ [__matrix_flagPadAfter]byte
}

//go:linkname __matrix_begin runtime.matrixDispatchBegin
func __matrix_begin(kind int, name string) __matrix_unsafe.Pointer

//go:linkname __matrix_end runtime.matrixDispatchEnd
func __matrix_end(d __matrix_unsafe.Pointer, scene string)

//go:linkname __matrix_scene runtime.matrixDispatchScene
func __matrix_scene(scene string)

//go:linkname __matrix_serving runtime.matrixServing
func __matrix_serving()

//go:linkname __matrix_begin_request runtime.matrixDispatchBeginRequest
func __matrix_begin_request(kind int, name, method, host string, tls bool) __matrix_unsafe.Pointer

//go:linkname __matrix_status runtime.matrixDispatchStatus
func __matrix_status(code int)

//go:linkname __matrix_bound runtime.matrixBound
func __matrix_bound(kind int, a, b, c string, v any) bool

//go:linkname __matrix_unbound runtime.matrixUnbound
func __matrix_unbound()
