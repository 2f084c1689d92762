package tracer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// A worker of the standard library handed work (net/http's connection
// loops, woken by a request's send) and a waker with no user code among
// its frames are named by the function they are in, not left nameless.
func TestStdWorkerAndWakerNamed(t *testing.T) {
	// A return address inside strings.ToUpper, which is not user code.
	pc := uint64(reflect.ValueOf(strings.ToUpper).Pointer()) + 1
	g := goroutineFrame(&analysis.Interval{Kind: analysis.ExtGo, Reason: abi.ExtGoHandoff, PCs: []uint64{pc}})
	if !g.Handoff || g.Func != "strings.ToUpper" || g.File == "" || g.Line == 0 {
		t.Errorf("worker frame %+v, want strings.ToUpper with its position", g)
	}
	w := wakerOf(&analysis.Waker{Goid: 9, PCs: []uint64{pc}})
	if w == nil || w.Goroutine != 9 || w.Func != "strings.ToUpper" {
		t.Errorf("waker %+v, want goroutine 9 in strings.ToUpper", w)
	}
	// User code still wins over the frames around it.
	user := uint64(reflect.ValueOf(TestStdWorkerAndWakerNamed).Pointer()) + 1
	if w := wakerOf(&analysis.Waker{Goid: 9, PCs: []uint64{pc, user}}); w == nil || !strings.HasSuffix(w.Func, ".TestStdWorkerAndWakerNamed") {
		t.Errorf("waker %+v, want the user frame", w)
	}
}
