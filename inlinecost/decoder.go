package inlinecost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// This file decodes just enough of the compiler's unified export data
// format (Go 1.20 and later; see internal/pkgbits in the Go tree) to walk
// the object extension section: a header, a table of elements per section,
// and elements that are each a reference table followed by varints,
// booleans and references, optionally interleaved with sync markers.

// Sections of the format, in file order.
const (
	sectionString = iota
	sectionMeta
	sectionPosBase
	sectionPkg
	sectionName
	sectionType
	sectionObj
	sectionObjExt
	sectionObjDict
	sectionBody
	numSections
)

// Sync markers used here (internal/pkgbits.SyncMarker values; they have
// not changed since the format was introduced).
const (
	syncEOF      = 1
	syncBool     = 2
	syncInt64    = 3
	syncUint64   = 4
	syncString   = 5
	syncRelocs   = 8
	syncReloc    = 9
	syncUseReloc = 10
	syncObject1  = 15
	syncPkg      = 16
	syncPkgDef   = 17
	syncCodeObj  = 25
	syncSym      = 26
	syncFuncExt  = 30
	syncTypeExt  = 32
	syncPragma   = 33
	syncLinkname = 62
)

// Object codes (internal/pkgbits.CodeObj).
const (
	objAlias = iota
	objConst
	objType
	objFunc
	objVar
	objStub
)

const (
	maxVersion      = 2 // the newest format version this decoder knows
	flagSyncMarkers = 1
)

// errFormat is wrapped by every decoding error.
var errFormat = errors.New("malformed or unsupported export data")

// pkgDecoder holds one package's export data.
type pkgDecoder struct {
	path     string
	sync     bool
	ends     [numSections]uint32 // cumulative element counts per section
	elemEnds []uint32            // end offset of every element in data
	data     string
}

func newPkgDecoder(path, input string) (*pkgDecoder, error) {
	pr := &pkgDecoder{path: path}
	r := strings.NewReader(input)
	var version uint32
	if err := binary.Read(r, binary.LittleEndian, &version); err != nil {
		return nil, fmt.Errorf("%w: %v", errFormat, err)
	}
	if version > maxVersion {
		return nil, fmt.Errorf("%w: version %d", errFormat, version)
	}
	if version >= 1 {
		var flags uint32
		if err := binary.Read(r, binary.LittleEndian, &flags); err != nil {
			return nil, fmt.Errorf("%w: %v", errFormat, err)
		}
		pr.sync = flags&flagSyncMarkers != 0
	}
	if err := binary.Read(r, binary.LittleEndian, pr.ends[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", errFormat, err)
	}
	total := pr.ends[numSections-1]
	if int64(total)*4 > int64(r.Len()) {
		return nil, fmt.Errorf("%w: %d elements in %d bytes", errFormat, total, r.Len())
	}
	pr.elemEnds = make([]uint32, total)
	if err := binary.Read(r, binary.LittleEndian, pr.elemEnds); err != nil {
		return nil, fmt.Errorf("%w: %v", errFormat, err)
	}
	pr.data = input[len(input)-r.Len():]
	if total > 0 && int(pr.elemEnds[total-1]) > len(pr.data) {
		return nil, fmt.Errorf("%w: elements end past the data", errFormat)
	}
	return pr, nil
}

// numElems returns the number of elements in section k.
func (pr *pkgDecoder) numElems(k int) int {
	n := int(pr.ends[k])
	if k > 0 {
		n -= int(pr.ends[k-1])
	}
	return n
}

// elem returns the bytes of element idx of section k.
func (pr *pkgDecoder) elem(k, idx int) (string, error) {
	abs := idx
	if k > 0 {
		abs += int(pr.ends[k-1])
	}
	if idx < 0 || abs >= int(pr.ends[k]) {
		return "", fmt.Errorf("%w: element %d of section %d out of range", errFormat, idx, k)
	}
	var start uint32
	if abs > 0 {
		start = pr.elemEnds[abs-1]
	}
	end := pr.elemEnds[abs]
	if start > end {
		return "", fmt.Errorf("%w: element %d of section %d ends before it starts", errFormat, idx, k)
	}
	return pr.data[start:end], nil
}

// reloc is a reference table entry: an element of another section.
type reloc struct{ kind, idx int }

// decoder reads one element. Errors stick: after the first, every read
// returns zero values and err reports it.
type decoder struct {
	pr     *pkgDecoder
	data   strings.Reader
	relocs []reloc
	err    error
}

// newDecoder starts reading element idx of section k, past its reference
// table.
func (pr *pkgDecoder) newDecoder(k, idx int) *decoder {
	d := &decoder{pr: pr}
	s, err := pr.elem(k, idx)
	if err != nil {
		d.err = err
		return d
	}
	d.data.Reset(s)
	d.sync(syncRelocs)
	n := d.len()
	if d.err == nil && n > d.data.Len() {
		d.fail("reference table of %d entries", n)
	}
	d.relocs = make([]reloc, 0, max(n, 0))
	for i := 0; i < n && d.err == nil; i++ {
		d.sync(syncReloc)
		d.relocs = append(d.relocs, reloc{d.len(), d.len()})
	}
	return d
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errFormat, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) rawUvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(&d.data)
	if err != nil {
		d.fail("varint: %v", err)
	}
	return x
}

