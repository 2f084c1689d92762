package analysis

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

var notation = regexp.MustCompile(`^([io])\((D|\d+)@(\d+)\)$`)

// recs parses the record notation of docs/design.md, e.g. "i(D@0) i(1@0) o(1@5)".
func recs(t testing.TB, s string) []Record {
	t.Helper()
	var out []Record
	for _, f := range strings.Fields(s) {
		m := notation.FindStringSubmatch(f)
		if m == nil {
			t.Fatalf("bad record %q", f)
		}
		id := uint64(Dispatch)
		if m[2] != "D" {
			id, _ = strconv.ParseUint(m[2], 10, 32)
		}
		ms, _ := strconv.ParseUint(m[3], 10, 64)
		out = append(out, MakeRecord(m[1] == "i", uint32(id), ms))
	}
	return out
}

// lines turns report lines written with D for Dispatch into Result.Stack.
func lines(ls ...string) string {
	var b strings.Builder
	for _, l := range ls {
		f := strings.Split(l, ",")
		if f[1] == "D" {
			f[1] = strconv.Itoa(Dispatch)
		}
		b.WriteString(strings.Join(f, ","))
		b.WriteByte('\n')
	}
	return b.String()
}

type analyzeCase struct {
	name    string
	records string
	mode    Mode
	endMs   uint64
	trigger int64
	want    []string // report lines, D for Dispatch
	cost    int64
	key     string
}

func runCases(t *testing.T, cases []analyzeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Analyze(recs(t, c.records), c.mode, c.endMs, c.trigger)
			if want := lines(c.want...); got.Stack != want {
				t.Errorf("stack:\n%s\nwant:\n%s", got.Stack, want)
			}
			if got.Key != c.key {
				t.Errorf("key = %q, want %q", got.Key, c.key)
			}
			if got.Cost != c.cost {
				t.Errorf("cost = %d, want %d", got.Cost, c.cost)
			}
			if len(got.Items) != len(c.want) {
				t.Errorf("%d items, want %d", len(got.Items), len(c.want))
			}
			checkTree(t, got.Items)
		})
	}
}

// checkTree asserts the invariants every analysis result must satisfy.
func checkTree(t testing.TB, items []Item) {
	t.Helper()
	prev := -1
	for i, it := range items {
		if it.Depth < 0 || it.Depth > prev+1 {
			t.Fatalf("item %d %v: depth after %d", i, it, prev)
		}
		if it.Cost < 0 {
			t.Fatalf("item %d %v: negative cost", i, it)
		}
		if it.Count < 1 {
			t.Fatalf("item %d %v: count < 1", i, it)
		}
		prev = it.Depth
	}
}

// TestDesignExamples are the five worked examples of docs/design.md, verbatim.
func TestDesignExamples(t *testing.T) {
	runCases(t, []analyzeCase{{
		name:    "nested",
		records: "i(D@0) i(1@0) i(2@10) o(2@30) i(3@30) o(3@100) o(1@120) o(D@125)",
		want:    []string{"0,D,1,125", "1,1,1,120", "2,2,1,20", "2,3,1,70"},
		cost:    125,
		key:     "1|",
	}, {
		name:    "leaf merge",
		records: "i(D@0) i(1@0) i(2@0) o(2@10) i(2@10) o(2@20) i(2@20) o(2@40) o(1@50) o(D@50)",
		want:    []string{"0,D,1,50", "1,1,1,50", "2,2,3,40"},
		cost:    50,
		key:     "2|",
	}, {
		name:    "no merge of non-leaves",
		records: "i(D@0) i(1@0) i(2@0) i(3@0) o(3@10) o(2@10) i(2@10) i(3@10) o(3@30) o(2@30) o(1@30) o(D@30)",
		want:    []string{"0,D,1,30", "1,1,1,30", "2,2,1,10", "3,3,1,10", "2,2,1,20", "3,3,1,20"},
		cost:    30,
		key:     "3|",
	}, {
		name:    "non-strict drops open methods",
		records: "i(1@0) i(2@0) o(2@20) i(3@20) o(3@50) o(1@60) i(4@60) i(5@70)",
		mode:    NonStrict,
		want:    []string{"0,1,1,60", "1,2,1,20", "1,3,1,30"},
		cost:    60,
		key:     "1|",
	}, {
		name:    "two dispatches",
		records: "i(D@0) i(1@0) o(1@30) o(D@30) i(D@40) i(2@40) i(3@45) o(3@60) o(2@70) o(D@70)",
		want:    []string{"0,D,1,30", "1,1,1,30", "0,D,1,30", "1,2,1,30", "2,3,1,15"},
		cost:    30,
		key:     "1|",
	}})
}

