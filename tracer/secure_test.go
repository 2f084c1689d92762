package tracer

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"
)

func auxvOf(pairs ...uint64) []byte {
	word := int(unsafe.Sizeof(uintptr(0)))
	b := make([]byte, len(pairs)*word)
	for i, v := range pairs {
		if word == 8 {
			binary.NativeEndian.PutUint64(b[i*word:], v)
		} else {
			binary.NativeEndian.PutUint32(b[i*word:], uint32(v))
		}
	}
	return b
}

func TestAuxvSecure(t *testing.T) {
	for _, tc := range []struct {
		auxv       []byte
		secure, ok bool
	}{
		{auxvOf(6, 4096, atSecure, 1, 0, 0), true, true},
		{auxvOf(6, 4096, atSecure, 0, 0, 0), false, true},
		{auxvOf(6, 4096, 0, 0, atSecure, 1), false, false}, // after AT_NULL
		{auxvOf(6, 4096), false, false},
		{nil, false, false},
	} {
		secure, ok := auxvSecure(tc.auxv)
		if secure != tc.secure || ok != tc.ok {
			t.Errorf("auxvSecure(%v) = %v, %v; want %v, %v", tc.auxv, secure, ok, tc.secure, tc.ok)
		}
	}
	// This test binary is not setuid.
	if SecureMode() && os.Getuid() == os.Geteuid() {
		t.Error("SecureMode in a test binary run by its owner")
	}
}