// peekSync returns the next sync marker without consuming it, or 0 if the
// data has no sync markers.
func (d *decoder) peekSync() int {
	if !d.pr.sync || d.err != nil {
		return 0
	}
	save := d.data
	m := int(d.rawUvarint())
	d.data = save
	return m
}

func (d *decoder) sync(want int) {
	if !d.pr.sync || d.err != nil {
		return
	}
	have := int(d.rawUvarint())
	frames := d.rawUvarint()
	for i := uint64(0); i < frames && d.err == nil; i++ {
		d.rawUvarint()
	}
	if d.err == nil && have != want {
		d.fail("sync marker %d, want %d", have, want)
	}
}

func (d *decoder) bool() bool {
	d.sync(syncBool)
	if d.err != nil {
		return false
	}
	b, err := d.data.ReadByte()
	if err != nil || b > 1 {
		d.fail("bool")
	}
	return b == 1
}

func (d *decoder) int64() int64 {
	d.sync(syncInt64)
	ux := d.rawUvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *decoder) uint64() uint64 {
	d.sync(syncUint64)
	return d.rawUvarint()
}

func (d *decoder) len() int {
	x := d.uint64()
	if x > 1<<31 {
		d.fail("length %d", x)
		return 0
	}
	return int(x)
}

func (d *decoder) code(marker int) int {
	d.sync(marker)
	return d.len()
}

// reloc reads a reference to an element of section k.
func (d *decoder) reloc(k int) int {
	d.sync(syncUseReloc)
	i := d.len()
	if d.err != nil {
		return 0
	}
	if i >= len(d.relocs) || d.relocs[i].kind != k {
		d.fail("reference %d", i)
		return 0
	}
	return d.relocs[i].idx
}

func (d *decoder) string() string {
	d.sync(syncString)
	idx := d.reloc(sectionString)
	if d.err != nil {
		return ""
	}
	s, err := d.pr.elem(sectionString, idx)
	if err != nil {
		d.err = err
	}
	return s
}

// pkgPath reads the path of element idx of the package section; the empty
// path is the package itself.
func (pr *pkgDecoder) pkgPath(idx int) (string, error) {
	d := pr.newDecoder(sectionPkg, idx)
	d.sync(syncPkgDef)
	path := d.string()
	if path == "" {
		path = pr.path
	}
	return path, d.err
}

// peekObj reads the package path, name and object code of object idx.
func (pr *pkgDecoder) peekObj(idx int) (path, name string, code int, err error) {
	d := pr.newDecoder(sectionName, idx)
	d.sync(syncObject1)
	d.sync(syncSym)
	d.sync(syncPkg)
	pkg := d.reloc(sectionPkg)
	name = d.string()
	code = d.code(syncCodeObj)
	if d.err != nil {
		return "", "", 0, d.err
	}
	path, err = pr.pkgPath(pkg)
	return path, name, code, err
}
