//go:build !matrixexec_linked

package beat

import "unsafe"

// linked reports whether this package is bound to the patched runtime. In
// a plain build (and in go vet and gopls) it is not: every entry point below
// is a no-op, and the recorder reports that the binary is not instrumented.
const linked = false

// rtGo starts f on an ordinary goroutine.
func rtGo(f func()) { go f() }

func rtSetActive(uint32)                          {}
func rtSetClock(bool)                             {}
func rtGetNow() uint64                            { return 0 }
func rtBoundNow() (int64, uint64)                 { return 0, 0 }
func rtClockCounts() (uint64, uint64)             { return 0, 0 }
func rtSwapRing(unsafe.Pointer) unsafe.Pointer    { return nil }
func rtSpareSwap(p unsafe.Pointer) unsafe.Pointer { return p }
func rtProcID() uint32                            { return 0 }
func rtNamesHead() unsafe.Pointer                 { return nil }
func rtGoid() uint64                              { return 0 }

func rtEnter(uint32)            {}
func rtExit(uint32)             {}
func rtCurrent() unsafe.Pointer { return nil }
func rtSetDispatchHooks(func(int, string) unsafe.Pointer, func(unsafe.Pointer, string), func(unsafe.Pointer, string)) {
}

func rtSetSceneRefHook(func(unsafe.Pointer, *string)) {}

func rtAtExit(func()) {}

func rtDispatchBegin(int, string) unsafe.Pointer                              { return nil }
func rtDispatchEnd(unsafe.Pointer, string)                                    {}
func rtDispatchBeginRequest(int, string, string, string, bool) unsafe.Pointer { return nil }

func rtStartupInfo() (unsafe.Pointer, uint64, int64, int64) { return nil, 0, 0, 0 }
func rtNanotime() int64                                     { return 0 }
func rtStartupRing() unsafe.Pointer                         { return nil }

func rtFrame(int, []uintptr) (uintptr, uintptr, int)                                             { return 0, 0, 0 }
func rtAbandoned() uint32                                                                        { return 0 }
func rtInUse(unsafe.Pointer) bool                                                                { return false }
func rtSetTraceParentHook(func(unsafe.Pointer, string, string, string), func() (string, string)) {}
func rtSetBoundHook(func(int, string, string, string, any, *boundBuf) (int, string))             {}
func rtWaitReason(uint8) string                                                                  { return "" }
func rtSetKids(uint64, uint32)                                                                   {}
func rtKidRelease(unsafe.Pointer)                                                                {}
func rtKidsDetach(unsafe.Pointer) unsafe.Pointer                                                 { return nil }
func rtKidsLive() uint32                                                                         { return 0 }
func rtChunkAdd(int64) int64                                                                     { return 0 }

func rtSetRequestHooks(func(int, string, string, string, bool) unsafe.Pointer, func(unsafe.Pointer, int)) {
}

func rtProfSetup(unsafe.Pointer, uint64)                        {}
func rtProfRelease(unsafe.Pointer)                              {}
func rtProfSlotOf(unsafe.Pointer) (slot int, gen, taken uint32) { return -1, 0, 0 }
func rtStopped(int64, int64) (ns int64, whole bool)             { return 0, false }
