package analysis

import (
	"strings"
	"testing"
)

// fuzzIDs are the ids a fuzz record selects from: mostly a few small ids so
// that enters and exits match often, plus Dispatch and the edge ids.
var fuzzIDs = [8]uint32{Dispatch, 1, 2, 3, 4, 5, 0, MaxID}

// fuzzRecords turns fuzz bytes into a mode, an end time and records.
//
// data[0]: bit 0 NonStrict, bit 1 allow time to go backwards, bit 2 also
// read data as a raw dump. data[1:3]: endMs. Then 3 bytes per record:
// b0 bit 0 enter, bits 1..3 id selector (index in fuzzIDs), bits 4..7 == 15
// an empty slot; b1 time step; b2 id override when the selector is 6.
func fuzzRecords(data []byte) (Mode, uint64, []Record) {
	if len(data) < 3 {
		return Strict, 0, nil
	}
	mode := Strict
	if data[0]&1 != 0 {
		mode = NonStrict
	}
	back := data[0]&2 != 0
	endMs := uint64(data[1]) | uint64(data[2])<<8
	var out []Record
	var now int64 = 100
	for p := data[3:]; len(p) >= 3; p = p[3:] {
		b0, b1, b2 := p[0], p[1], p[2]
		if b0>>4 == 15 {
			out = append(out, 0)
			continue
		}
		if back {
			now += int64(b1) - 32
			now = max(now, 0)
		} else {
			now += int64(b1 % 16)
		}
		id := fuzzIDs[b0>>1&7]
		if b0>>1&7 == 6 {
			id = uint32(b2) * 4099 // 0 and ids above MaxID included
		}
		out = append(out, MakeRecord(b0&1 != 0, id, uint64(now)))
	}
	return mode, endMs, out
}

// fuzzEncode is the inverse of fuzzRecords for seeds: ids 1..5 and
// Dispatch, times not decreasing by more than 15 ms per record.
func fuzzEncode(t testing.TB, mode Mode, endMs uint16, recs []Record) []byte {
	out := []byte{byte(mode), byte(endMs), byte(endMs >> 8)}
	now := uint64(100)
	for _, r := range recs {
		sel := -1
		for i, id := range fuzzIDs {
			if id == r.ID() {
				sel = i
			}
		}
		step := r.Time() + 100 - now
		if sel < 0 || r.Time()+100 < now || step > 15 {
			t.Fatalf("record %v cannot be encoded", r)
		}
		now += step
		b0 := byte(sel << 1)
		if r.Enter() {
			b0 |= 1
		}
		out = append(out, b0, byte(step), 0)
	}
	return out
}

func checkResult(t *testing.T, what string, items []Item, res Result) {
	t.Helper()
	for _, list := range [][]Item{items, res.Items} {
		prev := -1
		for i, it := range list {
			if it.Cost < 0 || it.Depth < 0 || it.Depth > prev+1 || it.Count < 1 {
				t.Fatalf("%s: item %d %v after depth %d", what, i, it, prev)
			}
			prev = it.Depth
		}
	}
	if res.Cost < 0 {
		t.Fatalf("%s: negative cost %d", what, res.Cost)
	}
	if len(res.Items) > MaxStackLines {
		t.Fatalf("%s: %d items", what, len(res.Items))
	}
	if n := strings.Count(res.Stack, "\n"); n != len(res.Items) {
		t.Fatalf("%s: %d stack lines for %d items", what, n, len(res.Items))
	}
	if (res.Key == "") != (len(res.Items) == 0) {
		t.Fatalf("%s: key %q for %d items", what, res.Key, len(res.Items))
	}
	if len(res.Starts) != len(res.Items) {
		t.Fatalf("%s: %d starts for %d items", what, len(res.Starts), len(res.Items))
	}
	var parents []int64
	for i, s := range res.Starts {
		d := res.Items[i].Depth
		parents = parents[:min(d, len(parents))]
		if s < 0 || len(parents) > 0 && d > 0 && s < parents[len(parents)-1] {
			t.Fatalf("%s: item %d starts at %d, before its parent (%v)", what, i, s, res.Starts)
		}
		parents = append(parents, s)
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []struct {
		mode Mode
		end  uint16
		recs string
	}{
		{Strict, 0, "i(D@0) i(1@0) i(2@10) o(2@20) i(3@20) o(3@30) o(1@40) o(D@45)"},
		{Strict, 0, "i(D@0) i(1@0) i(2@0) o(2@10) i(2@10) o(2@20) i(2@20) o(2@25) o(1@30) o(D@30)"},
		{NonStrict, 0, "i(1@0) i(2@0) o(2@10) i(3@10) o(3@15) o(1@20) i(4@20) i(5@25)"},
		{Strict, 0, "i(D@0) i(1@0) o(1@10) o(D@10) i(D@15) i(2@15) i(3@20) o(3@30) o(2@35) o(D@35)"},
		{Strict, 300, "i(D@0) i(1@0) i(D@10) i(2@10) o(1@20) o(2@30) o(D@40) i(3@40) i(4@45)"},
		{Strict, 10, "i(D@0) i(1@0) i(2@5) i(3@6) o(3@8) o(1@20) o(D@20) i(D@25) i(4@30)"},
	} {
		f.Add(fuzzEncode(f, s.mode, s.end, recs(f, s.recs)))
	}
	f.Add([]byte{2, 0, 0, 1, 40, 0, 3, 0, 0, 2, 0, 0})  // time goes back
	f.Add([]byte{4, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 255}) // raw dump

	f.Fuzz(func(t *testing.T, data []byte) {
		mode, endMs, rs := fuzzRecords(data)
		items := Items(rs, mode, endMs)
		res := Analyze(rs, mode, endMs, int64(endMs)-1000)
		checkResult(t, "records", items, res)

		if len(data) > 0 && data[0]&4 != 0 {
			raw := data[1:]
			raw = raw[:len(raw)/8*8]
			dump, err := ParseDump(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []Mode{Strict, NonStrict} {
				items := Items(dump, m, endMs<<30)
				res := Analyze(dump, m, endMs<<30, 0)
				checkResult(t, "dump", items, res)
			}
		}
	})
}

func FuzzParseEvents(f *testing.F) {
	f.Add("i D 0\ni 1 0 # c\n0\n\no 1 30\no D 30\n")
	f.Add("i 1048574 8796093022207\r\no 5 x\n")
	f.Add("i D 0\nw 7 5 0x1 0x2\ne 9\ns 9\nr 10\ne 11\no D 12\n")
	f.Fuzz(func(t *testing.T, in string) {
		rs, err := ParseEvents(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error without line: %v", err)
			}
			return
		}
		for i := 0; i < len(rs); i++ {
			r := rs[i]
			if r.ID() == Ext && r.Enter() {
				_, skip := decodeExt(rs[i+1:])
				i += skip // the payload of an extended record
				continue
			}
			if r == 0 || r.ID() < 1 || r.ID() > Ext {
				t.Fatalf("bad record %v", r)
			}
		}
		Analyze(rs, Strict, 0, 0)
	})
}
