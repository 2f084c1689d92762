package rewrite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// The Go releases whose runtime the patch knows: 1.MinGoMinor through
// 1.MaxGoMinor. The runtime's internals (the g struct, deferreturn, the
// scheduler's hooks) change between releases, so a release outside the
// range is refused rather than patched blindly.
const (
	MinGoMinor = 24
	MaxGoMinor = 27
)

var goversionRE = regexp.MustCompile(`(?m)^const Version = (\d+)$`)

// CheckGoRelease fails with a message naming the toolchain's version when
// the Go release at goroot is one whose runtime the patch does not know.
func CheckGoRelease(goroot string) error {
	src, err := os.ReadFile(filepath.Join(goroot, "src", "internal", "goversion", "goversion.go"))
	if err != nil {
		return fmt.Errorf("patch runtime: cannot tell the Go release: %w", err)
	}
	m := goversionRE.FindSubmatch(src)
	if m == nil {
		return fmt.Errorf("patch runtime: cannot tell the Go release from %s", filepath.Join(goroot, "src", "internal", "goversion", "goversion.go"))
	}
	minor, _ := strconv.Atoi(string(m[1]))
	if minor >= MinGoMinor && minor <= MaxGoMinor {
		return nil
	}
	name := "Go 1." + string(m[1])
	if v, err := os.ReadFile(filepath.Join(goroot, "VERSION")); err == nil {
		if line, _, _ := bytes.Cut(v, []byte("\n")); len(bytes.TrimSpace(line)) > 0 {
			name = string(bytes.TrimSpace(line)) + " (" + name + ")"
		}
	}
	return fmt.Errorf("patch runtime: the toolchain is %s; this matrixexec knows the runtime of Go 1.%d through 1.%d only: use a supported Go release or a matrixexec that supports this one", name, MinGoMinor, MaxGoMinor)
}

// CheckArch fails for targets the recorder does not support: it relies on
// 64-bit atomic words in the ring header and on a clock thread, so 32-bit
// architectures and wasm (no threads) are refused at build time.
func CheckArch(goarch string) error {
	switch goarch {
	case "amd64", "arm64", "ppc64", "ppc64le", "riscv64", "s390x", "loong64", "mips64", "mips64le":
		return nil
	}
	return fmt.Errorf("matrixexec does not support GOARCH=%s: the recorder needs a 64-bit architecture with threads (amd64, arm64, ppc64le, riscv64, s390x, loong64, mips64); build this target without -toolexec=matrixexec", goarch)
}
