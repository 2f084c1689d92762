package commands

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/matrixgo/matrix/tracer"
)

const kindsReports = "testdata/reports/kinds.jsonl"

// mx runs matrixexec with args and returns its exit code, stdout and stderr.
func mx(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func frame(depth int, id uint32, cost int64, fn string) reportFrame {
	return reportFrame{Depth: depth, ID: id, Count: 1, Cost: cost, Func: fn}
}

func TestSelfTimes(t *testing.T) {
	frames := []reportFrame{
		frame(0, 1048574, 100, "DISPATCH"),
		frame(1, 1, 90, "a"),
		frame(2, 2, 30, "b"),
		frame(3, 3, 30, "c"), // all of b
		frame(2, 4, 20, "d"),
		frame(2, 5, 70, "e"), // a goroutine a started, which outlived it: its time is not a's
		frame(1, 6, 4, "f"),
		frame(0, 1048574, 7, "DISPATCH"), // a second root (a nested dispatch)
		frame(2, 7, 5, "g"),              // a depth jump still hangs below the last shallower node
	}
	frames[5].Kind = frameKindGoroutine
	nodes, err := resolveTree("x:1", frames, &names{}, true)
	if err != nil {
		t.Fatal(err)
	}
	var self []int64
	var parent []int
	for _, n := range nodes {
		self = append(self, n.Self)
		parent = append(parent, n.Parent)
	}
	if want := []int64{6, 40, 0, 30, 20, 70, 4, 2, 5}; !reflect.DeepEqual(self, want) {
		t.Errorf("self = %v, want %v", self, want)
	}
	if want := []int{-1, 0, 1, 2, 1, 1, 0, -1, 7}; !reflect.DeepEqual(parent, want) {
		t.Errorf("parent = %v, want %v", parent, want)
	}
	if nodes[5].Name != "go e" {
		t.Errorf("goroutine node named %q, want %q", nodes[5].Name, "go e")
	}
}

func TestResolveTreeKinds(t *testing.T) {
	frames := []reportFrame{
		frame(0, 1048574, 10, ""),
		frame(1, 1, 10, ""),
		frame(2, 1, 4, "example.com/a.f"),
		frame(2, 2, 3, "example.com/a.g"),
		frame(2, 3, 2, "example.com/a.h"),
		frame(2, 4, 1, ""),
	}
	frames[2].Kind, frames[2].Reason, frames[2].File, frames[2].Line = frameKindWait, "chan receive", "a.go", 7
	frames[2].For = "a free database/sql connection"
	frames[3].Kind = frameKindGoroutine
	frames[4].Kind = frameKindInline
	frames[5].Kind = frameKindWait // no reason
	mapFile := writeMap(t, "1 func example.com/a handler /src/a/a.go:3\n")
	n, err := newNames(mapFile, true)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := resolveTree("x:1", frames, n, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, nd := range nodes {
		got = append(got, nd.Name+" "+nd.pos())
	}
	want := []string{"DISPATCH ", "example.com/a.handler /src/a/a.go:3", "[chan receive] a.go:7", "go example.com/a.g ", "example.com/a.h ", "[wait] "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names = %q, want %q", got, want)
	}
	var out bytes.Buffer
	printTree(&out, "", nodes)
	if want := "[chan receive] for a free database/sql connection  a.go:7\n"; !strings.Contains(out.String(), want) {
		t.Errorf("printTree: no %q in\n%s", want, out.String())
	}

	// A wait another goroutine ended names it, and a worker handed work
	// is named as such; a waker in no user code is its goroutine.
	frames[2].WokenBy = &tracer.Waker{Goroutine: 12, Func: "example.com/a.(*pool).work", File: "/src/a/pool.go", Line: 31}
	frames[3].Handoff = true
	frames[5].WokenBy = &tracer.Waker{Goroutine: 13}
	nodes, err = resolveTree("x:1", frames, n, true)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	printTree(&out, "", nodes)
	for _, want := range []string{
		"[chan receive] for a free database/sql connection woken by (*pool).work pool.go:31  a.go:7\n",
		"  handed to example.com/a.g\n",
		"[wait] woken by goroutine 13\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printTree: no %q in\n%s", want, out.String())
		}
	}
	frames[2].WokenBy, frames[3].Handoff, frames[5].WokenBy = nil, false, nil

	frames[4].Kind = "teleport"
	if _, err := resolveTree("r.jsonl:3", frames, n, true); err == nil || !strings.Contains(err.Error(), `r.jsonl:3: frame of unknown kind "teleport"`) {
		t.Errorf("unknown kind: err = %v", err)
	}
	frames[4].Kind = ""
	frames[1].ID = 99
	if _, err := resolveTree("r.jsonl:3", frames, n, true); err == nil || !strings.Contains(err.Error(), "function id 99 has no name in the report nor in the map") {
		t.Errorf("id missing from the map: err = %v", err)
	}
	lenient, err := resolveTree("r.jsonl:3", frames, n, false)
	if err != nil || lenient[1].Name != "id 99" {
		t.Errorf("lenient: %v, %+v", err, lenient[1])
	}
}