func TestItemsEdgeCases(t *testing.T) {
	runCases(t, []analyzeCase{{
		name:    "trigger cost above items",
		records: "i(D@0) i(1@0) i(2@0) o(2@10) o(1@100) o(D@100)",
		trigger: 700,
		// limit 210: no candidate, so the first item; it is D but has no
		// rival candidate.
		want: []string{"0,D,1,100", "1,1,1,100", "2,2,1,10"},
		cost: 700,
		key:  "1048574|",
	}, {
		name:    "strict ignores records before the first dispatch",
		records: "i(1@0) o(1@5) o(D@6) i(2@6) i(D@10) i(3@10) o(3@15) o(D@20) o(2@21)",
		// o(2@21) would pop past nothing but its enter was ignored.
		want: []string{"0,D,1,10", "1,3,1,5"},
		cost: 10,
		key:  "3|",
	}, {
		name:    "exit popping past dispatch is dropped",
		records: "i(D@0) i(1@0) i(D@10) i(2@10) o(1@20) o(2@30) o(D@40) o(1@50) o(D@60)",
		// o(1@20) finds D@10 before 1@0: dropped, 2 stays open and
		// completes at 30; the nested dispatch is a tree of its own.
		want: []string{"0,D,1,60", "1,1,1,50", "0,D,1,30", "1,2,1,20"},
		cost: 60,
		key:  "1|",
	}, {
		name:    "exit without enter is dropped",
		records: "i(D@0) i(1@5) o(2@7) o(1@9) o(3@9) o(D@10)",
		want:    []string{"0,D,1,10", "1,1,1,4"},
		cost:    10,
		key:     "1|",
	}, {
		name:    "exit without enter in non-strict mode",
		records: "o(9@0) i(1@0) o(2@5) o(1@10)",
		mode:    NonStrict,
		want:    []string{"0,1,1,10"},
		cost:    10,
		key:     "1|",
	}, {
		name:    "lost exit vanishes, as in Matrix",
		records: "i(D@0) i(1@0) i(2@5) i(3@6) o(3@8) o(1@20) o(D@20)",
		// 2 never exits, and no recovery record says when it ended:
		// o(1) pops it and it makes no item; its child 3 stays, under 1.
		want: []string{"0,D,1,20", "1,1,1,20", "2,3,1,2"},
		cost: 20,
		key:  "1|",
	}, {
		name:    "lost exits above a dispatch exit vanish",
		records: "i(D@0) i(1@0) i(2@5) i(3@6) o(3@8) o(D@20)",
		want:    []string{"0,D,1,20", "1,3,1,2"},
		cost:    20,
		key:     "1048574|",
	}, {
		name:    "lost dispatch exit",
		records: "i(D@0) i(1@0) i(2@0) o(2@10) i(D@20) i(3@20) o(3@30) o(D@30)",
		endMs:   50,
		// 1 and the first D never exit and are closed at endMs; the
		// second dispatch resets the depth.
		want: []string{"0,D,1,50", "1,1,1,50", "2,2,1,10", "0,D,1,10", "1,3,1,10"},
		cost: 50,
		key:  "1|",
	}, {
		name:    "no merge across dispatches",
		records: "i(D@0) i(1@0) i(5@0) o(5@10) i(D@20) i(2@20) i(5@20) o(5@30) o(2@30) o(D@30)",
		endMs:   40,
		// Matrix folds the two 5s (same id and depth, completed in a row).
		want: []string{"0,D,1,40", "1,1,1,40", "2,5,1,10", "0,D,1,10", "1,2,1,10", "2,5,1,10"},
		cost: 40,
		key:  "1|",
	}, {
		name:    "nested dispatch",
		records: "i(D@0) i(1@0) i(D@5) i(2@5) o(2@6) o(D@7) o(1@8) o(D@9)",
		want:    []string{"0,D,1,9", "1,1,1,8", "0,D,1,2", "1,2,1,1"},
		cost:    9,
		key:     "1|",
	}, {
		name:    "merged cost of exactly 5000 ms",
		records: "i(D@0) i(1@0) i(2@0) o(2@10) i(2@10) o(2@5010) o(1@5010) o(D@5010)",
		// Matrix replaces the 5000 by the previous cost: 2,2,2,20.
		want: []string{"0,D,1,5010", "1,1,1,5010", "2,2,2,5010"},
		cost: 5010,
		key:  "2|",
	}, {
		name:    "empty dispatch",
		records: "i(D@0) o(D@10)",
		want:    []string{"0,D,1,10"},
		cost:    10,
		key:     "1048574|",
	}, {
		name:    "strict closes open methods at endMs",
		records: "i(D@0) i(1@10) i(2@20) o(2@30) i(3@40)",
		endMs:   100,
		want:    []string{"0,D,1,100", "1,1,1,90", "2,2,1,10", "2,3,1,60"},
		cost:    100,
		key:     "1|",
	}, {
		name:    "endMs before an open enter",
		records: "i(D@0) i(1@10) i(2@20) o(2@30) i(3@40)",
		endMs:   35,
		// Closed at max(endMs, latest record) = 40.
		want: []string{"0,D,1,40", "1,1,1,30", "2,2,1,10", "2,3,1,0"},
		cost: 40,
		key:  "1|",
	}, {
		name:    "endMs zero",
		records: "i(D@0) i(1@10) o(1@30) i(2@30)",
		want:    []string{"0,D,1,30", "1,1,1,20", "1,2,1,0"},
		cost:    30,
		key:     "1|",
	}, {
		name:    "non-strict: child of an open method becomes a root",
		records: "i(1@0) i(2@0) o(2@10) i(2@10) o(2@15)",
		mode:    NonStrict,
		want:    []string{"0,2,2,15"},
		cost:    15,
		key:     "2|",
	}, {
		name:    "negative duration aborts",
		records: "i(D@0) i(1@0) i(2@10) o(2@5) o(1@20) o(D@20)",
		trigger: 700,
		want:    nil,
		cost:    700,
		key:     "",
	}, {
		name:    "negative duration in non-strict mode",
		records: "i(1@10) o(1@20) i(2@30) o(2@29)",
		mode:    NonStrict,
		want:    nil,
		key:     "",
	}, {
		name:    "never begun",
		records: "i(1@0) o(1@10)",
		trigger: 5,
		want:    nil,
		cost:    5,
		key:     "",
	}, {
		name:    "negative trigger",
		records: "",
		trigger: -3,
		want:    nil,
		cost:    0,
		key:     "",
	}})
}

