package commands

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/tracer"
)

func TestHistMedian(t *testing.T) {
	for _, c := range []struct {
		h    hist
		want float64
	}{
		{hist{}, 0},
		{hist{7: 1}, 7},
		{hist{1: 1, 3: 1}, 2},
		{hist{1: 2, 10: 1}, 1},
		{hist{1: 1, 2: 1, 10: 2}, 6},
		{hist{5: 3, 9: 4}, 9},
	} {
		if got := c.h.median(); got != c.want {
			t.Errorf("median of %v = %v, want %v", c.h, got, c.want)
		}
	}
}

func sample(vs ...int64) hist {
	h := hist{}
	for _, v := range vs {
		h.add(v, 1)
	}
	return h
}

// The p-values are those of R's wilcox.test(a, b, exact=FALSE,
// correct=TRUE): the normal approximation, ties and continuity corrected.
func TestMannWhitney(t *testing.T) {
	for _, c := range []struct {
		a, b  hist
		u, p  float64
		about string
	}{
		{sample(1, 2, 3, 4, 5), sample(6, 7, 8, 9, 10), 0, 0.012185780355344818, "separated, five a side"},
		{sample(6, 7, 8, 9, 10), sample(1, 2, 3, 4, 5), 25, 0.012185780355344818, "the other way"},
		{sample(1, 1, 2, 2, 3, 5), sample(2, 3, 3, 4, 4, 4, 6), 9, 0.09432654301821694, "ties"},
		{sample(4, 4, 4), sample(4, 4, 4, 4), 6, 1, "all equal"},
		{sample(), sample(1, 2), 0, 1, "empty"},
		{sample(1, 2, 3), sample(7, 8, 9), 0, 0.0808555983700523, "three a side cannot be significant"},
	} {
		u, p := mannWhitney(c.a, c.b)
		if u != c.u || math.Abs(p-c.p) > 1e-12 {
			t.Errorf("%s: U = %v, p = %v; want %v, %v", c.about, u, p, c.u, c.p)
		}
	}
}

