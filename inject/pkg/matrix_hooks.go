//go:build matrixexec_inject

// This file is added to every package matrixexec instruments, first of the
// files handed to the compiler (see rewrite.Plan.HooksFile). matrixexec
// renders it with the package clause of the package it joins, drops the
// build tag and appends the constants it uses: the flag's padding from the
// abi package and __matrix_nameData, the package's name table. The
// instrumented functions call the hooks declared below.

package pkg

import __matrix_unsafe "unsafe"

//go:linkname __matrix_on runtime.matrixOn
var __matrix_on struct {
	_ [__matrix_flagPadBefore]byte
	v uint32
	_ [__matrix_flagPadAfter]byte
}

//go:linkname __matrix_i runtime.matrixEnter
func __matrix_i(id uint32) bool

//go:linkname __matrix_o runtime.matrixExit
func __matrix_o(id uint32)

//go:linkname __matrix_register runtime.matrixRegister
func __matrix_register(p __matrix_unsafe.Pointer)

// __matrix_names is the package's abi.NameTable, which the runtime links
// into its list.
var __matrix_names = struct {
	next __matrix_unsafe.Pointer
	data string
}{data: __matrix_nameData}

// The names are registered by a variable initializer, not an init
// function, which would shift the numbering of the package's own.
var _ = __matrix_registerNames()

func __matrix_registerNames() bool {
	__matrix_register(__matrix_unsafe.Pointer(&__matrix_names))
	return true
}
