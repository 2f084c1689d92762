package corpus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/internal/self"
	"github.com/matrixgo/matrix/internal/testgo"
)

var corpusFlag = flag.String("corpus", "", "which modules to run: ci (the default subset), full, or off; overrides $MATRIX_CORPUS")

// selection returns the corpus mode: the -corpus flag, else $MATRIX_CORPUS,
// else "ci".
func selection() string {
	if *corpusFlag != "" {
		return *corpusFlag
	}
	if v := os.Getenv("MATRIX_CORPUS"); v != "" {
		return v
	}
	return "ci"
}

// TestCorpus runs the test suites of the corpus modules plain and built
// with -toolexec=matrixexec and fails if a test that passes plain does not
// pass instrumented.
//
// Each module's source is downloaded from the module proxy at its pinned
// version, copied to a writable temporary directory, and tested there with
// go test -json -count=1, first plain, then in the subtests of the module
// (TestCorpus/<name>/<variant>) instrumented, with
// GOFLAGS=-toolexec=matrixexec (GOFLAGS so that go commands run by the
// tests themselves, such as xxhash's plugin build, are instrumented too):
//
//   - instrumented: recording off, as a program runs without MATRIX_REPORT:
//     only the hooks' off path runs;
//   - recording: the zero-code tracer linked into every test binary (from
//     this checkout, MATRIX_ZEROCODE_MODULE) and started (MATRIX_REPORT), so
//     every test is a dispatch whose calls are recorded (as far as the
//     recorder's buffers go) and the slow-call tracer, with a threshold of
//     recordingThresholdMs, reports nearly every test with its call tree to
//     a file. The run must also show that recording happened (see
//     checkReports).
//
// A module whose graph has a package the tracer links, from another build
// than this checkout's (the module is one of the tracer's dependencies,
// such as protobuf, or requires one at another version), cannot be
// recorded that way: zero-code mode refuses to link two builds of a
// package. Its copy's go.mod then requires this module, replaced by this
// checkout, as a user's module does that adds the tracer, and recording
// builds the tracer in that graph (see runner.ownGraph); all its runs,
// plain too, use that go.mod, so that they compare the same graph. Its
// instrumented run then links the tracer too, not started, as zero-code
// mode's default (auto) does in such a user's builds.
//
// The default subset runs the modules marked ci, and recording for those
// also marked ciRecording; MATRIX_TEST_LONG=1 adds the modules marked long
// (gin, echo, grpc), both ways; -corpus=full runs every module both ways. All
// runs share the user's GOCACHE and one mapping file, so the standard
// library is compiled under matrixexec once per configuration (recording
// links the tracer, which is part of the tool id).
//
// Tests that fail in both runs (network, environment, the Go version) are
// not differences: they are listed in the log. A test that passes plain
// but not instrumented is run again the same way, with only its top-level
// test selected, up to twice: if it then passes it is reported as flaky,
// otherwise TestCorpus fails and shows the test's output. Subtests named
// after run-dependent values (addresses, times) are compared by count under
// their parent (see compare).
//
// MATRIX_CORPUS_OUT=DIR keeps the go test -json logs and the reports in DIR.
func TestCorpus(t *testing.T) {
	mode := selection()
	switch mode {
	case "off":
		t.Skip("corpus disabled (-corpus=off or MATRIX_CORPUS=off)")
	case "ci", "full":
	default:
		t.Fatalf("-corpus=%q: want ci, full or off", mode)
	}
	if testing.Short() {
		t.Skip("runs third-party test suites plain and under matrixexec (minutes); skipped in -short mode")
	}
	if mode == "ci" && !testgo.Long() {
		t.Skip("runs third-party test suites plain and under matrixexec (the exhaustive tier): set MATRIX_TEST_LONG=1, or MATRIX_CORPUS=full")
	}
	r := newRunner(t, mode)
	var results []*result
	for _, m := range corpus {
		variants := r.variants(m)
		if len(variants) == 0 {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			if m.cgo && !cgoEnabled(t) {
				t.Skip("needs cgo (CGO_ENABLED=1 and a C compiler)")
			}
			res := r.run(t, m, variants)
			results = append(results, res)
		})
	}
	t.Log("summary (passing tests plain and in each variant):\n" + summary(results))
}

