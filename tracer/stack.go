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
