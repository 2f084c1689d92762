package analysis

import (
	"encoding/binary"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

// extRecords turns fuzz bytes into a record sequence that mixes calls,
// dispatches and intervals, with times that never go back. Two bytes per
// event: b0 selects the event, b1 the time step and the wait's reason and
// number of program counters. A sequence may end inside a payload.
func extRecords(data []byte) []Record {
	var out []Record
	now := uint64(100)
	for p := data; len(p) >= 2; p = p[2:] {
		b0, b1 := p[0], p[1]
		now += uint64(b1 % 8)
		switch op := b0 % 16; {
		case op < 4:
			out = append(out, MakeRecord(true, uint32(op)+1, now))
		case op < 8:
			out = append(out, MakeRecord(false, uint32(op)-3, now))
		case op == 8:
			out = append(out, MakeRecord(true, Dispatch, now))
		case op == 9:
			out = append(out, MakeRecord(false, Dispatch, now))
		case op == 10:
			pcs := make([]uint64, b1>>6)
			for i := range pcs {
				pcs[i] = binary.LittleEndian.Uint64(append(append([]byte{}, p...), make([]byte, 8)...)) | 1<<63 | uint64(i)
			}
			out = append(out, ExtStart(ExtWait, b1>>3, now, pcs...)...)
		case op == 11:
			out = append(out, ExtStart(ExtSyscall, 0, now)...)
		case op == 12:
			out = append(out, ExtStart(ExtRunnable, 0, now)...)
		case op == 14 && b1&0x40 != 0:
			// A recovery by the function with id b1%5 (0: none).
			out = append(out, ExtStart(ExtRecover, 0, now, uint64(b1%5), 7)...)
			out = append(out, ExtEnd(now))
		case op == 13 || op == 14:
			out = append(out, ExtEnd(now))
		case b1&1 == 1:
			out = append(out, MakeRecord(true, Ext, now), Record(abi.PackExt(ExtGo, b1>>7, abi.ExtGoWords)), Record(b1), Record(b1>>1))
		default:
			out = append(out, Record(uint64(b1)<<56|now)) // a stray word of another id
		}
	}
	if len(data)%2 == 1 && len(out) > 0 {
		out = out[:len(out)-int(data[len(data)-1])%min(len(out), 4)] // cut off, maybe in a payload
	}
	return out
}

// checkNesting fails if a node's children together cost more than it.
// Goroutines (exts[i].Concurrent()) ran beside their parent: they are not
// part of its cost, and only their own children are checked.
func checkNesting(t *testing.T, what string, items []Item, exts []*Interval) {
	t.Helper()
	type open struct {
		i    int
		kids int64
	}
	var st []open
	pop := func(depth int) {
		for len(st) > 0 && items[st[len(st)-1].i].Depth >= depth {
			o := st[len(st)-1]
			if o.kids > items[o.i].Cost {
				t.Fatalf("%s: item %d %v has children costing %d: %v", what, o.i, items[o.i], o.kids, items)
			}
			st = st[:len(st)-1]
		}
	}
	for i, it := range items {
		if it.Cost < 0 {
			t.Fatalf("%s: negative cost in %v", what, it)
		}
		pop(it.Depth)
		if len(st) > 0 && !(i < len(exts) && exts[i].Concurrent()) {
			st[len(st)-1].kids += it.Cost
		}
		st = append(st, open{i: i})
	}
	pop(0)
}

func FuzzAnalyzeExt(f *testing.F) {
	f.Add([]byte{8, 0, 0, 1, 10, 0x4a, 13, 3, 12, 0, 13, 1, 4, 2, 9, 0})
	f.Add([]byte{8, 0, 0, 1, 1, 1, 10, 0xc1, 11, 2, 14, 3, 5, 1, 4, 1, 9, 0, 3})
	f.Add([]byte{8, 0, 10, 0xff, 10, 0x80, 13, 5, 15, 200, 9, 1})
	f.Add([]byte{8, 0, 0, 1, 15, 3, 1, 1, 10, 0x42, 13, 7, 5, 2, 13, 4, 4, 1, 15, 5, 13, 0, 9, 0})
	f.Add([]byte{8, 0, 0, 1, 1, 1, 2, 1, 14, 0x41, 10, 0x42, 13, 7, 4, 1, 9, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rs := extRecords(data)
		for _, mode := range []Mode{Strict, NonStrict} {
			items, exts := ItemsExt(rs, mode, 50)
			if exts != nil && len(exts) != len(items) {
				t.Fatalf("%d intervals for %d items", len(exts), len(items))
			}
			for i, it := range items {
				if (it.ID == Ext) != (exts != nil && exts[i] != nil) {
					t.Fatalf("item %d %v with interval %v", i, it, exts)
				}
			}
			checkNesting(t, "items", items, exts)
			res := Analyze(rs, mode, 50, 10)
			checkResult(t, "ext", items, res)
			checkNesting(t, "trimmed", res.Items, res.Exts)
			// With the functions named, recoveries close unwound calls.
			rf := AnalyzeFuncs(rs, mode, 50, 10, func(pc uint64) uint32 { return uint32(pc % 5) })
			checkNesting(t, "recovered", rf.Items, rf.Exts)
			for i, it := range rf.Items {
				if it.Cost < 0 || (i > 0 && it.Depth > rf.Items[i-1].Depth+1) {
					t.Fatalf("recovered: item %d %v in %v", i, it, rf.Items)
				}
			}
			if res.KeyIndex >= len(res.Items) || (res.KeyIndex < 0) != (len(res.Items) == 0) {
				t.Fatalf("key index %d of %d items", res.KeyIndex, len(res.Items))
			}
		}
	})
}