// TestCorpusGoRelease runs one module of the corpus, the HTTP router chi
// (its tests serve requests through the patched net/http), plain and
// instrumented with the newest Go release besides the installed one.
func TestCorpusGoRelease(t *testing.T) {
	if selection() == "off" {
		t.Skip("corpus disabled (-corpus=off or MATRIX_CORPUS=off)")
	}
	if testing.Short() {
		t.Skip("runs a third-party test suite with another Go toolchain (minutes); skipped in -short mode")
	}
	releases := testgo.OtherReleases()
	if len(releases) == 0 {
		t.Skip(testgo.NoReleases)
	}
	rel := releases[len(releases)-1]
	i := slices.IndexFunc(corpus, func(m module) bool { return m.name == "chi" })
	r := newRunner(t, "ci")
	r.toolchain = rel
	t.Run(rel+"/"+corpus[i].name, func(t *testing.T) {
		res := r.run(t, corpus[i], []variant{instrumentedRun})
		t.Log("summary:\n" + summary([]*result{res}))
	})
}

// variant is one way of building and running a module's tests.
type variant struct {
	name         string // subtest name
	instrumented bool   // built with -toolexec=matrixexec
	recording    bool   // the tracer linked and started: every test a recorded dispatch
}

var (
	plainRun        = variant{name: "plain"}
	instrumentedRun = variant{name: "instrumented", instrumented: true}
	recordingRun    = variant{name: "recording", instrumented: true, recording: true}
)

// recordingThresholdMs is the slow-call threshold of recording runs
// (MATRIX_EVIL_THRESHOLD_MS): the minimum, so that nearly every test is
// reported with its call tree and the tracer's whole path, from the copy
// of the records to the JSON line, runs alongside the suite.
const recordingThresholdMs = 1

// variants returns the instrumented variants of module m in this mode.
func (r *runner) variants(m module) []variant {
	switch {
	case r.mode == "full", m.long && testgo.Long():
		return []variant{instrumentedRun, recordingRun}
	case !m.ci:
		return nil
	case m.ciRecording:
		return []variant{instrumentedRun, recordingRun}
	}
	return []variant{instrumentedRun}
}

type runner struct {
	mode      string
	root      string // this checkout: matrixexec and the zero-code tracer
	matrixexe string // the matrixexec binary
	mapFile   string // MATRIX_MAP shared by every instrumented run (testgo.SharedMap)
	toolchain string // GOTOOLCHAIN of the runs: "local" or a release
	work      string // module copies
	out       string // where the -json logs go

	tracerMods []*goModule // the modules the tracer links (tracerModules)
}

func newRunner(t *testing.T, mode string) *runner {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	r := &runner{
		mode:      mode,
		root:      root,
		matrixexe: filepath.Join(tmp, "bin", "matrixexec"),
		mapFile:   filepath.Join(tmp, "map", "methodMapping.txt"),
		toolchain: "local",
		work:      filepath.Join(tmp, "src"),
		out:       filepath.Join(tmp, "logs"),
	}
	if d := os.Getenv("MATRIX_CORPUS_OUT"); d != "" {
		r.out = d
	}
	for _, d := range []string{filepath.Dir(r.mapFile), r.work, r.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", r.matrixexe, "./cmd/matrixexec")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building matrixexec: %v\n%s", err, out)
	}
	// The integration tests' map, kept across runs, so that the
	// instrumented standard library is built once for both.
	if r.mapFile, err = testgo.SharedMap(filepath.Dir(r.mapFile), r.matrixexe); err != nil {
		t.Fatal(err)
	}
	return r
}

func cgoEnabled(t *testing.T) bool {
	out, err := exec.Command("go", "env", "CGO_ENABLED").Output()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		return false
	}
	out, err = exec.Command("go", "env", "CC").Output()
	if err != nil {
		return false
	}
	_, err = exec.LookPath(strings.TrimSpace(string(out)))
	return err == nil
}

// result is the outcome of one module.
type result struct {
	m        module
	pkgs     []string
	plain    *testRun
	plainDur time.Duration
	funcs    int // functions of the module with an id in the map
	runs     []*variantResult
}