func TestItemsEmptySlots(t *testing.T) {
	rs := recs(t, "i(D@0) i(1@0) o(1@30) o(D@30)")
	withSlots := []Record{0, rs[0], 0, 0, rs[1], rs[2], 0, rs[3], 0}
	got := Analyze(withSlots, Strict, 0, 0)
	if want := lines("0,D,1,30", "1,1,1,30"); got.Stack != want {
		t.Errorf("stack:\n%s\nwant:\n%s", got.Stack, want)
	}
}

func TestRecord(t *testing.T) {
	r := MakeRecord(true, Dispatch, MaxTime)
	if !r.Enter() || r.ID() != Dispatch || r.Time() != MaxTime {
		t.Errorf("got %v %d %d", r.Enter(), r.ID(), r.Time())
	}
	if uint64(r) != 1<<63|0xFFFFE<<43|(1<<43-1) {
		t.Errorf("layout: %#x", uint64(r))
	}
	r = MakeRecord(false, 1<<20|7, 1<<43|9)
	if r.Enter() || r.ID() != 7 || r.Time() != 9 {
		t.Errorf("masking: got %v %d %d", r.Enter(), r.ID(), r.Time())
	}
	if s := MakeRecord(true, Dispatch, 3).String(); s != "i(D@3)" {
		t.Errorf("String = %q", s)
	}
	if s := MakeRecord(false, 12, 0).String(); s != "o(12@0)" {
		t.Errorf("String = %q", s)
	}
}