// writeMap writes a method mapping file with the given entries.
func writeMap(t *testing.T, entries string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "methodMapping.txt")
	data := "# matrix method mapping v1 id=5b0d6a3e-53a8-4f7c-9a55-0d4a9c1f2e11\n# <id> <kind> <pkgpath> <func> <file:line>\n" + entries
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPercentile(t *testing.T) {
	hist := func(costs ...int64) (map[int64]int, int) {
		h := map[int64]int{}
		for _, c := range costs {
			h[c]++
		}
		return h, len(costs)
	}
	var hundred []int64
	for i := int64(100); i >= 1; i-- {
		hundred = append(hundred, i)
	}
	for _, tc := range []struct {
		costs    []int64
		p50, p95 int64
	}{
		{[]int64{800}, 800, 800},
		{[]int64{910, 1210}, 910, 1210},
		{[]int64{5, 1, 3}, 3, 5},
		{[]int64{7, 7, 7, 7, 100}, 7, 100},
		{hundred, 50, 95},
	} {
		h, n := hist(tc.costs...)
		if p50, p95 := percentile(h, n, 50), percentile(h, n, 95); p50 != tc.p50 || p95 != tc.p95 {
			t.Errorf("%v: p50 %d p95 %d, want %d %d", tc.costs, p50, p95, tc.p50, tc.p95)
		}
	}
	if p := percentile(map[int64]int{}, 0, 50); p != 0 {
		t.Errorf("empty: %d", p)
	}
}

func TestTopGroups(t *testing.T) {
	code, out, errs := mx(t, "", "top", "-json", kindsReports)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res topResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Reports != 5 || res.Incidents != 4 || res.By != "stackKey" {
		t.Errorf("reports %d incidents %d by %s, want 5, 4, stackKey", res.Reports, res.Incidents, res.By)
	}
	type row struct {
		Key, Function          string
		Count                  int
		Total, P50, P95, Max   int64
		First, Last, RepSource string
	}
	var got []row
	for _, g := range res.Groups {
		got = append(got, row{g.Key, g.Function, g.Count, g.TotalMs, g.P50Ms, g.P95Ms, g.MaxMs, g.FirstSeen, g.LastSeen, g.Representative.Source})
	}
	want := []row{
		{"20|", "example.com/shop.(*inventory).reserve", 1, 5020, 5020, 5020, 5020, "2026-11-20T09:30:00Z", "2026-11-20T09:30:00Z", kindsReports + ":3"},
		{"12|", "example.com/shop.queryOrders", 2, 2120, 910, 1210, 1210, "2026-11-20T09:14:03.12Z", "2026-11-20T09:20:41.5Z", kindsReports + ":1"},
		{"", "", 1, 2010, 2010, 2010, 2010, "2026-11-20T09:29:57Z", "2026-11-20T09:29:57Z", kindsReports + ":4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups:\n got %+v\nwant %+v", got, want)
	}
	if g := res.Groups[1]; len(g.Representative.Tree) != 9 || !reflect.DeepEqual(g.Scenes, []counted{{Value: "GET /orders", Count: 2}}) ||
		!reflect.DeepEqual(g.Details, []counted{{Value: "NORMAL", Count: 2}}) {
		t.Errorf("group 12|: %d nodes, scenes %+v, details %+v", len(g.Representative.Tree), g.Scenes, g.Details)
	}

	// By scene, from stdin.
	data, err := os.ReadFile(kindsReports)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs = mx(t, string(data), "top", "-by", "scene")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"4 incidents in 2 groups by scene (5 reports read)",
		`1. scene "GET /block"  example.com/shop.(*inventory).reserve`,
		"   count 2  total 7030ms  p50 2010ms  p95 5020ms  max 5020ms",
		"   details ANR ×1, LAG ×1",
		"   keys    (none) ×1, 20| example.com/shop.(*inventory).reserve ×1",
		`2. scene "GET /orders"  example.com/shop.queryOrders`,
		"      148ms        [sync.Mutex.Lock]  shop/main.go:14",
		"      400ms      go example.com/shop.fetchPrices.func1  shop/prices.go:30",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("top -by scene: no line %q in\n%s", want, out)
		}
	}
}