// variantResult is the outcome of one instrumented variant of a module,
// compared with its plain run.
type variantResult struct {
	v          variant
	run        *testRun
	dur        time.Duration
	missing    []string // passed plain, not in this variant, even on reruns
	flaky      []string // passed plain, failed once, then passed
	onlyInstr  []string // passed in this variant, not plain
	failedBoth []string
	unstable   []string     // parents of subtests with run-dependent names
	reports    *reportStats // recording: what the report file holds
}

func (r *runner) run(t *testing.T, m module, variants []variant) *result {
	res := &result{m: m, pkgs: m.pkgs}
	if (r.mode == "ci" || m.long) && m.ciPkgs != nil {
		res.pkgs = m.ciPkgs
	}
	if res.pkgs == nil {
		res.pkgs = []string{"./..."}
	}
	wt := &workTree{dir: r.fetch(t, m)}
	t.Logf("%s@%s (%s): go test %s", m.path, m.version, m.why, strings.Join(append(slices.Clone(m.flags), res.pkgs...), " "))
	if slices.ContainsFunc(variants, func(v variant) bool { return v.recording }) {
		why, err := r.ownGraph(wt.dir)
		if err != nil {
			t.Fatalf("placing the tracer: %v", err)
		}
		wt.ownGraph = why
		if len(why) > 0 {
			t.Logf("recording builds the tracer in the module's own graph, not in this checkout (MATRIX_ZEROCODE_MODULE), which would link two builds of a package:\n\t%s\n"+
				"so the module's go.mod requires %s, replaced by this checkout, in all its runs",
				strings.Join(why, "\n\t"), self.Module)
		}
	}

	start := time.Now()
	res.plain = r.goTest(t, m, wt, plainRun, res.pkgs, m.flags, plainRun.name)
	res.plainDur = time.Since(start)
	if len(res.plain.passed()) == 0 {
		t.Fatalf("no test passed in the plain run: the module or the environment is broken\n%s", res.plain.diagnostics())
	}
	t.Logf("plain: %d passed in %v", len(res.plain.passed()), res.plainDur.Round(time.Second))
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			res.runs = append(res.runs, r.runVariant(t, m, wt, res, v))
		})
	}
	return res
}

// runVariant runs the module's tests in variant v and compares them with
// the plain run.
func (r *runner) runVariant(t *testing.T, m module, wt *workTree, res *result, v variant) *variantResult {
	vr := &variantResult{v: v}
	start := time.Now()
	vr.run = r.goTest(t, m, wt, v, res.pkgs, m.flags, v.name)
	vr.dur = time.Since(start)
	res.funcs = r.instrumentedFuncs(t, m)
	if res.funcs == 0 {
		t.Errorf("no function of %s has an id in the map: the module was not instrumented", m.path)
	}

	d := compare(res.plain.final, vr.run.final)
	vr.onlyInstr, vr.failedBoth, vr.unstable = d.onlyInstr, d.failedBoth, d.unstable
	if len(d.lost) > 0 {
		vr.missing, vr.flaky = r.rerun(t, m, wt, v, d.lost)
	}

	t.Logf("%s (%d functions of the module instrumented): %d passed in %v (plain: %d)",
		v.name, res.funcs, len(vr.run.passed()), vr.dur.Round(time.Second), len(res.plain.passed()))
	if len(vr.failedBoth) > 0 {
		t.Logf("%d tests fail in both runs (not differences):\n\t%s", len(vr.failedBoth), strings.Join(vr.failedBoth, "\n\t"))
	}
	if len(vr.unstable) > 0 {
		t.Logf("%d tests have subtests whose names change from run to run (addresses, times); their passing subtests are counted instead:\n\t%s", len(vr.unstable), strings.Join(vr.unstable, "\n\t"))
	}
	if len(vr.onlyInstr) > 0 {
		t.Logf("%d tests pass only %s (flaky plain?):\n\t%s", len(vr.onlyInstr), v.name, strings.Join(vr.onlyInstr, "\n\t"))
	}
	if len(vr.flaky) > 0 {
		t.Logf("%d tests failed %s, then passed when run again (flaky):\n\t%s", len(vr.flaky), v.name, strings.Join(vr.flaky, "\n\t"))
	}
	if len(vr.missing) > 0 {
		t.Errorf("%d tests pass plain but not %s with -toolexec=matrixexec:\n\t%s\n%s",
			len(vr.missing), v.name, strings.Join(vr.missing, "\n\t"), vr.run.diagnosticsFor(vr.missing))
	}
	if v.recording {
		vr.reports = checkReports(t, m, vr.run)
	}
	return vr
}