func TestParseEvents(t *testing.T) {
	in := "# a dispatch\n" +
		"i D 0\n" +
		"0\n" +
		"\n" +
		"  i\t1 0   # enter\r\n" +
		"0 # empty slot\n" +
		"o 1 30\n" +
		"o 1048574 30" // no final newline
	got, err := ParseEvents(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := recs(t, "i(D@0) i(1@0) o(1@30) o(D@30)")
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if got, err := ParseEvents(strings.NewReader("")); err != nil || len(got) != 0 {
		t.Errorf("empty input: %v, %v", got, err)
	}
}

func TestParseEventsErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"x 1 0", "line 1: unknown event \"x\""},
		{"i D 0\n\nI 1 0", "line 3: unknown event \"I\""},
		{"i 1", "line 1: want"},
		{"i 1 2 3", "line 1: want"},
		{"# c\n1", "line 2: want"},
		{"i 0 5", "line 1: id 0 out of range 1..1048574"},
		{"i 1048575 5", "line 1: id 1048575 out of range"},
		{"i 99999999999999999999 5", "line 1: invalid id"},
		{"i -1 5", "line 1: invalid id \"-1\""},
		{"i d 5", "line 1: invalid id \"d\""},
		{"i 0x10 5", "line 1: invalid id"},
		{"o 1 abc", "line 1: invalid time \"abc\""},
		{"o 1 -5", "line 1: invalid time"},
		{"o 1 1.5", "line 1: invalid time"},
		{"o 1 8796093022208", "line 1: time 8796093022208 out of range"},
		{"o 1 99999999999999999999", "line 1: time 99999999999999999999 out of range"},
		{"i 1 0\ni 2 0\ni 3 0\no 3 x # bad", "line 4: invalid time \"x\""},
		{"g 5", "line 1: want \"g <ms> <n> [0x<fn>]\""},
		{"g x 1", "line 1: invalid time \"x\""},
		{"g 5 0", "line 1: invalid goroutine number \"0\""},
		{"g 5 1 10", "line 1: invalid function entry \"10\""},
	} {
		_, err := ParseEvents(strings.NewReader(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseEvents(%q) error = %v, want prefix %q", c.in, err, c.want)
		}
	}
	if _, err := ParseEvents(strings.NewReader("o 1 " + strconv.FormatUint(MaxTime, 10))); err != nil {
		t.Errorf("MaxTime rejected: %v", err)
	}
}

