package rewrite

import (
	"bytes"
	"fmt"
	"sort"
)

// An editBuffer holds the edits of one source file and renders them in one
// pass. It is the only place where a file handed to the compiler is spliced,
// whether the edits come from instrumenting user code (Plan) or from the
// declarative patches of the runtime and standard packages (pkgPatch).
//
// Edits are made at byte offsets of the original source and never overlap.
// The rendered file starts with a line directive that names the original
// file, exactly as cmd/cover does, and an edit that inserts code before
// original text ends with a block line directive that gives that text its
// original line and column back: no position of the original moves, in
// error messages, stack traces or the debugger.
type editBuffer struct {
	path  string
	src   []byte
	edits []edit
	// unsorted is set once an edit was added before an earlier one.
	unsorted bool
}

// edit replaces src[offset:end] (end == offset: inserts at offset) with
// text. In a Plan's edits, idMark in text stands for the id of
// Plan.Funcs[fn]; edits of a patch leave fn at -1.
type edit struct {
	offset, end int
	fn          int
	text        string
}

// add records e.
func (b *editBuffer) add(e edit) {
	if n := len(b.edits); n > 0 && e.offset < b.edits[n-1].offset {
		b.unsorted = true
	}
	b.edits = append(b.edits, e)
}

// insert records the insertion of text at offset off; it is not one of a
// Plan's edits.
func (b *editBuffer) insert(off int, text string) {
	b.add(edit{offset: off, end: off, fn: -1, text: text})
}

// changed reports whether the file has edits.
func (b *editBuffer) changed() bool { return len(b.edits) > 0 }

// render returns the edited file. Edits at the same offset are applied in
// the order they were added. expand, if not nil, returns the text of an edit
// (a Plan's edits fill in the function's id); otherwise the text is used as
// it is.
func (b *editBuffer) render(expand func(edit) string) []byte {
	if b.unsorted {
		sort.SliceStable(b.edits, func(i, j int) bool { return b.edits[i].offset < b.edits[j].offset })
		b.unsorted = false
	}
	var out bytes.Buffer
	out.Grow(len(b.src) + len(b.edits)*96 + len(b.path) + 16)
	fmt.Fprintf(&out, "//line %s:1:1\n", b.path)
	last := 0
	for _, e := range b.edits {
		out.Write(b.src[last:e.offset])
		if expand != nil {
			out.WriteString(expand(e))
		} else {
			out.WriteString(e.text)
		}
		last = e.end
	}
	out.Write(b.src[last:])
	return out.Bytes()
}
