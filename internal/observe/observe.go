// Package observe marks the beat observers of this module that keep no
// dispatch: an observer of such a type uses the *beat.Dispatch it is
// handed only during the call (DispatchBegin, DispatchEnd), copying what it
// needs. While every registered observer is of such a type, beat may reuse
// the memory of a dispatch begun by a patched dispatch source (a net/http
// server, the testing runner) as soon as it ends: no user code holds a
// pointer to it, unless beat.Current or beat.Running handed it out, and
// those mark it as kept.
//
// An observer registered by a program is of no marked type: while one is,
// every dispatch is left to the garbage collector.
package observe

import (
	"reflect"
	"sync"
)

// typeSet is a set of dynamic types, safe for concurrent use.
type typeSet struct{ m sync.Map } // reflect.Type → struct{}

func (s *typeSet) add(o any)      { s.m.Store(reflect.TypeOf(o), struct{}{}) }
func (s *typeSet) has(o any) bool { _, ok := s.m.Load(reflect.TypeOf(o)); return ok }

// transient and noBegin hold the types marked by MarkTransient and
// MarkNoBegin.
var transient, noBegin typeSet

// MarkTransient marks the dynamic type of o (a nil pointer of the type
// will do) as keeping no dispatch past the calls that hand it one.
func MarkTransient(o any) { transient.add(o) }

// Transient reports whether the dynamic type of o was marked.
func Transient(o any) bool { return transient.has(o) }

// MarkNoBegin marks the dynamic type of o (a nil pointer of the type will
// do) as an observer whose DispatchBegin does nothing: beat then does not
// call it, a call less on every dispatch.
func MarkNoBegin(o any) { noBegin.add(o) }

// NoBegin reports whether the dynamic type of o was marked by MarkNoBegin.
func NoBegin(o any) bool { return noBegin.has(o) }
