package tracer

import (
	"encoding/binary"
	"os"
	"runtime"
	"unsafe"
)

// atSecure is the auxiliary vector entry that is nonzero when the kernel
// runs the program in secure mode (setuid, setgid, file capabilities).
const atSecure = 23

// SecureMode reports whether the program runs with privileges its user
// does not have: a setuid, setgid or file-capability binary, where the
// kernel sets AT_SECURE (Linux), else where the real and effective user or
// group ids differ. In secure mode, as glibc does for its own variables,
// the MATRIX_* environment is ignored: whoever runs the program must not
// choose where a privileged process writes.
func SecureMode() bool {
	if runtime.GOOS == "linux" {
		if auxv, err := os.ReadFile("/proc/self/auxv"); err == nil {
			if secure, ok := auxvSecure(auxv); ok {
				return secure
			}
		}
	}
	return os.Getuid() != os.Geteuid() || os.Getgid() != os.Getegid()
}

// auxvSecure reads AT_SECURE from an auxiliary vector (pairs of native
// words); ok is false if the vector has no such entry.
func auxvSecure(auxv []byte) (secure, ok bool) {
	word := int(unsafe.Sizeof(uintptr(0)))
	read := func(b []byte) uint64 {
		if word == 8 {
			return binary.NativeEndian.Uint64(b)
		}
		return uint64(binary.NativeEndian.Uint32(b))
	}
	for i := 0; i+2*word <= len(auxv); i += 2 * word {
		switch read(auxv[i:]) {
		case 0: // AT_NULL
			return false, false
		case atSecure:
			return read(auxv[i+word:]) != 0, true
		}
	}
	return false, false
}
