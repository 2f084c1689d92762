package analysis

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseEvents reads the text event format, one record per line:
//
//	i <id> <ms>   enter of function id at time ms
//	o <id> <ms>   exit of function id at time ms
//	0             an empty buffer slot (skipped)
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
			rec, ok, perr := parseEvent(line)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			if ok {
				recs = append(recs, rec)
			}
		}
		if err != nil {
			return recs, nil
		}
	}
}

// parseEvent parses one line; ok is false for a line that holds no record.
func parseEvent(line string) (rec Record, ok bool, err error) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	f := strings.Fields(line)
	switch {
	case len(f) == 0:
		return 0, false, nil
	case len(f) == 1 && f[0] == "0":
		return 0, false, nil
	case len(f) != 3:
		return 0, false, fmt.Errorf("want \"i <id> <ms>\", \"o <id> <ms>\" or \"0\", got %q", strings.TrimSpace(line))
	}
	var enter bool
	switch f[0] {
	case "i":
		enter = true
	case "o":
	default:
		return 0, false, fmt.Errorf("unknown event %q: want i (enter) or o (exit)", f[0])
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
