package integration

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const stuckPkg = "github.com/matrixgo/matrix/examples/stuck"

// buildStuck builds examples/stuck with -toolexec=matrixexec into dir.
func buildStuck(t testing.TB, dir string) string {
	t.Helper()
	return buildExample(t, dir, "stuck", nil)
}

// startStuck runs the stuck service with MATRIX_REPORT set and returns its
// address and report file.
func startStuck(t testing.TB, bin string, env ...string) (addr, reportFile string) {
	t.Helper()
	reportFile = filepath.Join(t.TempDir(), "report.jsonl")
	_, addr = startService(t, bin, "stuck", nil, append([]string{"MATRIX_REPORT=" + reportFile}, env...))
	return addr, reportFile
}

// watchdogReport is a LAG or ANR report.
type watchdogReport struct {
	Tag             string            `json:"tag"`
	Detail          string            `json:"detail"`
	Cost            int64             `json:"cost"`
	Scene           string            `json:"scene"`
	Stack           string            `json:"stack"`
	StackKey        string            `json:"stackKey"`
	Frames          []frame           `json:"frames"`
	ThreadStack     string            `json:"threadStack"`
	ThreadID        uint64            `json:"threadId"`
	Serving         *bool             `json:"serving"`
	Memory          map[string]uint64 `json:"memory"`
	ProcessNice     *int              `json:"processNice"`
	ProcessPriority *int              `json:"processPriority"`
	GCPauseMs       *float64          `json:"gcPauseMs"`
	Goroutines      int               `json:"goroutines"`
}

func readWatchdogReports(t *testing.T, path string) []watchdogReport {
	t.Helper()
	all, _ := readJSONLines[watchdogReport](t, path)
	var reps []watchdogReport
	for _, r := range all {
		if r.Detail == "LAG" || r.Detail == "ANR" {
			reps = append(reps, r)
		}
	}
	return reps
}

