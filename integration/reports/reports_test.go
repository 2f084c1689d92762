// Package reports tests the report commands as users run them, through
// the matrixreport program: the HTML pages in a headless Chromium, and the
// OTLP export against a receiver.
package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/tracer"
)

// matrixreport is the program built for this test run.
var matrixreport string

func TestMain(m *testing.M) {
	os.Exit(build(m))
}

func build(m *testing.M) int {
	dir, err := os.MkdirTemp("", "matrix-reports-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	matrixreport = filepath.Join(dir, "matrixreport")
	// Built in the matrix module alone (not the workspace), with the
	// versions of its dependencies it asks for.
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", matrixreport, "./cmd/matrixexec/matrixreport")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building matrixreport:", err)
		return 1
	}
	return m.Run()
}

// run runs matrixreport with args and returns its exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.Command(matrixreport, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	return 0
}

// kindsReports are the reports of every kind the commands' own tests read.
var kindsReports = filepath.Join("..", "..", "cmd", "matrixexec", "internal", "commands", "testdata", "reports", "kinds.jsonl")

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

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