func TestParseDump(t *testing.T) {
	want := recs(t, "i(D@0) i(1@0) o(1@30) o(D@30)")
	var buf bytes.Buffer
	for i, r := range want {
		if i == 1 {
			binary.Write(&buf, binary.LittleEndian, uint64(0))
		}
		binary.Write(&buf, binary.LittleEndian, uint64(r))
	}
	binary.Write(&buf, binary.LittleEndian, uint64(0))
	got, err := ParseDump(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if got, err := ParseDump(nil); err != nil || len(got) != 0 {
		t.Errorf("empty dump: %v, %v", got, err)
	}
	if _, err := ParseDump(make([]byte, 12)); err == nil || !strings.Contains(err.Error(), "12 bytes") {
		t.Errorf("odd length: error = %v", err)
	}
}

// flat builds a root of cost rootCost with one child per cost.
func flat(rootCost int64, costs ...int64) []Item {
	items := []Item{{Depth: 0, ID: 1, Count: 1, Cost: rootCost}}
	for i, c := range costs {
		items = append(items, Item{Depth: 1, ID: uint32(100 + i), Count: 1, Cost: c})
	}
	return items
}

func repeat(n int, c int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = c
	}
	return out
}

func costs(items []Item) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.Cost
	}
	return out
}

func equalInt64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTrim(t *testing.T) {
	cat := func(parts ...[]int64) []int64 {
		var out []int64
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		items []Item
		want  []int64 // costs of the kept items, in order
	}{{
		name:  "under the limit",
		items: flat(1000, 1, 2, 3),
		want:  []int64{1000, 1, 2, 3},
	}, {
		// 32 items; round 1 removes 3 then 2 from the tail and stops at
		// 30, so the earlier 4 ms item survives.
		name:  "stops the moment 30 remain",
		items: flat(1000, cat([]int64{4}, repeat(25, 100), []int64{6, 2, 7, 3, 8})...),
		want:  cat([]int64{1000, 4}, repeat(25, 100), []int64{6, 7, 8}),
	}, {
		// 33 items; round 1 removes 3 and 2, round 2 (< 10 ms) removes 8
		// from the tail and stops: 6 and 7 survive.
		name:  "several rounds",
		items: flat(1000, cat(repeat(24, 100), []int64{6, 2, 7, 3, 8, 12, 40, 13})...),
		want:  cat([]int64{1000}, repeat(24, 100), []int64{6, 7, 12, 40, 13}),
	}, {
		// 41 items; round 1 removes the 1 ms items, rounds 2..60 (up to
		// 300 ms) remove nothing more: the first 30 are kept.
		name:  "more than 30 after 60 rounds",
		items: flat(5000, cat([]int64{1, 1}, repeat(35, 400), []int64{1, 1, 1})...),
		want:  cat([]int64{5000}, repeat(29, 400)),
	}, {
		// Round 60 removes items under 300 ms, round 61 never runs.
		name:  "round 60 is the last",
		items: flat(5000, cat(repeat(5, 299), repeat(30, 300))...),
		want:  cat([]int64{5000}, repeat(29, 300)),
	}} {
		t.Run(c.name, func(t *testing.T) {
			in := append([]Item(nil), c.items...)
			got := Trim(c.items, MaxStackLines)
			if !equalInt64(costs(got), c.want) {
				t.Errorf("costs = %v\nwant    %v", costs(got), c.want)
			}
			if !equalInt64(costs(c.items), costs(in)) {
				t.Errorf("input modified")
			}
			checkTree(t, got)
		})
	}
}