// diff is the comparison of the final test results of two runs.
type diff struct {
	lost       []string // pass plain, not instrumented
	onlyInstr  []string // pass instrumented, not plain
	failedBoth []string
	unstable   []string // "<parent>: N/M" for subtests with run-dependent names
}

// compare compares the final results ("pkg Test/sub" -> action) of a plain
// and an instrumented run.
//
// Some suites name subtests after their values (pointers, function
// addresses, the current time), so those names differ between any two runs.
// A test present in only one run is counted under its nearest ancestor
// present in both: the ancestor is lost if fewer of its unmatched subtests
// pass instrumented than plain. (A parent passes only if all its subtests
// pass, so the ancestor's own result is compared as well.) A test with no
// such ancestor is compared as absent.
func compare(plain, instr map[string]string) diff {
	var d diff
	type counts struct{ plain, instr int }
	groups := map[string]*counts{}
	ancestor := func(k string, other map[string]string) (string, bool) {
		for {
			i := strings.LastIndexByte(k, '/')
			if i < 0 || !strings.Contains(k[:i], " ") {
				return "", false
			}
			k = k[:i]
			if _, ok := other[k]; ok {
				return k, true
			}
		}
	}
	for k, a := range plain {
		b, ok := instr[k]
		switch {
		case ok && a == "pass" && b != "pass":
			d.lost = append(d.lost, k)
		case ok && a == "fail" && b == "fail":
			d.failedBoth = append(d.failedBoth, k)
		case !ok && a == "pass":
			if anc, ok := ancestor(k, instr); ok {
				if groups[anc] == nil {
					groups[anc] = &counts{}
				}
				groups[anc].plain++
			} else {
				d.lost = append(d.lost, k)
			}
		}
	}
	for k, b := range instr {
		a, ok := plain[k]
		switch {
		case ok && b == "pass" && a != "pass":
			d.onlyInstr = append(d.onlyInstr, k)
		case !ok && b == "pass":
			if anc, ok := ancestor(k, plain); ok {
				if groups[anc] == nil {
					groups[anc] = &counts{}
				}
				groups[anc].instr++
			} else {
				d.onlyInstr = append(d.onlyInstr, k)
			}
		}
	}
	for anc, c := range groups {
		d.unstable = append(d.unstable, fmt.Sprintf("%s: %d subtests pass plain, %d instrumented", anc, c.plain, c.instr))
		if c.instr < c.plain && !slices.Contains(d.lost, anc) {
			d.lost = append(d.lost, anc)
		}
	}
	for _, l := range [][]string{d.lost, d.onlyInstr, d.failedBoth, d.unstable} {
		sort.Strings(l)
	}
	return d
}

// instrumentedFuncs counts the functions of module m in the shared map.
func (r *runner) instrumentedFuncs(t *testing.T, m module) int {
	entries, _, err := idalloc.Load(r.mapFile)
	if err != nil {
		t.Errorf("reading the map: %v", err)
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.Pkg == m.path || strings.HasPrefix(e.Pkg, m.path+"/") {
			n++
		}
	}
	return n
}

// fetch downloads the module and returns a writable copy of its source.
func (r *runner) fetch(t *testing.T, m module) string {
	cmd := exec.Command("go", "mod", "download", "-json", m.path+"@"+m.version)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	cmd.Dir = r.work
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || info.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %s %s", m.path, m.version, err, info.Error, stderrOf(err))
	}
	dst := filepath.Join(r.work, m.name)
	if err := copyTree(info.Dir, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// copyTree copies a module's source tree, making it writable (the module
// cache is read-only; tests write testdata and go.sum).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // module zips hold regular files only
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm()|0o200)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// workTree is the writable copy of a module that its runs test.
type workTree struct {
	dir string
	// ownGraph, if set, says why recording builds the tracer in the
	// module's own graph (the copy's go.mod requires this module,
	// replaced by this checkout); otherwise it is built in this checkout
	// (MATRIX_ZEROCODE_MODULE). See runner.ownGraph.
	ownGraph []string
}

