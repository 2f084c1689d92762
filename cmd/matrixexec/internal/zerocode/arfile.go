package zerocode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Go's package archives are Unix ar archives, as cmd/pack writes them: the
// magic line, then members of a 60-byte header (name, mtime, uid, gid,
// octal mode, size, "`\n") and their data, padded to an even length.
const (
	arMagic      = "!<arch>\n"
	arHeaderSize = 60
)

// errNotArchive is returned for a file that is not an ar archive.
var errNotArchive = errors.New("not an archive")

// appendArMember appends a member to the archive at path.
func appendArMember(path, name string, data []byte) error {
	if len(name) > 16 || strings.ContainsAny(name, " /") {
		return fmt.Errorf("archive member name %q: want at most 16 characters, no space or slash", name)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	magic := make([]byte, len(arMagic))
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != arMagic {
		f.Close()
		return fmt.Errorf("%s: %w", path, errNotArchive)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return err
	}
	var b bytes.Buffer
	if end%2 == 1 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%-16s%-12d%-6d%-6d%-8o%-10d`\n", name, 0, 0, 0, 0o644, len(data))
	b.Write(data)
	if len(data)%2 == 1 {
		b.WriteByte('\n')
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readArMember returns the data of the archive's member name, or nil with
// no error if it has none.
func readArMember(path, name string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	magic := make([]byte, len(arMagic))
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != arMagic {
		return nil, fmt.Errorf("%s: %w", path, errNotArchive)
	}
	off := int64(len(arMagic))
	hdr := make([]byte, arHeaderSize)
	for {
		if _, err := f.ReadAt(hdr, off); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, err
		}
		if string(hdr[58:60]) != "`\n" {
			return nil, fmt.Errorf("%s: bad archive member header at offset %d", path, off)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("%s: bad archive member size at offset %d", path, off)
		}
		off += arHeaderSize
		if strings.TrimSpace(string(hdr[:16])) == name {
			data := make([]byte, size)
			if _, err := f.ReadAt(data, off); err != nil {
				return nil, fmt.Errorf("%s: member %s: %w", path, name, err)
			}
			return data, nil
		}
		off += size + size%2
	}
}
