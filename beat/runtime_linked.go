//go:build matrixexec_linked

package beat

import "unsafe"

// linked reports whether this package is bound to the patched runtime.
// matrixexec compiles this file instead of runtime_plain.go; the functions
// below are defined in the file it adds to package runtime.
const linked = true

//go:linkname rtGo runtime.matrixGo
func rtGo(f func())

//go:linkname rtSetActive runtime.matrixSetActive
func rtSetActive(v uint32)

//go:linkname rtSetClock runtime.matrixSetClock
func rtSetClock(on bool)

//go:linkname rtGetNow runtime.matrixGetNow
func rtGetNow() uint64

//go:linkname rtClockCounts runtime.matrixClockCounts
func rtClockCounts() (ticks, idles uint64)

//go:linkname rtBoundNow runtime.matrixBoundNow
func rtBoundNow() (ns int64, ms uint64)

//go:linkname rtSpareSwap runtime.matrixSpareSwap
func rtSpareSwap(p unsafe.Pointer) unsafe.Pointer

//go:linkname rtProcID runtime.matrixProcID
func rtProcID() uint32

//go:linkname rtSwapRing runtime.matrixSwapRing
func rtSwapRing(p unsafe.Pointer) unsafe.Pointer

//go:linkname rtNamesHead runtime.matrixNamesHead
func rtNamesHead() unsafe.Pointer

//go:linkname rtGoid runtime.matrixGoid
func rtGoid() uint64

//go:linkname rtEnter runtime.matrixEnter
func rtEnter(id uint32) bool

//go:linkname rtExit runtime.matrixExit
func rtExit(id uint32)

//go:linkname rtCurrent runtime.matrixCurrent
func rtCurrent() unsafe.Pointer

//go:linkname rtSetDispatchHooks runtime.matrixSetDispatchHooks
func rtSetDispatchHooks(begin func(kind int, name string) unsafe.Pointer, end, scene func(d unsafe.Pointer, scene string))

//go:linkname rtSetSceneRefHook runtime.matrixSetSceneRefHook
func rtSetSceneRefHook(f func(d unsafe.Pointer, scene *string))

//go:linkname rtAtExit runtime.matrixAtExit
func rtAtExit(f func())

//go:linkname rtStartupInfo runtime.matrixStartupInfo
func rtStartupInfo() (ring unsafe.Pointer, n uint64, epoch, mainNano int64)

//go:linkname rtNanotime runtime.matrixNanotime
func rtNanotime() int64

//go:linkname rtStartupRing runtime.matrixStartupRing
func rtStartupRing() unsafe.Pointer

//go:linkname rtFrame runtime.matrixFrame
//go:noescape
func rtFrame(skip int, pcs []uintptr) (depth, entry uintptr, n int)

//go:linkname rtAbandoned runtime.matrixAbandoned
func rtAbandoned() uint32

//go:linkname rtInUse runtime.matrixInUse
func rtInUse(p unsafe.Pointer) bool

//go:linkname rtSetTraceParentHook runtime.matrixSetTraceParentHook
func rtSetTraceParentHook(in func(d unsafe.Pointer, tp, state, baggage string), out func() (state, baggage string))

//go:linkname rtSetRequestHooks runtime.matrixSetRequestHooks
func rtSetRequestHooks(begin func(kind int, name, method, host string, tls bool) unsafe.Pointer, status func(d unsafe.Pointer, code int))

//go:linkname rtSetBoundHook runtime.matrixSetBoundHook
func rtSetBoundHook(f func(kind int, a, b, c string, v any, buf *boundBuf) (int, string))

//go:linkname rtWaitReason runtime.matrixWaitReason
func rtWaitReason(r uint8) string

//go:linkname rtSetKids runtime.matrixSetKids
func rtSetKids(size uint64, limit uint32)

//go:linkname rtKidRelease runtime.matrixKidRelease
func rtKidRelease(p unsafe.Pointer)

//go:linkname rtKidsDetach runtime.matrixKidsDetach
func rtKidsDetach(p unsafe.Pointer) unsafe.Pointer

//go:linkname rtKidsLive runtime.matrixKidsLive
func rtKidsLive() uint32

//go:linkname rtChunkAdd runtime.matrixChunkAdd
func rtChunkAdd(n int64) int64

//go:linkname rtDispatchBegin runtime.matrixDispatchBegin
func rtDispatchBegin(kind int, name string) unsafe.Pointer

//go:linkname rtDispatchBeginRequest runtime.matrixDispatchBeginRequest
func rtDispatchBeginRequest(kind int, name, method, host string, tls bool) unsafe.Pointer

//go:linkname rtDispatchEnd runtime.matrixDispatchEnd
func rtDispatchEnd(d unsafe.Pointer, scene string)

//go:linkname rtProfSetup runtime.matrixProfSetup
func rtProfSetup(arena unsafe.Pointer, floor uint64)

//go:linkname rtProfRelease runtime.matrixProfRelease
func rtProfRelease(root unsafe.Pointer)

//go:linkname rtProfSlotOf runtime.matrixProfSlotOf
func rtProfSlotOf(root unsafe.Pointer) (slot int, gen, taken uint32)

//go:linkname rtStopped runtime.matrixStopped
func rtStopped(from, to int64) (ns int64, whole bool)
