//go:build matrixexec_inject

// This file declares the hook that ends the start-up phase (package
// initialisation), which main.main calls first. matrixexec adds its
// declarations to the hooks file of an instrumented package main, and adds
// the file itself to the main package go test generates for a test binary,
// rendered with the package clause and without the build tag.

package main

import _ "unsafe"

//go:linkname __matrix_main runtime.matrixMainEntered
func __matrix_main()
