package reports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestHTMLDiffInBrowser loads the page html -diff writes in a headless
// Chromium: the findings lead with the call-count change, the slowest
// scene is drawn, its frame of the function called 30 times is red, and
// blue when the sets are swapped; it leaves a screenshot (docs/html-diff.png).
func TestHTMLDiffInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	base := diffFile(t, "base.jsonl", searchSummary(t, 10, 1, 3))
	head := diffFile(t, "head.jsonl", searchSummary(t, 10, 30, 3))
	type frame struct {
		Name, Background, Delta string
	}
	load := func(page, from, to string) (finding, verdict string, frames map[string]frame) {
		t.Helper()
		var stderr bytes.Buffer
		if code := run([]string{"html", "-diff", "-o", page, from, to}, nil, &stderr, &stderr); code != 0 {
			t.Fatalf("matrixexec html -diff: exit %d: %s", code, stderr.String())
		}
		var list []frame
		err := chromedp.Run(ctx,
			chromedp.Navigate("file://"+filepath.ToSlash(page)),
			chromedp.WaitVisible(`.flame .node`, chromedp.ByQuery),
			chromedp.Text(`tr.finding`, &finding, chromedp.ByQuery),
			chromedp.Text(`p.verdict`, &verdict, chromedp.ByQuery),
			chromedp.Evaluate(`Array.from(document.querySelectorAll(".flame .node")).map(n => ({Name: n.getAttribute("data-path"), Background: n.style.background, Delta: n.getAttribute("data-delta")}))`, &list),
		)
		if err != nil {
			t.Fatalf("load %s: %v", page, err)
		}
		frames = map[string]frame{}
		for _, f := range list {
			frames[f.Name] = f
		}
		return finding, verdict, frames
	}

	page := filepath.Join(dir, "diff.html")
	finding, verdict, frames := load(page, base, head)
	if !strings.Contains(finding, "calls main.lookup ×1 → ×30") || !strings.HasPrefix(verdict, "REGRESSION: 1 of 2 scenes") {
		t.Errorf("first finding %q, verdict %q", finding, verdict)
	}
	lookup := frames["DISPATCH;main.search;main.lookup"]
	if lookup.Delta != "145.0" || !strings.HasPrefix(lookup.Background, "rgb(") || !reddish(lookup.Background) {
		t.Errorf("lookup's frame: %+v (frames %+v)", lookup, frames)
	}
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "html-diff.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	_, verdict, frames = load(filepath.Join(dir, "back.html"), head, base)
	lookup = frames["DISPATCH;main.search;main.lookup"]
	if lookup.Delta != "-145.0" || reddish(lookup.Background) || !strings.HasPrefix(verdict, "no scene slower") {
		t.Errorf("swapped: verdict %q, lookup's frame %+v", verdict, lookup)
	}
}

// reddish reports whether a CSS "rgb(r, g, b)" colour is red rather than
// blue.
func reddish(rgb string) bool {
	var r, g, b int
	if _, err := fmtSscanf(rgb, &r, &g, &b); err != nil {
		return false
	}
	return r > b+40
}

func fmtSscanf(rgb string, r, g, b *int) (int, error) {
	return fmt.Sscanf(rgb, "rgb(%d, %d, %d)", r, g, b)
}
