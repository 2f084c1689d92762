package corpus

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// minReportedSeconds is how long a test binary, or one of its top-level
// tests, must run for a report to be certain with the 1 ms threshold
// (timing alone decides whether a shorter one is reported). The dispatch
// of the whole test run (testing's runTests, on the main goroutine) lasts
// nearly as long as the binary, so a binary that ran this long reports at
// least that one, or, if the analysis backlog was full when it ended, the
// slow dispatches waiting in it.
const minReportedSeconds = 0.1

// reportStats summarises the report file of a recording run.
type reportStats struct {
	lines     int
	tags      map[string]int  // reports by tag (and detail, if any)
	tests     int             // slow-call reports (detail NORMAL) of test dispatches
	notRec    int             // of them, without a call tree (all buffers busy, wrapped)
	trees     int             // of them, with a frame of the module's own functions
	processes map[string]bool // test binaries that reported
}

func (s *reportStats) String() string {
	var tags []string
	for _, tag := range slices.Sorted(maps.Keys(s.tags)) {
		tags = append(tags, fmt.Sprintf("%s %d", tag, s.tags[tag]))
	}
	return fmt.Sprintf("%d reports (%s) from %d test binaries; %d slow tests reported, %d with a call tree through the module's functions, %d without a call tree",
		s.lines, strings.Join(tags, ", "), len(s.processes), s.tests, s.trees, s.notRec)
}

// errNoReports is the error of readReports for a missing or empty file.
var errNoReports = errors.New("no report was written")

