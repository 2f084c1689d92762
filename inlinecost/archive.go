package inlinecost

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// exportData returns the export data in an archive the compiler wrote: the
// contents of its first member, __.PKGDEF, after the object header lines
// and the "$$B\n" marker, without the end-of-section marker "\n$$\n". Its
// first byte names the format ('u': unified). (cmd/internal/archive and
// internal/exportdata in the Go tree describe the layout.)
func exportData(archive []byte) ([]byte, error) {
	const (
		magic  = "!<arch>\n"
		hdrLen = 60 // name 16, date 12, uid 6, gid 6, mode 8, size 10, "`\n"
	)
	if !bytes.HasPrefix(archive, []byte(magic)) {
		return nil, fmt.Errorf("%w: not an archive", errFormat)
	}
	rest := archive[len(magic):]
	if len(rest) < hdrLen || strings.TrimSpace(string(rest[:16])) != "__.PKGDEF" {
		return nil, fmt.Errorf("%w: the archive's first member is not __.PKGDEF", errFormat)
	}
	size, err := strconv.Atoi(strings.TrimSpace(string(rest[48:58])))
	if err != nil || size < 0 || size > len(rest)-hdrLen {
		return nil, fmt.Errorf("%w: __.PKGDEF's size %q", errFormat, rest[48:58])
	}
	def := rest[hdrLen : hdrLen+size]
	// Header lines ("go object …", the build id, …) up to the marker.
	for {
		if bytes.HasPrefix(def, []byte("$$B\n")) {
			def = def[len("$$B\n"):]
			break
		}
		if bytes.HasPrefix(def, []byte("$$")) {
			return nil, fmt.Errorf("%w: export data marker %q", errFormat, firstLine(def))
		}
		i := bytes.IndexByte(def, '\n')
		if i < 0 {
			return nil, fmt.Errorf("%w: no export data in __.PKGDEF", errFormat)
		}
		def = def[i+1:]
	}
	data, ok := bytes.CutSuffix(def, []byte("\n$$\n"))
	if !ok {
		return nil, fmt.Errorf("%w: no end-of-section marker after the export data", errFormat)
	}
	return data, nil
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}