// TestTopStreaming checks that top keeps the costliest report of a group
// and counts every incident when reports arrive in any order.
func TestTopStreaming(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		cost := 700 + (i*7919)%1000 // a permutation of 700..1699
		b.WriteString(`{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"s","cost":` + strconv.Itoa(cost) + `,"stackKey":"5|","frames":[{"depth":0,"id":1048574,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"DISPATCH"},{"depth":1,"id":5,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"p.f"}]}` + "\n")
	}
	res, err := aggregate([]string{"-"}, strings.NewReader(b.String()), byStackKey, &names{}, &skipper{w: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Groups[0]
	if len(res.Groups) != 1 || g.Count != 1000 || g.MaxMs != 1699 || g.P50Ms != 1199 || g.P95Ms != 1649 || g.Representative.CostMs != 1699 || g.Function != "p.f" {
		t.Errorf("groups %d: %+v", len(res.Groups), g)
	}
}

func TestPprofProfile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	code, _, errs := mx(t, "", "pprof", "-o", out, kindsReports)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "wrote "+out+": 4 incidents") || !strings.Contains(errs, "1 incident without a call tree left out") {
		t.Errorf("stderr: %s", errs)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{p.SampleType[0].Type + "/" + p.SampleType[0].Unit, p.SampleType[1].Type + "/" + p.SampleType[1].Unit}; !reflect.DeepEqual(got, []string{"wall/milliseconds", "count/count"}) {
		t.Errorf("sample types %v", got)
	}
	// Per leaf function: self wall time and incidents blamed on it, and
	// one call path with its labels.
	flat := map[string][2]int64{}
	paths := map[string]string{}
	total := int64(0)
	for _, s := range p.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		v := flat[leaf]
		flat[leaf] = [2]int64{v[0] + s.Value[0], v[1] + s.Value[1]}
		total += s.Value[0]
		var path []string
		for _, l := range s.Location {
			path = append(path, l.Line[0].Function.Name)
		}
		paths[leaf] = strings.Join(path, " < ") + " " + s.Label["scene"][0] + " " + s.Label["detail"][0] + " " + s.Label["stackKey"][0]
	}
	want := map[string][2]int64{
		"DISPATCH":                              {5 + 3 + 0, 0},
		"example.com/shop.ordersHandler":        {5 + 605, 0}, // the goroutine it started ran beside it
		"example.com/shop.loadUser":             {2, 0},
		"[sync.Mutex.Lock]":                     {148 + 5019, 0},
		"[sleep]":                               {650 + 700, 0},
		"example.com/shop.queryOrders":          {0, 2},
		"go example.com/shop.fetchPrices.func1": {20, 0},
		"example.com/shop.price":                {380, 0},
		"example.com/shop.render":               {2, 0},
		"example.com/shop.(*inventory).reserve": {1, 1},
	}
	if !reflect.DeepEqual(flat, want) {
		t.Errorf("flat:\n got %v\nwant %v", flat, want)
	}
	// The wall total is the sum of the incidents' roots and of the
	// goroutine (400 ms) that ran beside its parent: self times add up to
	// the time of every goroutine of the trees.
	if total != 1210+910+5020+400 {
		t.Errorf("total wall %d, want %d", total, 1210+910+5020+400)
	}
	if got, want := paths["example.com/shop.price"], "example.com/shop.price < go example.com/shop.fetchPrices.func1 < example.com/shop.ordersHandler < DISPATCH GET /orders NORMAL 12|"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
	var wait *profile.Location
	for _, l := range p.Location {
		if l.Line[0].Function.Name == "[sync.Mutex.Lock]" && l.Line[0].Line == 14 {
			wait = l
		}
	}
	if wait == nil || wait.Line[0].Function.Filename != "shop/main.go" {
		t.Errorf("no location [sync.Mutex.Lock] at shop/main.go:14: %v", wait)
	}
}