// readReports reads a report file (JSON lines, as tracer.NewJSONListener
// writes them) of a recording run of the module modPath. Every line must
// be a whole JSON object with a tag: the test binaries of a run append to
// one file at once, one write per report.
func readReports(path, modPath string) (*reportStats, error) {
	st := &reportStats{tags: map[string]int{}, processes: map[string]bool{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("%w: no report file %s", errNoReports, path)
	}
	if err != nil {
		return st, fmt.Errorf("reading the reports: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		st.lines++
		var rep struct {
			Tag      string
			Detail   string
			Kind     string
			Process  string
			Recorded *bool
			Frames   []struct{ Func string }
		}
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil || rep.Tag == "" {
			line := sc.Text()
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			return st, fmt.Errorf("%s:%d: not a report (a JSON object with a tag): %q", path, st.lines, line)
		}
		tag := rep.Tag
		if rep.Detail != "" {
			tag += "/" + rep.Detail
		}
		st.tags[tag]++
		st.processes[rep.Process] = true
		if tag != "Trace_EvilMethod/NORMAL" || rep.Kind != "test" {
			continue
		}
		st.tests++
		if rep.Recorded == nil || !*rep.Recorded {
			st.notRec++
			continue
		}
		if slices.ContainsFunc(rep.Frames, func(fr struct{ Func string }) bool {
			return strings.HasPrefix(fr.Func, modPath+".") || strings.HasPrefix(fr.Func, modPath+"/")
		}) {
			st.trees++
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("reading %s: %w", path, err)
	}
	if st.lines == 0 {
		return st, fmt.Errorf("%w: the report file %s is empty", errNoReports, path)
	}
	return st, nil
}

// testBinary returns the executable name go test gives the test binary
// of a package (cmd/go's DefaultExecName plus ".test"): the last element of
// the import path, or the one before a major version suffix (/v2).
func testBinary(importPath string) string {
	elem := path.Base(importPath)
	if elem != importPath && isVersionElement(elem) {
		elem = path.Base(path.Dir(importPath))
	}
	return elem + ".test"
}

// isVersionElement reports whether s is a major version suffix v2, v3, …
func isVersionElement(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] == '0' || s == "v1" {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// unreported returns the packages of a run that passed after running at
// least minSeconds and whose test binary wrote no report.
func unreported(tr *testRun, processes map[string]bool, minSeconds float64) []string {
	var out []string
	for pkg, secs := range tr.passedPkgs {
		if secs >= minSeconds && !processes[testBinary(pkg)] {
			out = append(out, pkg)
		}
	}
	slices.Sort(out)
	return out
}

// slowTests returns the number of top-level tests of a run that passed
// after at least minSeconds.
func slowTests(tr *testRun, minSeconds float64) int {
	n := 0
	for k, action := range tr.final {
		_, test, _ := strings.Cut(k, " ")
		if action == "pass" && !strings.Contains(test, "/") && tr.elapsed[k] >= minSeconds {
			n++
		}
	}
	return n
}

// checkReports makes sure a recording run recorded, so that it cannot pass
// for a run where the tracer was missing or idle. The report file must
// hold only whole reports. Every test binary that passed after
// minReportedSeconds or more must have reported (its tracer ran and its
// tests were dispatches). If a test took that long, some slow-call report
// must be a call tree through the module's own functions (they were
// instrumented and recorded). A module whose tests are all faster than
// that gives no certain report: the log says so.
func checkReports(t *testing.T, m module, tr *testRun) *reportStats {
	t.Helper()
	st, err := readReports(tr.report, m.path)
	if err != nil && !(errors.Is(err, errNoReports) && len(unreported(tr, nil, minReportedSeconds)) == 0) {
		t.Errorf("recording: %v", err)
		return st
	}
	t.Logf("recording: %s", st)
	pkgs := unreported(tr, st.processes, minReportedSeconds)
	if len(pkgs) > 0 {
		t.Errorf("recording: %d test binaries that ran %vs or more wrote no report (the tracer was not running in them):\n\t%s",
			len(pkgs), minReportedSeconds, strings.Join(pkgs, "\n\t"))
	}
	slow := slowTests(tr, minReportedSeconds)
	if slow > 0 && st.trees == 0 {
		t.Errorf("recording: %d tests took %vs or more, but no slow-call report has a call tree through the functions of %s: they were not recorded",
			slow, minReportedSeconds, m.path)
	}
	if slow == 0 && len(unreported(tr, nil, minReportedSeconds)) == 0 {
		t.Logf("recording: every test binary and test ran under %vs: the reports above are not certain, and not checked", minReportedSeconds)
	}
	return st
}

func TestReadReports(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.jsonl", `{"tag":"Trace_EvilMethod","detail":"NORMAL","kind":"test","name":"TestA","process":"a.test","recorded":true,"frames":[{"func":"DISPATCH"},{"func":"example.com/m/sub.F"}]}
{"tag":"Trace_EvilMethod","detail":"NORMAL","kind":"test","name":"TestB","process":"a.test","recorded":false,"frames":[]}
{"tag":"Trace_EvilMethod","detail":"NORMAL","kind":"http","name":"http","process":"b.test","recorded":true,"frames":[{"func":"example.com/m.H"}]}
{"tag":"Trace_EvilMethod","detail":"NORMAL","kind":"test","name":"TestC/sub","process":"b.test","recorded":true,"frames":[{"func":"example.com/mother.F"}]}
{"tag":"Trace_EvilMethod","detail":"LAG","kind":"test","name":"TestD","process":"m.test","frames":[]}
{"tag":"Trace_StartUp","process":"b.test"}
`)
	st, err := readReports(good, "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	if st.lines != 6 || st.tests != 3 || st.notRec != 1 || st.trees != 1 || len(st.processes) != 3 ||
		st.tags["Trace_StartUp"] != 1 || st.tags["Trace_EvilMethod/NORMAL"] != 4 || st.tags["Trace_EvilMethod/LAG"] != 1 {
		t.Errorf("stats: %s", st)
	}

	for name, content := range map[string]string{
		"torn.jsonl":  "{\"tag\":\"Trace_EvilMethod\"}\n{\"tag\":\"Trace_Evil",
		"notag.jsonl": "{\"kind\":\"test\"}\n",
		"empty.jsonl": "",
	} {
		_, err := readReports(write(name, content), "example.com/m")
		if err == nil || errors.Is(err, errNoReports) != (name == "empty.jsonl") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := readReports(filepath.Join(dir, "missing.jsonl"), "example.com/m"); !errors.Is(err, errNoReports) {
		t.Errorf("missing file: %v", err)
	}

	for pkg, want := range map[string]string{
		"example.com/m": "m.test", "example.com/m/v2": "m.test", "example.com/m/v2/sub": "sub.test",
		"example.com/m/v1": "v1.test", "example.com/m/v02": "v02.test", "example.com/m/vx": "vx.test", "v2": "v2.test",
	} {
		if got := testBinary(pkg); got != want {
			t.Errorf("testBinary(%s) = %s, want %s", pkg, got, want)
		}
	}

	tr := &testRun{
		final: map[string]string{
			"example.com/m TestA": "pass", "example.com/m/v2/x TestB": "pass", "example.com/m/v2/x TestB/sub": "pass",
			"example.com/m/y TestC": "fail", "example.com/m/z TestD": "skip",
		},
		elapsed: map[string]float64{
			"example.com/m TestA": 0.05, "example.com/m/v2/x TestB": 0.2, "example.com/m/v2/x TestB/sub": 0.2,
			"example.com/m/y TestC": 1, "example.com/m/z TestD": 1,
		},
		passedPkgs: map[string]float64{"example.com/m": 0.3, "example.com/m/v2/x": 0.3, "example.com/m/w": 0.05, "example.com/m/z": 1},
		failedPkgs: []string{"example.com/m/y"},
	}
	if got, want := unreported(tr, st.processes, 0.1), []string{"example.com/m/v2/x", "example.com/m/z"}; !slices.Equal(got, want) {
		t.Errorf("unreported = %v, want %v", got, want)
	}
	if got := slowTests(tr, 0.1); got != 1 {
		t.Errorf("slowTests = %d, want 1", got)
	}
}
