package tracer

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
)

// Sizes of the buffer for a dump of every goroutine's stack.
const (
	stackDumpMin = 64 << 10
	stackDumpMax = 64 << 20
	// stackDumpKeep is the largest buffer kept between dumps.
	stackDumpKeep = 1 << 20
)

// stackDump captures the stacks of all goroutines, as runtime.Stack(buf,
// true) formats them, growing buf as needed up to stackDumpMax. It returns
// the dump (inside the possibly new buffer) and whether it is complete.
//
// runtime.Stack stops the world while it formats the stacks: callers take
// one dump per watchdog tick at most, and only when they report.
func stackDump(buf []byte) (dump []byte, complete bool) {
	if cap(buf) < stackDumpMin {
		buf = make([]byte, stackDumpMin)
	}
	buf = buf[:cap(buf)]
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n], true
		}
		if len(buf) >= stackDumpMax {
			return buf[:n], false
		}
		buf = make([]byte, min(2*len(buf), stackDumpMax))
	}
}

// goroutineBlock returns the block of goroutine goid in a dump made by
// runtime.Stack: from its header line "goroutine <goid> [<state>]:" to the
// blank line before the next goroutine, without the final newline. It
// returns "" when the goroutine is not in the dump.
func goroutineBlock(dump []byte, goid uint64) string {
	if goid == 0 {
		return ""
	}
	var pat []byte
	pat = append(pat, "goroutine "...)
	pat = strconv.AppendUint(pat, goid, 10)
	pat = append(pat, ' ')
	for from := 0; from < len(dump); {
		i := bytes.Index(dump[from:], pat)
		if i < 0 {
			return ""
		}
		start := from + i
		from = start + len(pat)
		if start > 0 && dump[start-1] != '\n' {
			continue // "goroutine N " inside a line ("created by … in goroutine N")
		}
		// The header is "goroutine N [state]:" (or, with a higher
		// GOTRACEBACK, "goroutine N gp=… m=… [state]:").
		eol := bytes.IndexByte(dump[start:], '\n')
		if eol < 0 {
			eol = len(dump) - start
		}
		if !bytes.Contains(dump[start:start+eol], []byte(" [")) {
			continue
		}
		end := len(dump)
		if j := bytes.Index(dump[start:], []byte("\n\n")); j >= 0 {
			end = start + j
		}
		return string(bytes.TrimRight(dump[start:end], "\n"))
	}
	return ""
}

// blockedIn returns the innermost function of a goroutine's stack block
// (as goroutineBlock returns it) that is not in the standard library: the
// program's function the goroutine is stuck in, for example
// "main.(*inventory).reserve" under "sync.(*Mutex).Lock". It returns ""
// when every frame is in the standard library.
func blockedIn(block string) string {
	lines := strings.Split(block, "\n")
	for _, line := range lines[min(1, len(lines)):] { // lines[0] is the header
		if line == "" || line[0] == '\t' || strings.HasPrefix(line, "created by ") {
			continue
		}
		fn := line
		if i := strings.LastIndexByte(fn, '('); i > 0 {
			fn = fn[:i]
		}
		first, _, _ := strings.Cut(fn, "/")
		if first == fn { // no slash: "pkg.Func"
			first, _, _ = strings.Cut(fn, ".")
		}
		if first == "main" || strings.Contains(first, ".") {
			return fn
		}
	}
	return ""
}

// scrubStack removes from a goroutine's stack block (as goroutineBlock
// returns it) everything a report must not carry: the argument words of
// every call (user data, lengths, pointers), the code offsets and the
// frame, stack and goroutine addresses that a higher GOTRACEBACK adds. What
// stays is the header "goroutine N [state]:", each function with "(...)"
// for its arguments, and each frame's file:line:
//
//	goroutine 42 [chan receive]:
//	main.(*inventory).reserve(...)
//		/src/main.go:12
//	created by main.main in goroutine 1
//		/src/main.go:30
func scrubStack(block string) string {
	if block == "" {
		return ""
	}
	lines := strings.Split(block, "\n")
	for i, line := range lines {
		switch {
		case i == 0:
			// "goroutine N [state]:", or with GOTRACEBACK=system
			// "goroutine N gp=0x… m=… mp=0x… [state]:".
			if rest, ok := strings.CutPrefix(line, "goroutine "); ok {
				id, _, _ := strings.Cut(rest, " ")
				if j := strings.Index(rest, " ["); j >= 0 {
					lines[i] = "goroutine " + id + rest[j:]
				}
			}
		case strings.HasPrefix(line, "\t"):
			// "\t/src/main.go:12 +0x1d", maybe followed by
			// " fp=0x… sp=0x… pc=0x…". The path may hold spaces; the
			// offset and the addresses come after the line number.
			for _, mark := range []string{" +0x", " fp=", " sp=", " pc="} {
				if j := strings.Index(line, mark); j >= 0 {
					line = line[:j]
				}
			}
			lines[i] = line
		default:
			lines[i] = scrubCall(line)
		}
	}
	return strings.Join(lines, "\n")
}

// scrubCall replaces the argument list of a frame line,
// "main.f(0x1, {0x2, 0x3})", by "(...)". A line that does not end in an
// argument list ("created by main.main in goroutine 1",
// "...additional frames elided...") is returned as it is.
func scrubCall(line string) string {
	if !strings.HasSuffix(line, ")") {
		return line
	}
	depth := 0
	for j := len(line) - 1; j >= 0; j-- {
		switch line[j] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				if j == 0 {
					return line
				}
				return line[:j] + "(...)"
			}
		}
	}
	return line
}
