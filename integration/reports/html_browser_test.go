package reports

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium to test the HTML page with:
// $MATRIX_CHROMIUM, else chromium or chromium-browser on the PATH.
func chromium() string {
	if p := os.Getenv("MATRIX_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where browser tests leave their screenshots:
// $MATRIX_TEST_ARTIFACTS, else a temporary directory of the test.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("MATRIX_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// newBrowser starts a headless Chromium with a fresh profile and nothing
// that reaches the network on its own.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("no Chromium (install the Debian package chromium, or set MATRIX_CHROMIUM): the HTML page is not tested in a browser")
	}
	// A fresh profile, removed after the browser's helper processes have
	// let go of it (t.TempDir would fail the test on a late write).
	profile, err := os.MkdirTemp("", "matrix-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// Not a bound on the test's speed: a hung browser fails the test
	// instead of hanging it.
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
		for range 50 {
			if os.RemoveAll(profile) == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// TestHTMLInBrowser loads the page html writes in a headless Chromium,
// clicks a group, checks that its call tree is drawn with waits and
// goroutines and that hovering a frame shows its cost, position and wait
// reason, and leaves a screenshot.
func TestHTMLInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	page := filepath.Join(t.TempDir(), "report.html")
	var stderr bytes.Buffer
	if code := run([]string{"html", "-o", page, kindsReports}, nil, &stderr, &stderr); code != 0 {
		t.Fatalf("matrixexec html: exit %d: %s", code, stderr.String())
	}

	// The page is self-contained: it requests nothing but itself.
	var mu sync.Mutex
	var requests []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	})

	var before int
	var rowText string
	err := chromedp.Run(ctx,
		network.Enable(),
		chromedp.Navigate("file://"+filepath.ToSlash(page)),
		chromedp.WaitVisible(`tr.group`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll(".flame .node").length`, &before),
		chromedp.Text(`tr.group[data-index="1"]`, &rowText, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("load the page: %v", err)
	}
	if before != 0 {
		t.Fatalf("%d frames drawn before any click", before)
	}
	// The second group by total cost: the two GET /orders incidents.
	if !strings.Contains(rowText, "example.com/shop.queryOrders") {
		t.Fatalf("second row = %q, want the group of example.com/shop.queryOrders", rowText)
	}

	var names []string
	var tip string
	var tipHidden bool
	var selected bool
	err = chromedp.Run(ctx,
		chromedp.Click(`tr.group[data-index="1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.flame .node`, chromedp.ByQuery),
		chromedp.Evaluate(`Array.from(document.querySelectorAll(".flame .node")).map(n => n.textContent)`, &names),
		chromedp.Evaluate(`document.querySelector('tr.group[data-index="1"]').classList.contains("selected")`, &selected),
		hover(`.flame .node.wait`),
		chromedp.Evaluate(`document.getElementById("tooltip").hidden`, &tipHidden),
		chromedp.Text(`#tooltip`, &tip, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("click the group: %v", err)
	}
	if !selected {
		t.Error("the clicked row is not marked selected")
	}
	want := []string{
		"DISPATCH 1210 ms",
		"example.com/shop.ordersHandler 1205 ms",
		"example.com/shop.loadUser 150 ms",
		"[sync.Mutex.Lock] 148 ms",
		"example.com/shop.queryOrders 650 ms",
		"[sleep] 650 ms",
		"go example.com/shop.fetchPrices.func1 400 ms",
		"example.com/shop.price 380 ms",
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("frame %q not drawn; frames: %q", w, names)
		}
	}
	if tipHidden || !strings.Contains(tip, "[sync.Mutex.Lock]") || !strings.Contains(tip, "waiting: sync.Mutex.Lock") || !strings.Contains(tip, "shop/main.go:14") || !strings.Contains(tip, "148 ms") {
		t.Errorf("tooltip over the wait frame (hidden %v): %q", tipHidden, tip)
	}

	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "html-report.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if !strings.HasPrefix(u, "file:") {
			t.Errorf("the page requested %s", u)
		}
	}
}