// summaryLine is a Trace_Summary report as a program writes it.
func summaryLine(t *testing.T, pid int, r *tracer.SummaryReport) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"tag":%q,"process":"app.test","pid":%d,`, tracer.TagSummary, pid) + string(b[1:])
}

// searchSummary is the summary of n dispatches of "GET /search" whose
// handler calls lookup (5 ms) calls times, and of n of "GET /home"; jitter
// varies the costs from dispatch to dispatch.
func searchSummary(t *testing.T, n, calls int, jitter int64) string {
	search := &tracer.SummaryReport{Scene: "GET /search", Dispatches: n}
	home := &tracer.SummaryReport{Scene: "GET /home", Dispatches: n}
	lookupMs := int64(5 * calls)
	var handler, look, homeP [][2]int64
	for i := range int64(n) {
		j := i % (jitter + 1)
		search.Costs = append(search.Costs, [2]int64{10 + lookupMs + j, 1})
		handler = append(handler, [2]int64{9 + lookupMs + j, 1})
		look = append(look, [2]int64{lookupMs, 1})
		home.Costs = append(home.Costs, [2]int64{3 + j, 1})
		homeP = append(homeP, [2]int64{2 + j, 1})
	}
	sum := func(h [][2]int64) (s int64) {
		for _, c := range h {
			s += c[0] * c[1]
		}
		return s
	}
	search.Paths = []tracer.SummaryPath{
		{Path: "DISPATCH", Calls: int64(n), Dispatches: n, TotalMs: sum(search.Costs), SelfMs: int64(n), Costs: search.Costs},
		{Path: "DISPATCH;main.search", Calls: int64(n), Dispatches: n, TotalMs: sum(handler), SelfMs: sum(handler) - sum(look), Costs: handler},
		{Path: "DISPATCH;main.search;main.lookup", Calls: int64(n * calls), Dispatches: n, TotalMs: sum(look), Costs: look},
		{Path: "DISPATCH;main.search;main.lookup;[sleep]", Calls: int64(n * calls), Dispatches: n, TotalMs: sum(look), SelfMs: sum(look), Costs: look},
	}
	home.Paths = []tracer.SummaryPath{
		{Path: "DISPATCH", Calls: int64(n), Dispatches: n, TotalMs: sum(home.Costs), SelfMs: int64(n), Costs: home.Costs},
		{Path: "DISPATCH;main.home", Calls: int64(n), Dispatches: n, TotalMs: sum(homeP), SelfMs: sum(homeP), Costs: homeP},
	}
	return summaryLine(t, 1, search) + "\n" + summaryLine(t, 1, home) + "\n"
}

func diffFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiffRegression(t *testing.T) {
	base := diffFile(t, "base.jsonl", searchSummary(t, 10, 1, 3))
	head := diffFile(t, "head.jsonl", searchSummary(t, 10, 30, 3))

	code, out, errs := mx(t, "", "diff", base, head)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a regression); stderr %s\n%s", code, errs, out)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[2], "REGRESSION: 1 of 2 scenes slower beyond 10% and 5 ms") {
		t.Errorf("verdict line %q", lines[2])
	}
	if want := "  1. GET /search  calls main.lookup ×1 → ×30: +145.0 ms a dispatch (5.0 → 150.0 ms)"; !strings.HasPrefix(lines[3], want) {
		t.Errorf("first finding\n %q\nwant prefix\n %q\n%s", lines[3], want, out)
	}
	if lines[4] != "     DISPATCH;main.search;main.lookup" {
		t.Errorf("first finding's path %q", lines[4])
	}
	if !strings.Contains(lines[5], "2. GET /search  scene slower: median 16.0 → 161.0 ms, +145.0 ms") {
		t.Errorf("second finding %q\n%s", lines[5], out)
	}
	// The wait under lookup changed as lookup did: not told again.
	if strings.Contains(out, "[sleep]") || strings.Contains(out, "GET /home") {
		t.Errorf("the wait under lookup, or the unchanged scene, is a finding:\n%s", out)
	}

	code, out, _ = mx(t, "", "diff", "-format", "json", base, head)
	var res diffResult
	if err := json.Unmarshal([]byte(out), &res); code != 1 || err != nil {
		t.Fatalf("json: exit %d, %v\n%s", code, err, out)
	}
	f := res.Findings[0]
	if res.Regressions != 1 || res.Compared != 2 || f.Kind != findCalls || f.Function != "main.lookup" ||
		f.BaseCalls != 1 || f.HeadCalls != 30 || f.DeltaMs != 145 || !f.Regression || f.P >= 0.05 ||
		res.Base.Source != sourceSummary || res.Base.Dispatches != 20 {
		t.Errorf("json: %+v", res)
	}

	code, out, _ = mx(t, "", "diff", "-format", "md", base, head)
	if code != 1 || !strings.HasPrefix(out, "### ❌ matrixexec diff: REGRESSION: 1 of 2 scenes") ||
		!strings.Contains(out, "| 1 | GET /search | `main.lookup` calls | ×1, 5.0 ms | ×30, 150.0 ms | +145.0 | 10/10 | p") ||
		!strings.Contains(out, "| `DISPATCH;main.search;main.lookup` |") {
		t.Errorf("md: exit %d\n%s", code, out)
	}

	// The other way round: faster, exit 0, the change still told.
	code, out, _ = mx(t, "", "diff", head, base)
	if code != 0 || !strings.Contains(out, "scene faster: median 161.0 → 16.0 ms") || !strings.Contains(out, "calls main.lookup ×30 → ×1") {
		t.Errorf("head to base: exit %d\n%s", code, out)
	}

	// Thresholds: a 146 ms change is not 1000%, nor 200 ms.
	for _, args := range [][]string{{"-threshold", "1000%"}, {"-min-ms", "200"}, {"-threshold", "10"}} {
		code, out, _ := mx(t, "", append(append([]string{"diff"}, args...), base, head)...)
		if code != 0 || strings.Contains(out, "scene slower:") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}

func TestDiffSameVersion(t *testing.T) {
	// Two runs of one version: the same costs in another order, and a
	// little noise.
	base := diffFile(t, "base.jsonl", searchSummary(t, 12, 1, 3))
	head := diffFile(t, "head.jsonl", searchSummary(t, 12, 1, 4))
	for _, format := range []string{"text", "md", "json"} {
		code, out, errs := mx(t, "", "diff", "-format", format, base, head)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s\n%s", format, code, errs, out)
		}
		switch format {
		case "text":
			if !strings.Contains(out, "no significant change in 2 scenes\n") || strings.Contains(out, "  1. ") {
				t.Errorf("text:\n%s", out)
			}
		case "md":
			if !strings.HasPrefix(out, "### ✅ matrixexec diff: no significant change in 2 scenes") || strings.Contains(out, "| 1 |") {
				t.Errorf("md:\n%s", out)
			}
		case "json":
			var res diffResult
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Findings) != 0 || res.Regressions != 0 {
				t.Errorf("json: %v\n%s", err, out)
			}
		}
	}
}

// Directories of slow-call reports, read through their frames: without
// summaries, the dispatches reported are compared.
func TestDiffFromSlowCallReports(t *testing.T) {
	report := func(pid, n, calls int) string {
		var b strings.Builder
		for i := range n {
			cost := 100 + 5*calls + i%3
			fmt.Fprintf(&b, `{"tag":"Trace_EvilMethod","detail":"NORMAL","scene":"TestSearch","process":"app.test","pid":%d,"dispatchId":%d,"cost":%d,"frames":[`+
				`{"depth":0,"id":1048574,"count":1,"cost":%d,"func":"DISPATCH"},`+
				`{"depth":1,"id":3,"count":1,"cost":%d,"func":"main.TestSearch"},`+
				`{"depth":2,"id":4,"count":%d,"cost":%d}]}`+"\n", pid, i+1, cost, cost, cost-1, calls, 5*calls)
		}
		// A LAG report of the last dispatch: the same dispatch.
		fmt.Fprintf(&b, `{"tag":"Trace_EvilMethod","detail":"LAG","scene":"TestSearch","process":"app.test","pid":%d,"dispatchId":%d,"cost":50}`+"\n", pid, n)
		return b.String()
	}
	dir := t.TempDir()
	for _, p := range []string{"base", "head"} {
		if err := os.Mkdir(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "base", "a.jsonl"), []byte(report(1, 6, 2)), 0o644)
	os.WriteFile(filepath.Join(dir, "base", "b.jsonl"), []byte(report(2, 6, 2)), 0o644)
	os.WriteFile(filepath.Join(dir, "head", "a.jsonl"), []byte(report(3, 8, 40)+"{torn"), 0o644)
	code, out, errs := mx(t, "", "diff", "-map", "", filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	if code != 1 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(errs, "skipping") || !strings.Contains(errs, "a.jsonl:10: truncated report") {
		t.Errorf("the torn line is not told: %s", errs)
	}
	if !strings.Contains(out, "base: 12 dispatches in 1 scene, from 14 reports (slow-call reports, 2 files)") {
		t.Errorf("base line:\n%s", out)
	}
	if want := "  1. TestSearch  calls id 4 ×2 → ×40: +190.0 ms a dispatch (10.0 → 200.0 ms)"; !strings.Contains(out, want) {
		t.Errorf("want %q in\n%s", want, out)
	}
}

func TestDiffUsage(t *testing.T) {
	f := diffFile(t, "r.jsonl", searchSummary(t, 3, 1, 0))
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"diff", f}, 2, "usage: matrixexec diff"},
		{[]string{"diff", "-threshold", "x", f, f}, 1, `-threshold "x"`},
		{[]string{"diff", "-format", "xml", f, f}, 1, `unknown format "xml"`},
		{[]string{"diff", f, filepath.Join(t.TempDir(), "none")}, 1, "diff: head:"},
		{[]string{"diff", diffFile(t, "e.jsonl", `{"tag":"Trace_FPS"}`+"\n"), f}, 1, "no dispatches"},
	} {
		code, _, errs := mx(t, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", c.args, code, errs, c.code, c.err)
		}
	}
}

// Two runs of one version of a test suite (integration's diff.txtar, -count=5)
// on a loaded machine: some of the many paths of a test's tree differ by
// chance at p < 0.05, and none is a finding.
func TestDiffSameVersionRecorded(t *testing.T) {
	code, out, errs := mx(t, "", "diff", "testdata/diff/same-a.jsonl", "testdata/diff/same-b.jsonl")
	if code != 0 || !strings.Contains(out, "no significant change in 5 scenes\n") {
		t.Errorf("exit %d: %s\n%s", code, errs, out)
	}
}

// A process's count of dispatches it did not summarise is in each of its
// summaries: counted once per process.
func TestDiffDroppedPerProcess(t *testing.T) {
	var lines string
	for pid := 1; pid <= 2; pid++ {
		for _, scene := range []string{"a", "b"} {
			lines += summaryLine(t, pid, &tracer.SummaryReport{Scene: scene, Dispatches: 4, Costs: [][2]int64{{3, 4}}, Dropped: 3}) + "\n"
		}
	}
	f := diffFile(t, "d.jsonl", lines)
	code, out, errs := mx(t, "", "diff", f, f)
	if code != 0 || !strings.Contains(out, "base: 16 dispatches in 2 scenes, from 4 reports (summaries, 1 file); 6 dispatches not summarised\n") {
		t.Errorf("exit %d: %s\n%s", code, errs, out)
	}
}

// A scene whose change would pass the test alone is not flagged among
// several: every scene compared is a chance of a false finding, so each is
// judged at -alpha over their number (Bonferroni). A slower test scene of a
// loaded machine (22 → 27 ms, p ≈ 0.04 with five runs a side) flagged two
// runs of one version before.
func TestDiffScenesCorrected(t *testing.T) {
	noisyBase, noisyHead := sample(22, 22, 21, 23, 22), sample(27, 26, 22, 28, 27)
	if _, p := mannWhitney(noisyBase, noisyHead); !(p > 0.05/4 && p < 0.05) {
		t.Fatalf("p = %v: the case wants one significant alone and not among four", p)
	}
	set := func(noisy hist, scenes ...string) *diffSet {
		s := &diffSet{scenes: map[string]*sceneAgg{}}
		for _, name := range scenes {
			c := sample(40, 41, 42, 40, 41)
			if name == "TestSearch" {
				c = noisy
			}
			s.scenes[name] = &sceneAgg{costs: c, paths: map[string]*pathAgg{}}
		}
		return s
	}
	o := diffOptions{Threshold: 0.1, MinMs: 5, Alpha: 0.05}
	four := []string{"TestSearch", "TestOther", "GET /search", "GET /other"}
	if res := compare(set(noisyBase, four...), set(noisyHead, four...), o); res.Regressions != 0 || len(res.Findings) != 0 {
		t.Errorf("among four scenes: %d regressions, findings %+v", res.Regressions, res.Findings)
	}
	if res := compare(set(noisyBase, "TestSearch"), set(noisyHead, "TestSearch"), o); res.Regressions != 1 {
		t.Errorf("alone: %d regressions, want 1", res.Regressions)
	}
}
