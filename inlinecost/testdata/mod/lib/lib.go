// Package lib has one of every kind of function whose inlining decision
// the export data records.
package lib

import (
	"fmt"
	_ "unsafe" // for go:linkname
)

// Small is inlinable.
func Small(a, b int) int { return a*b + 1 }

// Variadic is inlinable, with a variadic parameter.
func Variadic(xs ...int) int { return len(xs) }

// Loop is too costly to inline.
func Loop(n int) string {
	s := ""
	for i := range n {
		s += fmt.Sprint(i, n, i*n, "x", "y", "z", i+n)
		s += fmt.Sprint(i, n, i*n, "x", "y", "z", i+n)
	}
	return s
}

//go:noinline
func Marked(x int) int { return x + 1 }

//go:linkname linked
func linked() int { return 1 }

// Linked calls a function with a link name.
func Linked() int { return linked() }

// Generic has no recorded decision.
func Generic[T any](x T) T { return x }

// T has methods on both receivers, one too costly to inline.
type T struct{ n int }

// Get is inlinable.
func (t T) Get() int { return t.n }

// Set is inlinable.
func (t *T) Set(n int, _ string, more ...int) { t.n = n + len(more) }

// Print is not inlinable.
func (t *T) Print() {
	for i := range t.n {
		fmt.Println(i, t.n, "a", "b", "c", "d", "e")
		fmt.Println(i, t.n, "a", "b", "c", "d", "e")
	}
}

func (t T) unexported() int { return t.n * 2 }

// Unexported calls an unexported method.
func Unexported() int { return T{}.unexported() }

type hidden struct{ s []byte }

// New returns a value of an unexported type with exported methods.
func New() *hidden { return &hidden{} }

// Append is inlinable.
func (h *hidden) Append(b byte) *hidden { h.s = append(h.s, b); return h }

// Len is inlinable.
func (h hidden) Len() int { return len(h.s) }

// I is an interface: its methods have no records.
type I interface{ Get() int }

// G is a generic type: its methods have no records.
type G[T any] struct{ v T }

// Value is a method of a generic type.
func (g G[T]) Value() T { return g.v }
