package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestMalformedLinesSkipped: a line that is not a report (a torn line with
// the next report glued to it, text, a last line cut short) is skipped
// with a warning naming its file and line; the rest of the file is used.
func TestMalformedLinesSkipped(t *testing.T) {
	data, err := os.ReadFile(kindsReports)
	if err != nil {
		t.Fatal(err)
	}
	l := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	write(t, bad, strings.Join([]string{
		l[0],
		l[1][:60] + l[2], // a torn line, the next report glued to it
		"Trace_EvilMethod  detail=\"NORMAL\"",
		l[3],
		l[4],
		`{"tag":"Trace_EvilMethod","detail":"NORMAL","cost":"900ms"}`, // another layout
		l[1][:80], // cut short
	}, "\n"))
	warnings := []string{
		bad + ":2: not a JSON report",
		bad + ":3: not a JSON report",
		bad + ":6: a report of another layout",
		bad + ":7: truncated report: the file ends inside it",
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string // in stdout or stderr
	}{
		{[]string{"show", bad}, `Trace_EvilMethod  detail="LAG"  scene="GET /block"`},
		{[]string{"top", bad}, "2 incidents in 2 groups by stackKey (3 reports read)"},
		{[]string{"pprof", "-o", out, bad}, "wrote " + out + ": 2 incidents"},
		{[]string{"html", "-o", out, bad}, "wrote " + out + ": 2 incidents"},
	} {
		code, stdout, stderr := mx(t, "", tc.args...)
		if code != 0 || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("%s: exit %d, want %q in\n%s%s", tc.args[0], code, tc.want, stdout, stderr)
		}
		for _, w := range warnings {
			if want := "matrixexec " + tc.args[0] + ": skipping " + w; !strings.Contains(stderr, want) {
				t.Errorf("%s: no warning %q in stderr:\n%s", tc.args[0], want, stderr)
			}
		}
	}

	// Many malformed lines: the first are named, the rest counted.
	var junk strings.Builder
	for range 30 {
		junk.WriteString("junk\n")
	}
	junk.WriteString(l[0] + "\n")
	code, _, stderr := mx(t, junk.String(), "top")
	if code != 0 || strings.Count(stderr, "matrixexec top: skipping stdin:") != 20 || !strings.Contains(stderr, "matrixexec top: skipped 10 more malformed lines\n") {
		t.Errorf("30 malformed lines: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestHugeClaimsBounded: what show, top and html print for a report is
// bounded by the frames it holds, not by the depths, counts and costs it
// claims.
func TestHugeClaimsBounded(t *testing.T) {
	const huge = `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"s","cost":5,"stackKey":"1|","frames":[` +
		`{"depth":0,"id":1048574,"count":1,"cost":5,"func":"DISPATCH"},` +
		`{"depth":300000000,"id":1,"count":2000000000,"cost":9223372036854775807,"func":"p.f"},` +
		`{"depth":300000001,"id":2,"count":2000000000,"cost":9223372036854775807,"func":"p.g"},` +
		`{"depth":-7,"id":3,"count":-3,"cost":-1,"func":"p.h"}]}` + "\n" +
		`{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"t","cost":5,"stackKey":"1|","stack":"0,1048574,1,5\n300000000,1,1,5\n"}` + "\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	page := filepath.Join(t.TempDir(), "r.html")
	outputs := map[string]int{}
	for _, args := range [][]string{{"show"}, {"top", "-v"}, {"top", "-json"}, {"html", "-o", page}} {
		code, stdout, stderr := mx(t, huge, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %.2000s", args, code, stderr)
		}
		outputs[strings.Join(args, " ")] = len(stdout) + len(stderr)
	}
	runtime.ReadMemStats(&after)
	for cmd, n := range outputs {
		if n > 8<<10 {
			t.Errorf("%s printed %d bytes for a report of %d bytes", cmd, n, len(huge))
		}
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 64<<10 || strings.Contains(string(data), "300000000") {
		t.Errorf("html page of %d bytes, with the claimed depth: %v", len(data), strings.Contains(string(data), "300000000"))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("the commands allocated %d MB for two reports of %d bytes", alloc>>20, len(huge))
	}
	// The frames keep their order, each at most one deeper than its parent.
	_, stdout, _ := mx(t, huge, "show")
	for _, want := range []string{"\n       5ms  DISPATCH\n", "\n  9223372036854775807ms    p.f ×2000000000\n", "\n  9223372036854775807ms      p.g ×2000000000\n", "\n       0ms  p.h\n", "\n       5ms    id 1\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show: no %q in\n%s", want, stdout)
		}
	}
}

// dispatchReports are the reports of a few dispatches of process shop (pid
// 100): dispatch 7 reported as LAG, ANR and at its end; dispatch 8 only as
// LAG (still running when the program ended); dispatch 9's final report
// before its LAG (files read in another order); and a dispatch 7 of
// another process.
func dispatchReports(t *testing.T) (first, second string) {
	t.Helper()
	tree := func(cost int, key string) string {
		c := strconv.Itoa(cost)
		return `"stackKey":"` + key + `|","frames":[{"depth":0,"id":1048574,"count":1,"cost":` + c + `,"func":"DISPATCH"},{"depth":1,"id":` + key + `,"count":1,"cost":` + c + `,"func":"example.com/shop.f` + key + `","file":"shop/main.go","line":` + key + `}]`
	}
	head := func(pid, dispatch int, detail, scene string, cost int, time string) string {
		return `{"tag":"Trace_EvilMethod","process":"shop","pid":` + strconv.Itoa(pid) + `,"dispatchId":` + strconv.Itoa(dispatch) +
			`,"detail":"` + detail + `","scene":"` + scene + `","cost":` + strconv.Itoa(cost) + `,"time":"2026-11-20T09:30:` + time + `Z",`
	}
	stack := func(s string) string { b, _ := json.Marshal(s); return `"threadStack":` + string(b) }
	dir := t.TempDir()
	first, second = filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")
	write(t, first, strings.Join([]string{
		head(100, 7, "LAG", "GET /block", 2010, "02") + stack("goroutine 27 [sync.Mutex.Lock]:\nexample.com/shop.(*inventory).reserve(...)\n\t/src/shop/inv.go:40\n") + `}`,
		head(100, 7, "ANR", "GET /block", 5020, "05") + stack("goroutine 27 [sync.Mutex.Lock, 1 minutes]:\nexample.com/shop.(*inventory).reserve(...)\n\t/src/shop/inv.go:40\n") + `,` + tree(5020, "20") + `}`,
		head(100, 7, "NORMAL", "GET /block", 7400, "07") + tree(7400, "20") + `}`,
		head(100, 8, "LAG", "GET /slow", 2005, "10") + stack("goroutine 31 [sleep]:\ntime.Sleep(...)\nexample.com/shop.slow(...)\n\t/src/shop/slow.go:9\n") + `}`,
		head(100, 9, "NORMAL", "GET /orders", 2500, "20") + tree(2500, "12") + `}`,
		head(101, 7, "NORMAL", "GET /block", 800, "30") + tree(800, "30") + `}`,
	}, "\n")+"\n")
	write(t, second, head(100, 9, "LAG", "GET /orders", 2001, "19")+stack("goroutine 40 [IO wait]:\n")+"}\n")
	return first, second
}

// TestOneIncidentPerDispatch: the LAG, ANR and final reports of one
// dispatch are one incident, the final one, with the others as its
// history; top -v and the HTML page show their goroutine stacks.
func TestOneIncidentPerDispatch(t *testing.T) {
	first, second := dispatchReports(t)
	code, out, errs := mx(t, "", "top", "-json", first, second)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Reports, Incidents int
		Groups             []struct {
			Key, Function  string
			Count          int
			Details        []counted
			Watchdog       []counted
			Representative map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Reports != 7 || res.Incidents != 4 || len(res.Groups) != 4 {
		t.Fatalf("%d reports, %d incidents in %d groups; want 7, 4, 4:\n%s", res.Reports, res.Incidents, len(res.Groups), out)
	}
	groups := map[string]int{}
	for i, g := range res.Groups {
		groups[g.Key] = i
	}
	block := res.Groups[groups["20|"]]
	if block.Count != 1 || len(block.Details) != 1 || block.Details[0] != (counted{Value: "NORMAL", Count: 1}) ||
		len(block.Watchdog) != 2 || block.Watchdog[0] != (counted{Value: "LAG", Count: 1}) || block.Watchdog[1] != (counted{Value: "ANR", Count: 1}) {
		t.Errorf("group 20|: %+v", block)
	}
	rep := block.Representative
	hist, _ := rep["history"].([]any)
	if rep["costMs"] != 7400.0 || rep["detail"] != "NORMAL" || len(hist) != 2 ||
		hist[0].(map[string]any)["detail"] != "LAG" || hist[1].(map[string]any)["detail"] != "ANR" ||
		!strings.HasPrefix(hist[1].(map[string]any)["threadStack"].(string), "goroutine 27 [sync.Mutex.Lock, 1 minutes]:") {
		t.Errorf("group 20|'s incident: %v", rep)
	}
	// A dispatch without a final report: its LAG is the incident.
	slow := res.Groups[groups[""]]
	if slow.Count != 1 || slow.Representative["detail"] != "LAG" || slow.Representative["history"] != nil ||
		!strings.HasPrefix(slow.Representative["threadStack"].(string), "goroutine 31 [sleep]:") {
		t.Errorf("group of the LAG without a final report: %+v", slow)
	}
	// Its LAG read after the final report: the same incident.
	orders := res.Groups[groups["12|"]]
	if hist, _ := orders.Representative["history"].([]any); orders.Count != 1 || len(hist) != 1 || hist[0].(map[string]any)["source"] != second+":1" {
		t.Errorf("group 12|: %+v", orders)
	}
	// Another process' dispatch 7 is another dispatch.
	if other := res.Groups[groups["30|"]]; other.Count != 1 || other.Representative["history"] != nil {
		t.Errorf("group 30|: %+v", other)
	}

	code, out, errs = mx(t, "", "top", "-v", first, second)
	if code != 0 {
		t.Fatalf("top -v: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"4 incidents in 4 groups by stackKey (7 reports read)",
		"   before  LAG ×1, ANR ×1 (reports of the same dispatches while they ran)",
		"     after LAG at 2010ms 2026-11-20T09:30:02Z (" + first + ":1)",
		"       goroutine 27 [sync.Mutex.Lock]:",
		"     after ANR at 5020ms 2026-11-20T09:30:05Z (" + first + ":2)",
		"       goroutine 27 [sync.Mutex.Lock, 1 minutes]:",
		"     goroutine stack at the LAG report:",
		"       goroutine 31 [sleep]:",
		"       \t/src/shop/slow.go:9",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("top -v: no line %q in\n%s", want, out)
		}
	}
	if _, out, _ = mx(t, "", "top", first, second); strings.Contains(out, "goroutine 27") || !strings.Contains(out, "     after ANR at 5020ms") {
		t.Errorf("top without -v:\n%s", out)
	}

	page := filepath.Join(t.TempDir(), "r.html")
	if code, _, errs := mx(t, "", "html", "-o", page, first, second); code != 0 || !strings.Contains(errs, "4 incidents in 4 groups") {
		t.Errorf("html: exit %d: %s", code, errs)
	}
	if data, _ := os.ReadFile(page); !strings.Contains(string(data), "goroutine 27 [sync.Mutex.Lock, 1 minutes]:") || !strings.Contains(string(data), "(after LAG ×1, ANR ×1)") {
		t.Errorf("the page lacks the ANR's goroutine stack or the group's LAG and ANR")
	}
	prof := filepath.Join(t.TempDir(), "p.pb.gz")
	if code, _, errs := mx(t, "", "pprof", "-o", prof, first, second); code != 0 || !strings.Contains(errs, "4 incidents") {
		t.Errorf("pprof: exit %d: %s", code, errs)
	}
}

// TestTopCountsHeldBack: the dispatches a tracer held back, which the
// next report of their scene counts (heldBack), are counted by top, in
// all and in the group of each report, a LAG's in its dispatch's group.
func TestTopCountsHeldBack(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.jsonl")
	line := func(dispatch int, detail string, cost, heldBack int, key string) string {
		return `{"tag":"Trace_EvilMethod","process":"shop","pid":1,"dispatchId":` + strconv.Itoa(dispatch) + `,"detail":"` + detail +
			`","scene":"GET /slow","cost":` + strconv.Itoa(cost) + `,"heldBack":` + strconv.Itoa(heldBack) + `,"time":"2026-11-20T09:30:00Z","stackKey":"` + key +
			`|","frames":[{"depth":0,"id":` + key + `,"count":1,"cost":` + strconv.Itoa(cost) + `,"func":"example.com/shop.f` + key + `"}]}`
	}
	write(t, file, strings.Join([]string{
		line(1, "NORMAL", 750, 0, "10"),
		line(2, "NORMAL", 760, 0, "10"),
		line(3, "LAG", 2000, 40, "11"),
		line(3, "NORMAL", 2500, 0, "11"),
		line(4, "NORMAL", 1700, 380, "10"),
	}, "\n")+"\n")
	code, out, errs := mx(t, "", "top", "-json", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Incidents int
		HeldBack  uint64
		Groups    []struct {
			Key      string
			Count    int
			HeldBack uint64
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	held := map[string]uint64{}
	for _, g := range res.Groups {
		held[g.Key] = g.HeldBack
	}
	if res.Incidents != 4 || res.HeldBack != 420 || held["10|"] != 380 || held["11|"] != 40 {
		t.Errorf("%d incidents, %d held back, by group %v; want 4, 420, 10|: 380, 11|: 40:\n%s", res.Incidents, res.HeldBack, held, out)
	}
	code, out, errs = mx(t, "", "top", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"4 incidents in 2 groups by stackKey (5 reports read; 420 more held back by the tracer's bound per scene and minute)\n",
		"   held back 380 more (not reported: the tracer's bound per scene and minute)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("top prints\n%s\nwithout %q", out, want)
		}
	}
}