func TestTrimKeepsTreeShape(t *testing.T) {
	// A removed parent (cost 1) whose children cost more (inconsistent
	// timestamps): the children move up to the nearest kept ancestor.
	items := []Item{
		{0, 1, 1, 100},
		{1, 2, 1, 1},
		{2, 3, 1, 50},
		{2, 4, 1, 50},
		{3, 5, 1, 40},
		{1, 6, 1, 50},
	}
	got := Trim(items, 5)
	want := []Item{
		{0, 1, 1, 100},
		{1, 3, 1, 50},
		{1, 4, 1, 50},
		{2, 5, 1, 40},
		{1, 6, 1, 50},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if got := Trim(items, -1); len(got) != 0 {
		t.Errorf("negative max: %v", got)
	}
	if got := Trim(items, 0); len(got) != 0 {
		t.Errorf("max 0: %v", got)
	}
}

func TestStackKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		items []Item
		cost  int64
		want  string
	}{
		{"empty", nil, 100, ""},
		{"dispatch alone", []Item{{0, Dispatch, 1, 100}}, 100, "1048574|"},
		{"dispatch dropped", []Item{{0, Dispatch, 1, 100}, {1, 7, 1, 40}}, 100, "7|"},
		{"dispatch not a candidate rival", []Item{{0, Dispatch, 1, 100}, {1, 7, 1, 29}}, 100, "1048574|"},
		{"next best after dispatch", []Item{{0, Dispatch, 1, 1000}, {1, 7, 1, 300}, {1, 8, 1, 400}}, 1000, "8|"},
		{"no candidate: first item", []Item{{0, 4, 1, 10}, {1, 5, 1, 20}}, 1000, "4|"},
		{"tie: list order", []Item{{0, 4, 1, 60}, {1, 5, 1, 30}, {2, 6, 1, 20}}, 60, "4|"},
		{"limit truncated", []Item{{0, 4, 1, 15}, {5, 5, 1, 4}}, 15, "5|"},
		{"huge weights", []Item{{0, 4, 1, 1 << 62}, {3, 5, 1, 1<<62 - 1}}, 1 << 62, "5|"},
	} {
		if got := StackKey(c.items, c.cost); got != c.want {
			t.Errorf("%s: StackKey = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	r := Analyze(recs(t, "i(D@0) i(1@0) o(1@30) o(D@30)"), Strict, 0, 700)
	want := "0,1048574,1,30\n1,1,1,30\ncost=700\nstackKey=1048574|\n"
	if got := r.Format(); got != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
	if got := (Result{}).Format(); got != "cost=0\nstackKey=\n" {
		t.Errorf("empty Format = %q", got)
	}
}

func TestAnalyzeTrims(t *testing.T) {
	// One dispatch with 50 children of 1 ms and one of 200 ms.
	var b strings.Builder
	b.WriteString("i(D@0) i(1@0) ")
	t0 := 0
	for i := range 50 {
		id := 10 + i%2 // alternate ids: no merging
		b.WriteString("i(" + strconv.Itoa(id) + "@" + strconv.Itoa(t0) + ") o(" + strconv.Itoa(id) + "@" + strconv.Itoa(t0+1) + ") ")
		t0++
	}
	b.WriteString("i(99@" + strconv.Itoa(t0) + ") o(99@" + strconv.Itoa(t0+200) + ") o(1@300) o(D@300)")
	r := Analyze(recs(t, b.String()), Strict, 0, 700)
	if len(r.Items) != MaxStackLines {
		t.Fatalf("%d items", len(r.Items))
	}
	if last := r.Items[len(r.Items)-1]; last.ID != 99 {
		t.Errorf("last item %v, want the 200 ms call kept", last)
	}
	// 99 (200 ms) is under 30 % of 700 ms; 1 outweighs D.
	if r.Key != "1|" || r.Cost != 700 {
		t.Errorf("key %q cost %d", r.Key, r.Cost)
	}
}

// benchRecords builds a realistic single-dispatch buffer of about n records:
// a random call tree up to 24 deep with runs of repeated leaf calls, a few
// lost exits and the dispatch still open at the end.
func benchRecords(n int) []Record {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Record, 0, n+64)
	var now uint64
	out = append(out, MakeRecord(true, Dispatch, now))
	var call func(depth int)
	call = func(depth int) {
		id := uint32(1 + rng.IntN(3000))
		out = append(out, MakeRecord(true, id, now))
		for len(out) < n && rng.IntN(4) != 0 {
			if depth < 24 && rng.IntN(3) == 0 {
				call(depth + 1)
				continue
			}
			leaf := uint32(1 + rng.IntN(3000))
			for range 1 + rng.IntN(4) {
				out = append(out, MakeRecord(true, leaf, now))
				now += uint64(rng.IntN(3))
				out = append(out, MakeRecord(false, leaf, now))
			}
		}
		now += uint64(rng.IntN(2))
		if rng.IntN(200) != 0 { // rarely lose the exit
			out = append(out, MakeRecord(false, id, now))
		}
	}
	for len(out) < n {
		call(1)
	}
	return out
}

func BenchmarkAnalyze(b *testing.B) {
	recs := benchRecords(10000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := Analyze(recs, Strict, 0, 700)
		if r.Key == "" {
			b.Fatal("empty key")
		}
	}
}

func BenchmarkItems(b *testing.B) {
	recs := benchRecords(10000)
	b.ReportAllocs()
	for b.Loop() {
		Items(recs, Strict, 0)
	}
}

// TestOpenStackIndex checks the id index a deep stack switches to against
// a plain scan.
func TestOpenStackIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []uint32{1, 2, 3, 4, 5, 6, 7}
	indexed := 0
	for round := range 200 {
		st := openStack{dTop: -1}
		var ref []uint32
		for range 2000 {
			id := ids[rng.IntN(len(ids))]
			if rng.IntN(1+round%64) == 0 { // dispatches from frequent to rare
				id = Dispatch
			}
			if rng.IntN(100) < 60+round%30 { // deep stacks in later rounds
				st.push(open{id: id})
				ref = append(ref, id)
				continue
			}
			want := -1
			for j := len(ref) - 1; j >= 0; j-- {
				if ref[j] == id {
					want = j
					break
				}
				if ref[j] == Dispatch {
					break
				}
			}
			if got := st.find(id); got != want {
				t.Fatalf("round %d: find(%d) = %d, want %d (indexed %v)", round, id, got, want, st.index != nil)
			}
			if want >= 0 {
				st.truncate(want)
				ref = ref[:want]
			}
		}
		if st.index != nil {
			indexed++
		}
	}
	if indexed < 50 || indexed == 200 {
		t.Errorf("%d of 200 rounds used the index, want both modes", indexed)
	}
}

