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

// Go releases from which the compiler does something the rewrite follows
// (see Options.GoRelease).
const (
	// rangeBodyNamesRelease: a function literal in the body of a range
	// over a function is named after that body (F-range1.1), not after
	// the function around the loop (F.func2); see namer.
	rangeBodyNamesRelease = 27
	// lineDirRelease: a relative file name in a line directive is
	// resolved against the directory of the file the directive is in,
	// not kept relative; see absoluteLineNames.
	lineDirRelease = 27
)

var goversionRE = regexp.MustCompile(`(?m)^const Version = (\d+)$`)

// GoRelease returns the minor version of the Go release at goroot (27 for
// Go 1.27), as its internal/goversion package declares it.
func GoRelease(goroot string) (int, error) {
	path := filepath.Join(goroot, "src", "internal", "goversion", "goversion.go")
	src, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cannot tell the Go release: %w", err)
	}
	m := goversionRE.FindSubmatch(src)
	if m == nil {
		return 0, fmt.Errorf("cannot tell the Go release from %s", path)
	}
	minor, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, fmt.Errorf("cannot tell the Go release from %s: %w", path, err)
	}
	return minor, nil
}

// CheckGoRelease fails with a message naming the toolchain's version when
// the Go release at goroot is one whose runtime the patch does not know.
func CheckGoRelease(goroot string) error {
	minor, err := GoRelease(goroot)
	if err != nil {
		return fmt.Errorf("patch runtime: %w", err)
	}
	if minor >= MinGoMinor && minor <= MaxGoMinor {
		return nil
	}
	name := "Go 1." + strconv.Itoa(minor)
	if v, err := os.ReadFile(filepath.Join(goroot, "VERSION")); err == nil {
		if line, _, _ := bytes.Cut(v, []byte("\n")); len(bytes.TrimSpace(line)) > 0 {
			name = string(bytes.TrimSpace(line)) + " (" + name + ")"
		}
	}
	return fmt.Errorf("the toolchain is %s; this matrixexec knows the runtime of Go 1.%d through 1.%d only: use a supported Go release or a matrixexec that supports this one", name, MinGoMinor, MaxGoMinor)
}

// CheckArch fails for targets the recorder does not support: it relies on
// 64-bit atomic words in the ring header and on a clock thread, so 32-bit
// architectures and wasm (no threads) are built without it.
func CheckArch(goarch string) error {
	switch goarch {
	case "amd64", "arm64", "ppc64", "ppc64le", "riscv64", "s390x", "loong64", "mips64", "mips64le":
		return nil
	}
	return fmt.Errorf("matrixexec does not support GOARCH=%s: the recorder needs a 64-bit architecture with threads (amd64, arm64, ppc64le, riscv64, s390x, loong64, mips64)", goarch)
}

// CheckOS fails for operating systems the recorder does not support. On
// Plan 9 the runtime reads the clock through a file, whose failure path
// overflows the stack of the nosplit system call entry once the wait
// hooks read the clock there.
func CheckOS(goos string) error {
	if goos == "plan9" {
		return fmt.Errorf("matrixexec does not support GOOS=%s: the runtime's system call entry, where the recorder reads the clock, has no stack to spare there", goos)
	}
	return nil
}
