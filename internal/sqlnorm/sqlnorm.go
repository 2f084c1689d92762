// Package sqlnorm normalises SQL statements for reports: every literal
// becomes "?", so that a statement names what the program asked the
// database, never the values it passed, and statements that differ only
// in their values read the same.
//
// The rules, in the order a statement is read:
//
//   - Whitespace and comments ("-- …" to the end of the line, "/* … */")
//     become one space; leading and trailing space is dropped.
//   - String literals ('…', with a doubled quote or a backslash escaping a quote, and
//     the prefixed forms E'…', N'…', X'…', B'…') become "?", and so do
//     PostgreSQL's dollar-quoted strings ($$…$$, $tag$…$tag$). A literal
//     that does not end runs to the end of the statement.
//   - Numbers (42, 3.14, .5, 1e-3, 0x1F, 0b101) become "?"; digits inside
//     a name (t1) are part of the name.
//   - Placeholders ("?", "$1", ":name", "@name") become "?"; PostgreSQL's
//     cast "::" and SQL Server's "@@name" stay.
//   - Quoted names ("…" and `…`) stay as they are (control characters in
//     them become spaces); one that does not end becomes "?".
//   - Two or more "?" separated only by commas become one, and so do two
//     or more "(?)" separated only by commas: "IN (1, 2, 3)" reads
//     "IN (?)", a multi-row "VALUES (1, 'a'), (2, 'b')" reads "VALUES (?)".
//   - The result is cut at a number of characters (runes).
//
// The package uses no other package but unicode/utf8: it runs in the
// recorder of every instrumented program that uses database/sql.
package sqlnorm

import "unicode/utf8"

// MaxRunes is the length Normalize cuts statements at.
const MaxRunes = 120

// Normalize returns q normalised and cut at MaxRunes characters.
func Normalize(q string) string {
	return string(Append(nil, q, MaxRunes))
}

// Append appends q normalised and cut at maxRunes characters to dst.
func Append(dst []byte, q string, maxRunes int) []byte {
	n := normalizer{out: dst, base: len(dst)}
	n.run(q, maxRunes)
	return n.cut(maxRunes)
}