// TestLagAndANR is issue 4's first done-when: in an instrumented service, a
// request that works 2.5 s yields exactly one LAG and no ANR; one blocked
// 6 s on a mutex yields one LAG and one ANR whose call tree names the
// blocking function and whose threadStack shows where it waits; requests
// sent meanwhile keep completing quickly.
func TestLagAndANR(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a service for about 10 s; skipped in -short mode")
	}
	bin := buildStuck(t, t.TempDir())
	addr, reportFile := startStuck(t, bin)
	base := "http://" + addr

	get := func(client *http.Client, path string) (time.Duration, error) {
		start := time.Now()
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return time.Since(start), nil
	}
	// Warm the connection and the handlers.
	fastClient := &http.Client{Timeout: 10 * time.Second}
	if _, err := get(fastClient, "/fast"); err != nil {
		t.Fatal(err)
	}

	// Fast requests, one every 50 ms, during the whole stall.
	stopFast := make(chan struct{})
	var fastMax time.Duration
	var fastN int
	var fastErr error
	fastDone := make(chan struct{})
	go func() {
		defer close(fastDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopFast:
				return
			case <-tick.C:
			}
			d, err := get(fastClient, "/fast")
			if err != nil {
				fastErr = err
				return
			}
			fastN++
			fastMax = max(fastMax, d)
		}
	}()

	var wg sync.WaitGroup
	slow := func(path string, least time.Duration, took *time.Duration) {
		defer wg.Done()
		d, err := get(&http.Client{Timeout: 30 * time.Second}, path)
		if err != nil {
			t.Error(err)
		} else if d < least {
			t.Errorf("GET %s took %v, want at least %v", path, d, least)
		}
		*took = d
	}
	var sleepTook, blockTook time.Duration
	wg.Add(2)
	go slow("/sleep?for=2500ms", 2500*time.Millisecond, &sleepTook)
	go slow("/block?for=6s", 6*time.Second, &blockTook)
	wg.Wait()
	close(stopFast)
	<-fastDone
	if fastErr != nil {
		t.Errorf("fast request during the stall: %v", fastErr)
	}
	if fastN < 60 {
		t.Errorf("only %d fast requests completed during the 6 s stall", fastN)
	}
	// A fast request that had waited past the LAG threshold would be a
	// LAG report of its own, which the count below rules out; how long
	// they took is only logged.
	t.Logf("%d fast requests during the stall, the slowest %v", fastN, fastMax)

	// Reports are written as they are made; give late ones a chance.
	var reps []watchdogReport
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if reps = readWatchdogReports(t, reportFile); len(reps) >= 3 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // anything more shows up too
	reps = readWatchdogReports(t, reportFile)

	// Which request a report is about shows in its goroutine's stack.
	// (Its scene is the route pattern once the dispatch has one; the
	// net/http hook names it when the handler returns, so while it runs
	// the scene may still be the dispatch's name, "http".)
	count := map[string]int{}
	var sleepLag, blockLag, blockANR watchdogReport
	for _, r := range reps {
		req := "?"
		switch {
		case strings.Contains(r.ThreadStack, "main.(*worker).crunch("):
			req = "sleep"
		case strings.Contains(r.ThreadStack, "main.(*inventory).reserve("):
			req = "block"
		}
		count[r.Detail+" "+req]++
		switch r.Detail + " " + req {
		case "LAG sleep":
			sleepLag = r
		case "LAG block":
			blockLag = r
		case "ANR block":
			blockANR = r
		}
		if r.Tag != "Trace_EvilMethod" {
			t.Errorf("%s report tagged %q", r.Detail, r.Tag)
		}
		if pattern := "GET /" + req; r.Scene != pattern && r.Scene != "http" {
			t.Errorf("%s report of /%s: scene %q, want %q or the dispatch name", r.Detail, req, r.Scene, pattern)
		}
	}
	want := map[string]int{"LAG sleep": 1, "LAG block": 1, "ANR block": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		for _, r := range reps {
			t.Logf("%s scene %q cost %d threadStack:\n%s", r.Detail, r.Scene, r.Cost, r.ThreadStack)
		}
		t.Fatalf("got LAG/ANR reports %v, want %v", count, want)
	}
	t.Logf("scenes while running: %q %q %q", sleepLag.Scene, blockLag.Scene, blockANR.Scene)

	// The sleeper: one LAG past the 2 s threshold, made while it ran, its
	// stack in crunch's sleep.
	if sleepLag.Cost < 2000 || sleepLag.Cost > sleepTook.Milliseconds() {
		t.Errorf("LAG of /sleep cost %d ms, want at least 2000 and at most the %v the request took", sleepLag.Cost, sleepTook)
	}
	if !strings.Contains(sleepLag.ThreadStack, "time.Sleep(") {
		t.Errorf("LAG of /sleep: threadStack does not show crunch sleeping:\n%s", sleepLag.ThreadStack)
	}
	// A LAG is what a dispatch is before it is an ANR (5 s).
	if blockLag.Cost < 2000 || blockLag.Cost >= 5000 || !strings.Contains(blockLag.ThreadStack, "sync.(*Mutex).Lock") {
		t.Errorf("LAG of /block cost %d, threadStack:\n%s", blockLag.Cost, blockLag.ThreadStack)
	}
	for _, r := range []watchdogReport{sleepLag, blockLag, blockANR} {
		if !strings.HasPrefix(r.ThreadStack, fmt.Sprintf("goroutine %d [", r.ThreadID)) {
			t.Errorf("%s %s: threadStack is not goroutine %d's:\n%s", r.Detail, r.Scene, r.ThreadID, r.ThreadStack)
		}
		if r.Serving == nil || !*r.Serving {
			t.Errorf("%s %s: serving %v, want true (fast requests kept completing)", r.Detail, r.Scene, r.Serving)
		}
	}

	// The blocked request: one ANR at about 5 s naming reserve, stuck in
	// sync.(*Mutex).Lock.
	a := blockANR
	if a.Cost < 5000 || a.Cost > blockTook.Milliseconds() {
		t.Errorf("ANR cost %d ms, want at least 5000 and at most the %v the request took", a.Cost, blockTook)
	}
	var reserve frame
	for _, f := range a.Frames {
		if f.Func == stuckPkg+".(*inventory).reserve" && f.Kind == "" {
			reserve = f
		}
	}
	if reserve.ID == 0 {
		t.Fatalf("ANR call tree does not name (*inventory).reserve:\n%s\n%+v", a.Stack, a.Frames)
	}
	if reserve.Cost < 4500 {
		t.Errorf("reserve cost %d ms in the ANR tree, want about 5000", reserve.Cost)
	}
	// The tree ends in the lock wait under reserve, and the key names both.
	if want := stuckPkg + ".(*inventory).reserve[sync.Mutex.Lock]|"; a.StackKey != want {
		t.Errorf("ANR stackKey %q, want %q\n%s", a.StackKey, want, a.Stack)
	}
	if last := a.Frames[len(a.Frames)-1]; last.Kind != "wait" || last.Reason != "sync.Mutex.Lock" || last.Func != reserve.Func || last.Cost < 4500 {
		t.Errorf("the ANR tree ends in %+v, want reserve's sync.Mutex.Lock wait", last)
	}
	if !strings.Contains(a.ThreadStack, "sync.(*Mutex).Lock") || !strings.Contains(a.ThreadStack, "main.(*inventory).reserve(") ||
		!strings.Contains(a.ThreadStack, "examples/stuck/main.go:") {
		t.Errorf("ANR threadStack does not show reserve waiting for the lock:\n%s", a.ThreadStack)
	}
	for _, k := range []string{"heapBytes", "stackBytes", "totalBytes"} {
		if a.Memory[k] == 0 {
			t.Errorf("ANR memory %v lacks %s", a.Memory, k)
		}
	}
	if a.GCPauseMs == nil || a.Goroutines < 3 {
		t.Errorf("ANR gcPauseMs %v goroutines %d", a.GCPauseMs, a.Goroutines)
	}
	if runtime.GOOS == "linux" && (a.ProcessNice == nil || a.ProcessPriority == nil) {
		t.Errorf("ANR without processPriority/processNice on linux")
	}
}

