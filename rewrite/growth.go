package rewrite

import "bytes"

// Growth returns how much instrumenting enlarged the package's source as
// the compiler reads it: the bytes Apply added, line directives not
// counted (the compiler's scanner keeps no more than a position of them),
// as a fraction of the package's original bytes. outs are Apply's results
// for p. A plan that changes nothing has a growth of 0.
func (p *Plan) Growth(outs []Output) float64 {
	orig, added := 0, 0
	for i, f := range p.files {
		orig += len(f.src)
		if i < len(outs) && outs[i].Src != nil {
			added += len(outs[i].Src) - directiveBytes(outs[i].Src)
			added -= len(f.src) - directiveBytes(f.src)
		}
	}
	if orig == 0 || added <= 0 {
		return 0
	}
	return float64(added) / float64(orig)
}

// directiveBytes returns the bytes of src's /*line …*/ directives, the
// form the rewriter writes.
func directiveBytes(src []byte) int {
	n := 0
	for {
		i := bytes.Index(src, []byte("/*line "))
		if i < 0 {
			return n
		}
		j := bytes.Index(src[i:], []byte("*/"))
		if j < 0 {
			return n
		}
		n += j + len("*/")
		src = src[i+j+len("*/"):]
	}
}