// TestLinearOnGarbage feeds a deep stack and many exits without enters: a
// quadratic scan would take tens of seconds.
func TestLinearOnGarbage(t *testing.T) {
	var rs []Record
	for range 200000 {
		rs = append(rs, MakeRecord(true, 1, 0))
	}
	for range 200000 {
		rs = append(rs, MakeRecord(false, 2, 0))
	}
	rs = append(rs, MakeRecord(false, 1, 7))
	items := Items(rs, NonStrict, 0)
	if len(items) != 1 || items[0] != (Item{0, 1, 1, 7}) {
		t.Errorf("got %d items, first %v", len(items), items[:min(1, len(items))])
	}
}

func TestAnalyzeStarts(t *testing.T) {
	cases := []struct {
		name    string
		records string
		mode    Mode
		endMs   uint64
		want    []int64
	}{
		{
			name:    "nested and folded",
			records: "i(D@100) i(1@102) i(2@105) o(2@110) i(3@111) o(3@112) i(3@112) o(3@114) o(1@150) i(4@160) o(4@190) o(D@200)",
			mode:    Strict,
			// D, 1, 2, 3 (two calls folded: the first one's start), 4
			want: []int64{0, 2, 5, 11, 60},
		},
		{
			name:    "leftovers before the dispatch",
			records: "i(9@10) i(D@40) i(1@45) o(1@90) o(D@100)",
			mode:    Strict,
			want:    []int64{0, 5},
		},
		{
			name:    "open methods closed at the end",
			records: "i(D@7) i(1@8) i(2@20)",
			mode:    Strict,
			endMs:   50,
			want:    []int64{0, 1, 13},
		},
		{
			name:    "non-strict: earliest root",
			records: "i(5@3) o(5@9) i(6@12) o(6@30)",
			mode:    NonStrict,
			want:    []int64{0, 9},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Analyze(recs(t, c.records), c.mode, c.endMs, 0)
			if !slices.Equal(r.Starts, c.want) {
				t.Errorf("Starts = %v, want %v (items %v)", r.Starts, c.want, r.Items)
			}
		})
	}
}