// BenchmarkOutageFastP99 measures what the watchdog costs the requests
// that still work during an outage: 50 requests to examples/stuck hang
// (/sleep?for=8s, begun 40 ms apart, so that they pass the LAG and ANR
// thresholds tick after tick) while /fast is requested every 5 ms. It
// reports the p99 latency of /fast with the ANR tracer off (MATRIX_ANR=off)
// and on, and their ratio (BENCHMARKS.md). Run it with
//
//	go test ./integration -run '^$' -bench BenchmarkOutageFastP99 -benchtime 1x
func BenchmarkOutageFastP99(b *testing.B) {
	bin := buildStuck(b, b.TempDir())
	b.ResetTimer()
	p99 := func(env ...string) time.Duration {
		addr, _ := startStuck(b, bin, env...)
		base := "http://" + addr
		client := &http.Client{Timeout: 30 * time.Second}
		get := func(path string) (time.Duration, error) {
			start := time.Now()
			resp, err := client.Get(base + path)
			if err != nil {
				return 0, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return time.Since(start), nil
		}
		if _, err := get("/fast"); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		go func() {
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					(&http.Client{Timeout: 30 * time.Second}).Get(base + "/sleep?for=8s")
				}()
				time.Sleep(40 * time.Millisecond)
			}
		}()
		var lat []time.Duration
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			d, err := get("/fast")
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, d)
		}
		wg.Wait()
		slices.Sort(lat)
		return lat[len(lat)*99/100]
	}
	for range b.N {
		off := p99("MATRIX_ANR=off")
		on := p99()
		b.ReportMetric(float64(off.Microseconds()), "p99-off-µs")
		b.ReportMetric(float64(on.Microseconds()), "p99-on-µs")
		b.ReportMetric(float64(on)/float64(off), "ratio")
	}
}
