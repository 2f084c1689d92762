package commands

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// diffPage is the page html -diff writes: diff's verdict and findings,
// the scenes, and for the selected scene a differential flame graph of its
// paths, red where time grew and blue where it shrank. Everything it needs
// is inline; it loads nothing.
//
//go:embed html/diff.html
var diffPageHTML string

// diffTemplate is parsed on first use, like reportTemplate.
var diffTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("diff").Funcs(template.FuncMap{
		"inc": func(i int) int { return i + 1 },
		"sub": func(a, b float64) float64 { return a - b },
	}).Parse(diffPageHTML))
})

// diffPageData is what the page's script reads.
type diffPageData struct {
	Scenes []diffPageScene `json:"scenes"`
}

// diffPageScene is one scene of the page.
type diffPageScene struct {
	Scene      string         `json:"scene"`
	Label      string         `json:"label"`
	BaseN      int            `json:"baseN"`
	HeadN      int            `json:"headN"`
	BaseMedian float64        `json:"baseMedian"`
	HeadMedian float64        `json:"headMedian"`
	Paths      []diffPagePath `json:"paths"`
}

// diffPagePath is one path of a scene: its time and calls per dispatch
// in both sets.
type diffPagePath struct {
	Path      string  `json:"path"`
	Name      string  `json:"name"`
	Base      float64 `json:"base"`
	Head      float64 `json:"head"`
	BaseCalls float64 `json:"baseCalls"`
	HeadCalls float64 `json:"headCalls"`
}

// diffPageFinding is one row of the page's findings.
type diffPageFinding struct {
	Scene, What, Delta, N, P string
	Up                       bool
}

// htmlDiff writes the page comparing the sets base and head.
func htmlDiff(out string, n *names, base, head string, stdout, stderr io.Writer) error {
	sk := &skipper{w: stderr, cmd: "html"}
	b, err := readDiffSet(base, n, sk)
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	h, err := readDiffSet(head, n, sk)
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	res := compare(b, h, diffOptions{Threshold: 0.1, MinMs: 5, Alpha: 0.05})
	data := diffPageOf(b, h)
	var findings []diffPageFinding
	for i := range res.Findings {
		f := &res.Findings[i]
		findings = append(findings, diffPageFinding{Scene: sceneLabel(f.Scene), What: f.what(), Delta: fmt.Sprintf("%+.1f", f.DeltaMs),
			N: fmt.Sprintf("%d/%d", f.BaseN, f.HeadN), P: pText(f.P), Up: f.DeltaMs > 0})
	}
	err = writeOutput(out, stdout, func(w io.Writer) error {
		return diffTemplate().Execute(w, struct {
			Title, Base, Head, Verdict string
			Result                     *diffResult
			Findings                   []diffPageFinding
			Scenes                     []diffPageScene
			Data                       diffPageData
		}{"Matrix for Go: " + filepath.Base(base) + " → " + filepath.Base(head), setLine("base", b), setLine("head", h), res.verdict(), res, findings, data.Scenes, data})
	})
	if err != nil {
		return err
	}
	if out != "-" {
		fmt.Fprintf(stderr, "matrixexec html: wrote %s: %s compared, %s\n", out, plural(res.Compared, "scene", "scenes"), plural(len(res.Findings), "finding", "findings"))
	}
	return nil
}

// diffPageOf returns the scenes both sets have, the largest change of the
// median first, with their paths' time and calls per dispatch.
func diffPageOf(b, h *diffSet) diffPageData {
	var d diffPageData
	for name, sb := range b.scenes {
		sh, ok := h.scenes[name]
		if !ok {
			continue
		}
		s := diffPageScene{Scene: name, Label: sceneLabel(name), BaseN: sb.costs.total(), HeadN: sh.costs.total(),
			BaseMedian: sb.costs.median(), HeadMedian: sh.costs.median()}
		nb, nh := float64(max(sb.traced(), 1)), float64(max(sh.traced(), 1))
		paths := map[string]*diffPagePath{}
		get := func(p string) *diffPagePath {
			if paths[p] == nil {
				paths[p] = &diffPagePath{Path: p, Name: lastFrame(p)}
			}
			return paths[p]
		}
		for p, a := range sb.paths {
			dp := get(p)
			dp.Base, dp.BaseCalls = float64(a.total)/nb, float64(a.calls)/nb
		}
		for p, a := range sh.paths {
			dp := get(p)
			dp.Head, dp.HeadCalls = float64(a.total)/nh, float64(a.calls)/nh
		}
		for _, p := range paths {
			s.Paths = append(s.Paths, *p)
		}
		slices.SortFunc(s.Paths, func(x, y diffPagePath) int { return cmp.Compare(x.Path, y.Path) })
		d.Scenes = append(d.Scenes, s)
	}
	slices.SortFunc(d.Scenes, func(x, y diffPageScene) int {
		dx, dy := math.Abs(x.HeadMedian-x.BaseMedian), math.Abs(y.HeadMedian-y.BaseMedian)
		return cmp.Or(cmp.Compare(dy, dx), strings.Compare(x.Scene, y.Scene))
	})
	return d
}