// TestMixedVersions reads reports of an older layout (only "stack", no
// names: resolved from the map) with current ones.
func TestMixedVersions(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.jsonl")
	write(t, old, `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /x","cost":900,"stack":"0,1048574,1,900\n1,1,1,900\n2,2,1,850\n","stackKey":"2|"}`+"\n")
	mapFile := writeMap(t, "1 func example.com/app handle /src/app/main.go:7\n2 method example.com/app (*DB).Query /src/app/db.go:12\n")
	code, out, errs := mx(t, "", "top", "-map", mapFile, old, kindsReports)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"5 incidents in 4 groups", "stackKey 2|  example.com/app.(*DB).Query", "850ms      example.com/app.(*DB).Query  /src/app/db.go:12"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	p := filepath.Join(dir, "p.pb.gz")
	if code, _, errs := mx(t, "", "pprof", "-map", mapFile, "-o", p, old, kindsReports); code != 0 {
		t.Fatalf("pprof: exit %d: %s", code, errs)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBadInput: every command fails with a message naming the problem, a
// non-zero exit, and no output file, or the previous one left alone.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(kindsReports)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		// No names and no map: a binary that did not know its functions.
		"unnamed.jsonl": `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /x","cost":900,"stack":"0,1048574,1,900\n1,1,1,900\n","stackKey":"1|"}` + "\n",
		"empty.jsonl":   "\n\n",
		"startup.jsonl": `{"tag":"Trace_StartUp","startup_duration":40}` + "\n",
		"text.jsonl":    "Trace_EvilMethod  detail=\"NORMAL\"\n",
		"notag.jsonl":   `{"cost":5}` + "\n",
		"kind.jsonl":    `{"tag":"Trace_EvilMethod","cost":5,"frames":[{"depth":0,"id":1048574,"cost":5,"func":"DISPATCH","kind":"teleport"}]}` + "\n",
		"good.jsonl":    string(good),
	}
	for name, data := range files {
		write(t, filepath.Join(dir, name), data)
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	otherMap := writeMap(t, "7 func example.com/other f /src/o.go:1\n")
	cases := []struct {
		name string
		args []string // after the command and its -o
		want string
	}{
		{"unnamed", []string{"-map", "", in("unnamed.jsonl")}, "function id 1 has no name: the report comes from a binary that did not know its functions' names (another build?) and there is no map; give the method mapping file of the build that made it with -map FILE"},
		{"other map", []string{"-map", otherMap, in("unnamed.jsonl")}, "function id 1 has no name in the report nor in the map " + otherMap + ": the report comes from another build"},
		{"missing map", []string{"-map", in("nomap.txt"), in("good.jsonl")}, "map: idalloc: load map: open " + in("nomap.txt")},
		{"empty", []string{in("empty.jsonl")}, "no incidents: the input is empty (no reports)"},
		{"no incidents", []string{in("startup.jsonl")}, "no incidents: none of the 1 reports is a slow call, lag, ANR or slow start-up"},
		// Malformed lines are skipped (TestMalformedLinesSkipped): a file
		// of nothing else has no incidents.
		{"text", []string{in("text.jsonl")}, "no incidents: no line of the input is a report (1 malformed line skipped)"},
		{"no tag", []string{in("notag.jsonl")}, "no incidents: no line of the input is a report (1 malformed line skipped)"},
		{"kind", []string{in("kind.jsonl")}, `kind.jsonl:1: frame of unknown kind "teleport" (a report from a newer version? update matrixexec)`},
		{"no file", []string{in("absent.jsonl")}, "read input: open " + in("absent.jsonl")},
	}
	for _, cmd := range []string{"pprof", "html", "top"} {
		for _, tc := range cases {
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out")
				write(t, out, "previous")
				args := []string{cmd}
				if cmd != "top" {
					args = append(args, "-o", out)
				}
				args = append(args, tc.args...)
				code, stdout, stderr := mx(t, "", args...)
				if code == 0 || !strings.Contains(stderr, "matrixexec: "+cmd+": ") || !strings.Contains(stderr, tc.want) {
					t.Errorf("exit %d, stderr %q; want an error containing %q", code, stderr, tc.want)
				}
				if cmd == "top" && stdout != "" {
					t.Errorf("top printed %q", stdout)
				}
				if got, _ := os.ReadFile(out); string(got) != "previous" {
					t.Errorf("output changed to %q", got)
				}
				leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*"))
				if len(leftovers) > 0 {
					t.Errorf("left behind %v", leftovers)
				}
			})
		}
	}

	// Outputs that cannot be written: nothing is left behind.
	for _, cmd := range []string{"pprof", "html"} {
		for _, o := range []string{filepath.Join(dir, "no", "such", "dir", "out"), filepath.Join(dir, "good.jsonl", "out"), dir} {
			code, _, stderr := mx(t, "", cmd, "-o", o, in("good.jsonl"))
			if code == 0 || !strings.Contains(stderr, "matrixexec: "+cmd+": cannot write "+o) {
				t.Errorf("%s -o %s: exit %d, stderr %q", cmd, o, code, stderr)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	want := []string{"empty.jsonl", "good.jsonl", "kind.jsonl", "notag.jsonl", "startup.jsonl", "text.jsonl", "unnamed.jsonl"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("directory holds %v, want %v", names, want)
	}
}

func TestHTMLPage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.html")
	hostile := filepath.Join(t.TempDir(), "hostile.jsonl")
	write(t, hostile, `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /<script>alert(1)</script>","cost":900,"stackKey":"5|","frames":[{"depth":0,"id":1048574,"count":1,"cost":900,"func":"DISPATCH"},{"depth":1,"id":5,"count":1,"cost":900,"func":"p.</script><img src=x onerror=alert(2)>"}]}`+"\n")
	code, _, errs := mx(t, "", "html", "-o", out, kindsReports, hostile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{
		"example.com/shop.queryOrders",
		`<tr class="group" data-index="0"`,
		"GET /&lt;script&gt;alert(1)&lt;/script&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert(1)", "<img src=x", "</script><img", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("%d script elements, want 2 (the data and the code)", n)
	}
}

// TestRepeatViews checks that show prints a report's N+1 pattern, and that
// top and html group by it (-by repeat), the reports without one together.
func TestRepeatViews(t *testing.T) {
	report := func(scene string, cost int, repeat string) string {
		r := `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"` + scene + `","cost":` + strconv.Itoa(cost) + `,"stackKey":"5|","frames":[{"depth":0,"id":1048574,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"DISPATCH"},{"depth":1,"id":5,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"example.com/app.(*orderService).checkout"}]`
		if repeat != "" {
			r += `,"repeat":` + repeat
		}
		return r + "}\n"
	}
	loadItem := `{"func":"example.com/app.(*orderRepo).loadItem","id":6,"parent":"example.com/app.(*orderService).checkout","parentId":5,"calls":48,"cost":420,"percent":56}`
	loadPrice := `{"func":"example.com/app.(*priceRepo).load","id":7,"parent":"example.com/app.(*orderService).checkout","parentId":5,"calls":12,"cost":300,"percent":40}`
	in := report("GET /orders/{id}", 750, loadItem) + report("GET /orders/{id}", 800, loadItem) +
		report("GET /cart", 750, loadPrice) + report("GET /health", 900, "")

	code, out, errs := mx(t, in, "show")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	if want := "  N+1: (*orderRepo).loadItem ×48 under (*orderService).checkout, 420 ms (56 %)\n"; strings.Count(out, want) != 2 {
		t.Errorf("show: want 2 lines %q in\n%s", want, out)
	}
	if n := strings.Count(out, "N+1:"); n != 3 {
		t.Errorf("show: %d N+1 lines, want 3:\n%s", n, out)
	}

	code, out, errs = mx(t, in, "top", "-by", "repeat", "-json")
	if code != 0 {
		t.Fatalf("top: exit %d: %s", code, errs)
	}
	var res topResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key, Repeat string
		Count       int
	}
	var got []row
	for _, g := range res.Groups {
		got = append(got, row{g.Key, g.Repeat, g.Count})
	}
	want := []row{
		{"example.com/app.(*orderRepo).loadItem under example.com/app.(*orderService).checkout", "N+1: (*orderRepo).loadItem ×48 under (*orderService).checkout, 420 ms (56 %)", 2},
		{"", "", 1},
		{"example.com/app.(*priceRepo).load under example.com/app.(*orderService).checkout", "N+1: (*priceRepo).load ×12 under (*orderService).checkout, 300 ms (40 %)", 1},
	}
	if res.By != "repeat" || !reflect.DeepEqual(got, want) {
		t.Errorf("top -by repeat: by %s, groups\n got %+v\nwant %+v", res.By, got, want)
	}

	code, out, errs = mx(t, in, "top", "-by", "repeat")
	if code != 0 {
		t.Fatalf("top: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"4 incidents in 3 groups by repeat (4 reports read)",
		"1. repeat N+1: (*orderRepo).loadItem ×48 under (*orderService).checkout, 420 ms (56 %)",
		"2. repeat (no N+1)",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("top -by repeat: no line %q in\n%s", want, out)
		}
	}

	page := filepath.Join(t.TempDir(), "r.html")
	code, _, errs = mx(t, in, "html", "-by", "repeat", "-o", page)
	if code != 0 {
		t.Fatalf("html: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"N+1 (function or statement ×calls under its caller)", "N+1: (*orderRepo).loadItem ×48 under (*orderService).checkout, 420 ms (56 %)", "(no N+1)"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestRepeatViewsBound checks that a repeated statement is shown, grouped
// and paged as its frame is named, grouped by its whole statement.
func TestRepeatViewsBound(t *testing.T) {
	report := func(scene string, cost int, stmt string, calls int) string {
		return `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"` + scene + `","cost":` + strconv.Itoa(cost) + `,"stackKey":"5|","frames":[` +
			`{"depth":0,"id":1048574,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"DISPATCH"},` +
			`{"depth":1,"id":5,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"example.com/app.(*orderRepo).load"},` +
			`{"depth":2,"id":1048575,"count":1,"cost":10,"func":"db ` + stmt + `","kind":"db","bound":{"system":"sqlite","statement":"` + stmt + `"}}],` +
			`"repeat":{"func":"db ` + stmt + `","id":1048575,"parent":"example.com/app.(*orderRepo).load","parentId":5,"calls":` + strconv.Itoa(calls) + `,"cost":420,"percent":56,` +
			`"bound":{"kind":"db","text":"` + stmt + `","system":"sqlite"}}}` + "\n"
	}
	const price = "SELECT price FROM items WHERE id = ?"
	in := report("GET /orders", 750, price, 48) + report("GET /orders", 700, price, 40) + report("GET /cart", 600, "SELECT name FROM items WHERE id = ?", 12)
	code, out, errs := mx(t, in, "show")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	if want := "  N+1: db SELECT price FROM items WHERE id = ? ×48 under (*orderRepo).load, 420 ms (56 %)\n"; !strings.Contains(out, want) {
		t.Errorf("show: no line %q in\n%s", want, out)
	}
	code, out, errs = mx(t, in, "top", "-by", "repeat", "-json")
	if code != 0 {
		t.Fatalf("top: exit %d: %s", code, errs)
	}
	var res topResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key, Repeat string
		Count       int
	}
	var got []row
	for _, g := range res.Groups {
		got = append(got, row{g.Key, g.Repeat, g.Count})
	}
	want := []row{
		{"db SELECT price FROM items WHERE id = ? under example.com/app.(*orderRepo).load", "N+1: db SELECT price FROM items WHERE id = ? ×48 under (*orderRepo).load, 420 ms (56 %)", 2},
		{"db SELECT name FROM items WHERE id = ? under example.com/app.(*orderRepo).load", "N+1: db SELECT name FROM items WHERE id = ? ×12 under (*orderRepo).load, 420 ms (56 %)", 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("top -by repeat: groups\n got %+v\nwant %+v", got, want)
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if code, _, errs = mx(t, in, "html", "-by", "repeat", "-o", page); code != 0 {
		t.Fatalf("html: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if want := "N+1: db SELECT price FROM items WHERE id = ? ×48 under (*orderRepo).load"; !strings.Contains(string(data), want) {
		t.Errorf("page lacks %q", want)
	}
}

// TestPprofWaitFor checks that the sample of a wait that says what it
// waited for is labelled waitFor, and no other sample is.
func TestPprofWaitFor(t *testing.T) {
	in := `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /orders","cost":500,"stackKey":"5|","frames":[` +
		`{"depth":0,"id":1048574,"count":1,"cost":500,"func":"DISPATCH"},` +
		`{"depth":1,"id":5,"count":1,"cost":500,"func":"example.com/app.loadOrder"},` +
		`{"depth":2,"id":1048575,"count":1,"cost":300,"func":"example.com/app.loadOrder","kind":"wait","reason":"select","for":"a free database/sql connection"},` +
		`{"depth":2,"id":1048575,"count":1,"cost":150,"func":"example.com/app.loadOrder","kind":"wait","reason":"sleep"}]}` + "\n"
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	if code, _, errs := mx(t, in, "pprof", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range p.Sample {
		got[s.Location[0].Line[0].Function.Name] = strings.Join(s.Label["waitFor"], ",")
	}
	want := map[string]string{"[select]": "a free database/sql connection", "[sleep]": "", "example.com/app.loadOrder": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("waitFor labels by leaf: got %q, want %q", got, want)
	}
}

// TestBoundViews checks the boundary frames: show prints them by name
// with their waits under them, pprof labels every sample inside one with
// it (and no other), and a stack key that names a boundary blames it.
func TestBoundViews(t *testing.T) {
	in := `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"GET /orders","cost":500,"stackKey":"db SELECT * FROM t WHERE id = ?[db]|","frames":[` +
		`{"depth":0,"id":1048574,"count":1,"cost":500,"func":"DISPATCH"},` +
		`{"depth":1,"id":5,"count":1,"cost":500,"func":"example.com/app.loadOrder"},` +
		`{"depth":2,"id":1048575,"count":1,"cost":400,"func":"db SELECT * FROM t WHERE id = ?","kind":"db","bound":{"system":"sqlite","statement":"SELECT * FROM t WHERE id = ?"}},` +
		`{"depth":3,"id":1048575,"count":1,"cost":300,"func":"example.com/app.loadOrder","kind":"wait","reason":"IO wait"},` +
		`{"depth":2,"id":1048575,"count":1,"cost":90,"func":"http GET https://api.example.com","kind":"http","bound":{"method":"GET","scheme":"https","host":"api.example.com"}}]}` + "\n"
	code, stdout, errs := mx(t, in, "show")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"   400ms      db SELECT * FROM t WHERE id = ?\n",
		"   300ms        [IO wait]\n",
		"    90ms      http GET https://api.example.com\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show: no %q in\n%s", want, stdout)
		}
	}
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	if code, _, errs := mx(t, in, "pprof", "-o", out); code != 0 {
		t.Fatalf("pprof: exit %d: %s", code, errs)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	blamed := ""
	for _, s := range p.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		got[leaf] = strings.Join(s.Label["bound"], ",")
		if s.Value[1] > 0 { // the count of the node the key blames
			blamed = leaf
		}
	}
	want := map[string]string{
		"db SELECT * FROM t WHERE id = ?":  "db SELECT * FROM t WHERE id = ?",
		"[IO wait]":                        "db SELECT * FROM t WHERE id = ?",
		"http GET https://api.example.com": "http GET https://api.example.com",
		"example.com/app.loadOrder":        "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bound labels by leaf: got %q, want %q", got, want)
	}
	if blamed != "db SELECT * FROM t WHERE id = ?" {
		t.Errorf("the stack key blames %q", blamed)
	}
}

// TestShowStartupFields: a report without a tree (a start-up) shows its
// fields on one line, sorted, without the host and Go release, which are
// the process's and the same in every report it wrote.
func TestShowStartupFields(t *testing.T) {
	in := `{"tag":"Trace_StartUp","scene":"http","startup_duration":12,"application_create":11,"is_warm_start_up":false,` +
		`"process":"shop","pid":7,"id":"x1","time":"2026-11-26T07:54:30Z","hostName":"build-host-7","goVersion":"go1.26.8"}` + "\n"
	code, out, errs := mx(t, in, "show")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	want := "Trace_StartUp  scene=\"http\"\n  application_create=11 id=x1 is_warm_start_up=false pid=7 process=shop startup_duration=12 time=2026-11-26T07:54:30Z\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("show:\n%s\nwant it to begin\n%s", out, want)
	}
}