// hover moves the mouse over the middle of the first element matching sel.
func hover(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var box []float64
		js := `(() => { const r = document.querySelector(` + jsString(sel) + `).getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`
		if err := chromedp.Evaluate(js, &box).Do(ctx); err != nil {
			return err
		}
		return input.DispatchMouseEvent(input.MouseMoved, box[0], box[1]).Do(ctx)
	})
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TestHTMLDispatchStacksInBrowser: the group of a dispatch reported as
// LAG, ANR and at its end is one incident, whose page shows the goroutine
// stacks of its LAG and ANR reports; a LAG without a final report shows
// its own.
func TestHTMLDispatchStacksInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	first, second := dispatchReports(t)
	page := filepath.Join(t.TempDir(), "report.html")
	var stderr bytes.Buffer
	if code := run([]string{"html", "-o", page, first, second}, nil, &stderr, &stderr); code != 0 {
		t.Fatalf("matrixexec html: exit %d: %s", code, stderr.String())
	}
	var summary, row string
	var stacks, infos []string
	err := chromedp.Run(ctx,
		chromedp.Navigate("file://"+filepath.ToSlash(page)),
		chromedp.WaitVisible(`tr.group`, chromedp.ByQuery),
		chromedp.Text(`p.summary`, &summary, chromedp.ByQuery),
		chromedp.Text(`tr.group[data-index="0"]`, &row, chromedp.ByQuery),
		chromedp.Click(`tr.group[data-index="0"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`pre.stack`, chromedp.ByQuery),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("pre.stack")).map(n => n.textContent)`, &stacks),
		chromedp.Evaluate(`Array.from(document.querySelectorAll(".stacks p.info")).map(n => n.textContent)`, &infos),
	)
	if err != nil {
		t.Fatalf("load the page and click the first group: %v", err)
	}
	if !strings.HasPrefix(summary, "4 incidents in 4 groups") || !strings.Contains(row, "NORMAL ×1 (after LAG ×1, ANR ×1)") {
		t.Errorf("summary %q, first row %q", summary, row)
	}
	if len(stacks) != 2 || !strings.HasPrefix(stacks[0], "goroutine 27 [sync.Mutex.Lock]:") || !strings.HasPrefix(stacks[1], "goroutine 27 [sync.Mutex.Lock, 1 minutes]:") ||
		len(infos) != 2 || !strings.HasPrefix(infos[0], "LAG at 2010 ms") || !strings.HasPrefix(infos[1], "ANR at 5020 ms") {
		t.Errorf("stacks %q, headings %q", stacks, infos)
	}
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "html-dispatch-stacks.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// The LAG without a final report: the incident is the LAG, with its
	// own stack and no call tree.
	var idx int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`JSON.parse(document.getElementById("matrix-data").textContent).groups.findIndex(g => g.representative.detail === "LAG")`, &idx)); err != nil || idx < 0 {
		t.Fatalf("no group of a LAG: %d, %v", idx, err)
	}
	stacks, infos = nil, nil
	err = chromedp.Run(ctx,
		chromedp.Click(`tr.group[data-index="`+strconv.Itoa(idx)+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`pre.stack`, chromedp.ByQuery),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("pre.stack")).map(n => n.textContent)`, &stacks),
		chromedp.Evaluate(`Array.from(document.querySelectorAll(".stacks p.info")).map(n => n.textContent)`, &infos),
	)
	if err != nil {
		t.Fatalf("click the LAG's group: %v", err)
	}
	if len(stacks) != 1 || !strings.HasPrefix(stacks[0], "goroutine 31 [sleep]:") || len(infos) != 1 || !strings.HasSuffix(infos[0], ": this incident") {
		t.Errorf("LAG: stacks %q, headings %q", stacks, infos)
	}
}