type normalizer struct {
	out   []byte
	base  int  // where the statement begins in out
	space bool // a space is due before the next token
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// emit appends a token, after the space that is due.
func (n *normalizer) emit(s string) {
	if n.space && len(n.out) > n.base {
		n.out = append(n.out, ' ')
	}
	n.space = false
	n.out = append(n.out, s...)
}

// tail returns the statement written so far with a trailing space
// dropped.
func (n *normalizer) tail() []byte {
	t := n.out[n.base:]
	if len(t) > 0 && t[len(t)-1] == ' ' {
		t = t[:len(t)-1]
	}
	return t
}

// endsWithComma reports whether the statement ends with "<unit>," or
// "<unit>, " (a space may also precede the comma), and returns where the
// comma's run begins (its leading space included) relative to base.
func (n *normalizer) commaAfter(unit string) (int, bool) {
	t := n.tail()
	if len(t) == 0 || t[len(t)-1] != ',' {
		return 0, false
	}
	i := len(t) - 1
	if i > 0 && t[i-1] == ' ' {
		i--
	}
	if i < len(unit) || string(t[i-len(unit):i]) != unit {
		return 0, false
	}
	return i, true
}

// literal writes a "?": after "?," it is dropped, with the comma.
func (n *normalizer) literal() {
	if i, ok := n.commaAfter("?"); ok {
		n.out = n.out[:n.base+i]
		n.space = false
		return
	}
	n.emit("?")
}

// closeParen writes ")": a "(?)" after "(?)," is dropped, with the comma.
func (n *normalizer) closeParen() {
	n.emit(")")
	t := n.out[n.base:]
	if len(t) < 3 || string(t[len(t)-3:]) != "(?)" {
		return
	}
	n.out = n.out[:len(n.out)-3]
	if i, ok := n.commaAfter("(?)"); ok {
		n.out = n.out[:n.base+i]
		return
	}
	// Not a repeat: put it back (a space before it stays where it was).
	n.out = append(n.out, "(?)"...)
}

func (n *normalizer) run(q string, maxRunes int) {
	// Collapsing only ever shortens the last few characters, so once the
	// statement is well past the cut the cut cannot change.
	limit := 4*maxRunes + 64
	for i := 0; i < len(q); {
		if len(n.out)-n.base > limit {
			return
		}
		c := q[i]
		switch {
		case c <= ' ' || c == 0x7f:
			n.space = true
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
			n.space = true
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := indexFrom(q, "*/", i+2)
			if end < 0 {
				i = len(q)
			} else {
				i = end + 2
			}
			n.space = true
		case c == '\'':
			i = skipString(q, i)
			n.literal()
		case c == '"' || c == '`':
			end := skipQuoted(q, i, c)
			if end < 0 {
				n.literal()
				i = len(q)
				break
			}
			n.emit(q[i:end])
			for k := len(n.out) - (end - i); k < len(n.out); k++ {
				if n.out[k] < ' ' || n.out[k] == 0x7f {
					n.out[k] = ' ' // no control characters: a tab separates a boundary's attributes
				}
			}
			i = end
		case c == '$':
			if i+1 < len(q) && isDigit(q[i+1]) {
				i++
				for i < len(q) && isDigit(q[i]) {
					i++
				}
				n.literal()
				break
			}
			if end, ok := skipDollar(q, i); ok {
				i = end
				n.literal()
				break
			}
			n.emit("$")
			i++
		case c == '?':
			n.literal()
			i++
		case c == ':' && i+1 < len(q) && q[i+1] == ':':
			n.emit("::")
			i += 2
		case (c == ':' || c == '@') && i+1 < len(q) && isIdentStart(q[i+1]):
			i++
			for i < len(q) && isIdent(q[i]) {
				i++
			}
			n.literal()
		case c == '@' && i+1 < len(q) && q[i+1] == '@':
			j := i + 2
			for j < len(q) && isIdent(q[j]) {
				j++
			}
			n.emit(q[i:j])
			i = j
		case isDigit(c) || c == '.' && i+1 < len(q) && isDigit(q[i+1]):
			i = skipNumber(q, i)
			n.literal()
		case isIdentStart(c):
			j := i + 1
			for j < len(q) && isIdent(q[j]) {
				j++
			}
			if j == i+1 && j < len(q) && q[j] == '\'' && isPrefix(c) {
				i = skipString(q, j)
				n.literal()
				break
			}
			n.emit(q[i:j])
			i = j
		case c == ')':
			n.closeParen()
			i++
		default:
			n.emit(q[i : i+1])
			i++
		}
	}
}

// isPrefix reports whether c prefixes a string literal (E'…', N'…', X'…',
// B'…').
func isPrefix(c byte) bool {
	switch c | 0x20 {
	case 'e', 'n', 'x', 'b':
		return true
	}
	return false
}

// skipString returns the end of the string literal that starts at the
// quote q[i].
func skipString(q string, i int) int {
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			j++
		case '\'':
			if j+1 < len(q) && q[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

// skipQuoted returns the end of the quoted name that starts at q[i] (the
// quote doubled inside it is an escape), or -1 if it does not end.
func skipQuoted(q string, i int, quote byte) int {
	for j := i + 1; j < len(q); j++ {
		if q[j] == quote {
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return -1
}

// skipDollar reads a dollar-quoted string at q[i] ($$…$$ or $tag$…$tag$)
// and returns its end (the end of q if it does not end); ok is false if
// q[i] does not open one.
func skipDollar(q string, i int) (int, bool) {
	j := i + 1
	if j < len(q) && isIdentStart(q[j]) {
		for j < len(q) && isIdent(q[j]) && q[j] != '$' {
			j++
		}
	}
	if j >= len(q) || q[j] != '$' {
		return 0, false
	}
	tag := q[i : j+1]
	end := indexFrom(q, tag, j+1)
	if end < 0 {
		return len(q), true
	}
	return end + len(tag), true
}

// skipNumber returns the end of the number that starts at q[i].
func skipNumber(q string, i int) int {
	if q[i] == '0' && i+2 < len(q) && (q[i+1]|0x20 == 'x' || q[i+1]|0x20 == 'b') {
		j := i + 2
		for j < len(q) && isIdent(q[j]) {
			j++
		}
		return j
	}
	j := i
	for j < len(q) && isDigit(q[j]) {
		j++
	}
	if j < len(q) && q[j] == '.' {
		j++
		for j < len(q) && isDigit(q[j]) {
			j++
		}
	}
	if j < len(q) && q[j]|0x20 == 'e' {
		k := j + 1
		if k < len(q) && (q[k] == '+' || q[k] == '-') {
			k++
		}
		if k < len(q) && isDigit(q[k]) {
			j = k
			for j < len(q) && isDigit(q[j]) {
				j++
			}
		}
	}
	// A number glued to letters ("1abc") is one token: none of it stays.
	for j < len(q) && isIdent(q[j]) {
		j++
	}
	return j
}

// indexFrom returns the index of sub in q at or after i, or -1.
func indexFrom(q, sub string, i int) int {
	for j := i; j+len(sub) <= len(q); j++ {
		if q[j:j+len(sub)] == sub {
			return j
		}
	}
	return -1
}

// cut drops a trailing space and cuts the statement at maxRunes runes.
func (n *normalizer) cut(maxRunes int) []byte {
	t := n.out[n.base:]
	for len(t) > 0 && t[len(t)-1] == ' ' {
		t = t[:len(t)-1]
	}
	k, runes := 0, 0
	for k < len(t) && runes < maxRunes {
		_, size := utf8.DecodeRune(t[k:])
		k += size
		runes++
	}
	return n.out[:n.base+k]
}
