package analysis

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/internal/abi"
)

// ParseEvents reads the text event format, one record per line:
//
//	i <id> <ms>             enter of function id at time ms
//	o <id> <ms>             exit of function id at time ms
//	w <reason> <ms> [pc…]   a wait starts (reason: the runtime's wait reason
//	                        code; pc: where it blocked, 0x-hex, innermost first)
//	s <ms>                  a blocking system call starts
//	r <ms>                  the goroutine becomes runnable (waits for a CPU)
//	g <ms> <n> [fn]         goroutine number n starts (fn: the entry of its
//	                        function, 0x-hex); its records follow, and the
//	                        e record after them is its exit
//	e <ms>                  the open wait, system call, runnable time or
//	                        goroutine ends
//	0                       an empty buffer slot (skipped)
//
// id is a decimal number in 1..Dispatch or "D" for Dispatch; ms is
// a decimal number in 0..MaxTime. Fields are separated by spaces or tabs,
// "#" starts a comment that runs to the end of the line, and blank lines are
// ignored. Errors name the 1-based line: "line N: ...".
func ParseEvents(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	var recs []Record
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if line != "" {
			var perr error
			recs, perr = appendEvent(recs, line)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
		}
		if err != nil {
			return recs, nil
		}
	}
}

// appendEvent parses one line and appends its records to recs.
func appendEvent(recs []Record, line string) ([]Record, error) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	if len(f) > 0 {
		switch f[0] {
		case "w", "s", "r", "e":
			return appendExtEvent(recs, f)
		case "g":
			return appendGoEvent(recs, f)
		}
	}
	rec, ok, err := parseEvent(f, line)
	if ok {
		recs = append(recs, rec)
	}
	return recs, err
}

// appendExtEvent parses the fields of a w, s, r or e line.
func appendExtEvent(recs []Record, f []string) ([]Record, error) {
	var reason uint64
	if f[0] == "w" {
		if len(f) < 3 {
			return recs, errors.New("want \"w <reason> <ms> [pc...]\"")
		}
		var err error
		if reason, err = strconv.ParseUint(f[1], 10, 8); err != nil {
			return recs, fmt.Errorf("invalid wait reason %q: want a decimal number in 0..255", f[1])
		}
		f = f[1:]
	} else if len(f) != 2 {
		return recs, fmt.Errorf("want \"%s <ms>\"", f[0])
	}
	ms, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || ms > MaxTime {
		return recs, fmt.Errorf("invalid time %q: want a decimal number of ms in 0..%d", f[1], uint64(MaxTime))
	}
	var pcs []uint64
	for _, t := range f[2:] {
		pc, err := strconv.ParseUint(strings.TrimPrefix(t, "0x"), 16, 64)
		if err != nil || pc == 0 || !strings.HasPrefix(t, "0x") {
			return recs, fmt.Errorf("invalid pc %q: want a non-zero 0x-hex number", t)
		}
		pcs = append(pcs, pc)
	}
	switch f[0] {
	case "e":
		return append(recs, ExtEnd(ms)), nil
	case "s":
		return append(recs, ExtStart(ExtSyscall, 0, ms)...), nil
	case "r":
		return append(recs, ExtStart(ExtRunnable, 0, ms)...), nil
	}
	return append(recs, ExtStart(ExtWait, uint8(reason), ms, pcs...)...), nil
}

// appendGoEvent parses the fields of a g line.
func appendGoEvent(recs []Record, f []string) ([]Record, error) {
	if len(f) != 3 && len(f) != 4 {
		return recs, errors.New(`want "g <ms> <n> [0x<fn>]"`)
	}
	ms, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || ms > MaxTime {
		return recs, fmt.Errorf("invalid time %q: want a decimal number of ms in 0..%d", f[1], uint64(MaxTime))
	}
	n, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil || n == 0 {
		return recs, fmt.Errorf("invalid goroutine number %q: want a decimal number in 1..%d", f[2], uint32(1<<32-1))
	}
	var fn uint64
	if len(f) == 4 {
		fn, err = strconv.ParseUint(strings.TrimPrefix(f[3], "0x"), 16, 64)
		if err != nil || !strings.HasPrefix(f[3], "0x") {
			return recs, fmt.Errorf("invalid function entry %q: want a 0x-hex number", f[3])
		}
	}
	return append(recs, MakeRecord(true, Ext, ms), Record(abi.PackExt(ExtGo, 0, abi.ExtGoWords)), Record(fn), Record(n)), nil
}

// parseEvent parses the fields of an i, o or 0 line; ok is false for a
// line that holds no record.
func parseEvent(f []string, line string) (rec Record, ok bool, err error) {
	switch {
	case len(f) == 0:
		return 0, false, nil
	case len(f) == 1 && f[0] == "0":
		return 0, false, nil
	case len(f) != 3:
		return 0, false, fmt.Errorf("want \"i <id> <ms>\", \"o <id> <ms>\", \"w <reason> <ms>\", \"s <ms>\", \"r <ms>\", \"g <ms> <n>\", \"e <ms>\" or \"0\", got %q", strings.TrimSpace(line))
	}
	var enter bool
	switch f[0] {
	case "i":
		enter = true
	case "o":
	default:
		return 0, false, fmt.Errorf("unknown event %q: want i (enter), o (exit), w (wait), s (system call), r (runnable), g (goroutine) or e (end)", f[0])
	}
	var id uint64
	if f[1] == "D" {
		id = Dispatch
	} else {
		id, err = strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("invalid id %q: want a decimal number or D", f[1])
		}
		if id < 1 || id > Dispatch {
			return 0, false, fmt.Errorf("id %s out of range 1..%d", f[1], Dispatch)
		}
	}
	ms, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, fmt.Errorf("time %s out of range 0..%d", f[2], uint64(MaxTime))
		}
		return 0, false, fmt.Errorf("invalid time %q: want a decimal number of ms", f[2])
	}
	if ms > MaxTime {
		return 0, false, fmt.Errorf("time %s out of range 0..%d", f[2], uint64(MaxTime))
	}
	return MakeRecord(enter, uint32(id), ms), true, nil
}

// ParseDump reads a raw binary buffer dump: a little-endian sequence of
// uint64 records. Zero records are empty slots and are skipped; records are
// otherwise returned as they are (Items copes with any value). It fails if
// len(data) is not a multiple of 8.
func ParseDump(data []byte) ([]Record, error) {
	if len(data)%8 != 0 {
		return nil, fmt.Errorf("buffer dump is %d bytes, not a multiple of 8 (one record is 8 bytes)", len(data))
	}
	recs := make([]Record, 0, len(data)/8)
	for i := 0; i < len(data); i += 8 {
		if v := binary.LittleEndian.Uint64(data[i:]); v != 0 {
			recs = append(recs, Record(v))
		}
	}
	return recs, nil
}