func TestAnalyzeStartsAfterTrim(t *testing.T) {
	// 40 cheap children then one costly one: the trimmed list keeps the
	// costly child, whose start must be its own, not its list position's.
	var b strings.Builder
	b.WriteString("i(D@0) ")
	t0 := 0
	for i := range 40 {
		id := 10 + i%2
		b.WriteString("i(" + strconv.Itoa(id) + "@" + strconv.Itoa(t0) + ") o(" + strconv.Itoa(id) + "@" + strconv.Itoa(t0+1) + ") ")
		t0++
	}
	b.WriteString("i(7@100) o(7@400) o(D@400)")
	r := Analyze(recs(t, b.String()), Strict, 0, 400)
	if len(r.Starts) != len(r.Items) {
		t.Fatalf("%d starts for %d items", len(r.Starts), len(r.Items))
	}
	last := len(r.Items) - 1
	if r.Items[last].ID != 7 || r.Starts[last] != 100 {
		t.Errorf("last item %v starts at %d, want id 7 at 100", r.Items[last], r.Starts[last])
	}
}

// TestPanicUnwoundFrames: functions record their exit at their returns, so
// a panic raised in 3 and recovered by 1 (a frame with a deferred exit, two
// frames above) leaves 2 and 3 without exits. With no recovery record to
// say when they ended (a lost record), they vanish at the exit that pops
// them, as in Matrix: what they completed stays, under their nearest
// ancestor, no cost is negative, nothing leaks into the calls that follow
// (4 is 1's sibling), and the dispatch's later calls are unaffected.
func TestPanicUnwoundFrames(t *testing.T) {
	runCases(t, []analyzeCase{{
		name:    "recovered two frames up",
		records: "i(D@0) i(1@0) i(2@10) i(5@10) o(5@20) i(3@20) o(1@300) i(4@300) o(4@310) o(D@320)",
		want:    []string{"0,D,1,320", "1,1,1,300", "2,5,1,10", "1,4,1,10"},
		cost:    320,
		key:     "1|",
	}, {
		name:    "recovered by the dispatch",
		records: "i(D@0) i(1@0) i(2@5) i(3@6) o(D@50) i(D@60) i(4@60) o(4@70) o(D@70)",
		want:    []string{"0,D,1,50", "0,D,1,10", "1,4,1,10"},
		cost:    50,
		key:     "1048574|",
	}})
}

// The rounds spare a client call that passed the trace context on, however
// short, and only it: the called service's spans name it as their parent.
func TestTrimExtSparesPropagatedCalls(t *testing.T) {
	items := flat(1000, append([]int64{0, 0}, repeat(30, 100)...)...) // 33 items
	exts := make([]*Interval, len(items))
	bound := func(text string) *Interval {
		return &Interval{Kind: ExtBound, Reason: abi.BoundHTTP, PCs: abi.PackBoundText(text)}
	}
	exts[1] = bound("GET\thttp\tstock:8080\t00f067aa0ba902b7")
	exts[2] = bound("GET\thttp\tstock:8080")
	got, kept := TrimExt(items, exts, MaxStackLines)
	if len(got) != MaxStackLines || len(kept) != len(got) || kept[1] != exts[1] || got[1].Cost != 0 {
		t.Fatalf("kept %d items, the second %+v (%v)", len(got), got[1], kept[1])
	}
	for _, x := range kept {
		if x == exts[2] {
			t.Error("a call that passed nothing on was spared")
		}
	}
}