// env returns the environment of the go commands of module runs: none of
// the user's MATRIX_* (the configuration is the runner's alone), and
// GOFLAGS with the runner's flags and goflags.
func (r *runner) env(goflags string) []string {
	flags := "-mod=mod -buildvcs=false"
	if goflags != "" {
		flags += " " + goflags
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MATRIX_") })
	return append(env,
		"GOFLAGS="+flags,
		"GOWORK=off",
		"GOTOOLCHAIN="+r.toolchain,
	)
}

// goTest runs go test -json in the module copy in variant v and parses
// its events. The label names the log file (and, recording, the report
// file).
func (r *runner) goTest(t *testing.T, m module, wt *workTree, v variant, pkgs, extra []string, label string) *testRun {
	timeout := m.timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	args := []string{"test", "-count=1", "-json", "-timeout=" + timeout.String()}
	args = append(args, extra...)
	args = append(args, pkgs...)
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = wt.dir
	goflags := ""
	if v.instrumented {
		goflags = "-toolexec=" + r.matrixexe
	}
	base := filepath.Join(r.out, m.name+"."+strings.ReplaceAll(label, " ", "-"))
	// A rewrite the compiler rejects fails the build (see MATRIX_STRICT).
	cmd.Env = append(r.env(goflags), "MATRIX_MAP="+r.mapFile, "MATRIX_STRICT=1")
	report := ""
	if v.recording {
		report = base + ".report.jsonl"
		if err := os.Remove(report); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("removing the old report: %v", err)
		}
		cmd.Env = append(cmd.Env,
			"MATRIX_ZEROCODE=on", // fail the build if the tracer cannot be linked
			"MATRIX_REPORT="+report,
			fmt.Sprintf("MATRIX_EVIL_THRESHOLD_MS=%d", recordingThresholdMs),
		)
		if len(wt.ownGraph) == 0 {
			cmd.Env = append(cmd.Env, "MATRIX_ZEROCODE_MODULE="+r.root)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if werr := os.WriteFile(base+".json", stdout.Bytes(), 0o644); werr != nil {
		t.Log(werr)
	}
	tr := parseEvents(&stdout)
	tr.stderr = stderr.String()
	tr.err = err
	tr.report = report
	if ctx.Err() != nil {
		t.Fatalf("%s run of %s timed out", label, m.name)
	}
	return tr
}

// testRun is the parsed output of one go test -json.
type testRun struct {
	final       map[string]string   // "pkg Test" -> pass, fail or skip
	elapsed     map[string]float64  // "pkg Test" -> seconds
	output      map[string][]string // "pkg Test" -> its output lines
	pkgOutput   map[string][]string // package (or build) output
	failedPkgs  []string
	passedPkgs  map[string]float64 // package -> seconds its test binary ran
	stderr      string
	err         error
	parseErrors int
	report      string // recording: the report file (MATRIX_REPORT)
}

type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	Elapsed     float64
	FailedBuild string
}

func key(pkg, test string) string { return pkg + " " + test }

func parseEvents(r io.Reader) *testRun {
	tr := &testRun{final: map[string]string{}, elapsed: map[string]float64{}, passedPkgs: map[string]float64{}, output: map[string][]string{}, pkgOutput: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			tr.parseErrors++
			continue
		}
		switch e.Action {
		case "output", "build-output":
			pkg := e.Package
			if pkg == "" {
				pkg = e.ImportPath
			}
			if e.Test != "" {
				k := key(pkg, e.Test)
				tr.output[k] = append(tr.output[k], e.Output)
			} else {
				tr.pkgOutput[pkg] = append(tr.pkgOutput[pkg], e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test != "" {
				tr.final[key(e.Package, e.Test)] = e.Action
				tr.elapsed[key(e.Package, e.Test)] = e.Elapsed
			} else if e.Action == "fail" {
				tr.failedPkgs = append(tr.failedPkgs, e.Package)
			} else if e.Action == "pass" {
				tr.passedPkgs[e.Package] = e.Elapsed
			}
		}
	}
	return tr
}

func (tr *testRun) passed() map[string]bool {
	p := map[string]bool{}
	for k, a := range tr.final {
		if a == "pass" {
			p[k] = true
		}
	}
	return p
}

// diagnostics describes a run that went wrong as a whole.
func (tr *testRun) diagnostics() string {
	var b strings.Builder
	fmt.Fprintf(&b, "go test: %v\n", tr.err)
	for _, p := range tr.failedPkgs {
		fmt.Fprintf(&b, "--- package %s\n%s", p, tail(tr.pkgOutput[p], 40))
	}
	fmt.Fprintf(&b, "--- stderr\n%s", tail(strings.SplitAfter(tr.stderr, "\n"), 40))
	return b.String()
}

// diagnosticsFor returns the output of the given tests, and of their
// packages when they did not run at all (a build failure).
func (tr *testRun) diagnosticsFor(keys []string) string {
	var b strings.Builder
	pkgs := map[string]bool{}
	for i, k := range keys {
		if i == 20 {
			fmt.Fprintf(&b, "... and %d more\n", len(keys)-i)
			break
		}
		if out, ok := tr.output[k]; ok {
			fmt.Fprintf(&b, "--- %s (%s)\n%s", k, orNone(tr.final[k]), tail(out, 30))
		} else {
			pkg, _, _ := strings.Cut(k, " ")
			pkgs[pkg] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		out := tr.pkgOutput[p]
		for ip, o := range tr.pkgOutput { // build output is keyed "p [p.test]"
			if strings.HasPrefix(ip, p+" [") {
				out = append(out, o...)
			}
		}
		fmt.Fprintf(&b, "--- package %s did not run the tests\n%s", p, tail(out, 40))
	}
	if tr.stderr != "" {
		fmt.Fprintf(&b, "--- stderr\n%s", tail(strings.SplitAfter(tr.stderr, "\n"), 40))
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "no result"
	}
	return s
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[%d lines cut]\n", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	s := strings.Join(lines, "")
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// rerun runs the top-level tests of the lost keys again in variant v, up
// to twice, and splits the keys into those that still do not pass and
// flaky ones.
func (r *runner) rerun(t *testing.T, m module, wt *workTree, v variant, lost []string) (missing, flaky []string) {
	byPkg := map[string]map[string]bool{}
	for _, k := range lost {
		pkg, test, _ := strings.Cut(k, " ")
		top, _, _ := strings.Cut(test, "/")
		if byPkg[pkg] == nil {
			byPkg[pkg] = map[string]bool{}
		}
		byPkg[pkg][top] = true
	}
	passedInstr := map[string]bool{}
	for pkg, tops := range byPkg {
		var quoted []string
		for top := range tops {
			quoted = append(quoted, regexp.QuoteMeta(top))
		}
		sort.Strings(quoted)
		run := "-run=^(" + strings.Join(quoted, "|") + ")$"
		for attempt := 1; attempt <= 2; attempt++ {
			tr := r.goTest(t, m, wt, v, []string{pkg}, append([]string{run}, m.flags...), fmt.Sprintf("rerun %d %s %s", attempt, v.name, strings.ReplaceAll(pkg, "/", "_")))
			for k := range tr.passed() {
				passedInstr[k] = true
			}
			if !slices.ContainsFunc(lost, func(k string) bool { return strings.HasPrefix(k, pkg+" ") && !passedInstr[k] }) {
				break
			}
		}
	}
	for _, k := range lost {
		if passedInstr[k] {
			flaky = append(flaky, k)
		} else {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(flaky)
	return missing, flaky
}

func summary(results []*result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-14s %-10s %7s %8s %-12s %8s %6s %6s %6s %9s %9s %8s\n", "module", "version", "funcs", "plain", "variant", "passed", "lost", "flaky", "both✗", "t plain", "t variant", "reports")
	for _, r := range results {
		for _, vr := range r.runs {
			if r.plain == nil || vr.run == nil {
				continue
			}
			reports := "-"
			if vr.reports != nil {
				reports = fmt.Sprint(vr.reports.tests)
			}
			fmt.Fprintf(&b, "%-14s %-10s %7d %8d %-12s %8d %6d %6d %6d %9v %9v %8s\n", r.m.name, r.m.version, r.funcs,
				len(r.plain.passed()), vr.v.name, len(vr.run.passed()), len(vr.missing), len(vr.flaky), len(vr.failedBoth),
				r.plainDur.Round(time.Second), vr.dur.Round(time.Second), reports)
		}
	}
	return b.String()
}
