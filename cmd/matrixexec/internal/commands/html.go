package commands

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// reportPage is the page html writes: the top groups as a table and, for
// the selected group, an icicle view of its costliest incident's call
// tree. Everything it needs is inline; it loads nothing.
//
//go:embed html/report.html
var reportPage string

// reportTemplate is parsed on first use: matrixexec starts for every tool
// cmd/go runs, and a page template parsed at start-up would cost each of
// those runs.
var reportTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"inc":   func(i int) int { return i + 1 },
		"ms":    func(v int64) string { return strconv.FormatInt(v, 10) + " ms" },
		"bytes": func(v uint64) string { return byteSize(float64(v)) },
		"when": func(s string) string {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return s
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
	}).Parse(reportPage))
})

// htmlCmd writes the grouped incidents as one self-contained HTML page.
func htmlCmd(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("html", stdout)
	out := fs.String("o", "matrix.html", `output file ("-" for stdout)`)
	by := fs.String("by", byStackKey, "group by stackKey, scene or repeat (N+1 pattern)")
	mapPath := fs.String("map", defaultMap, "method mapping file for frames the reports do not name")
	diff := fs.Bool("diff", false, "compare two report sets, BASE HEAD (see diff): a differential flame graph")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	n, err := newNames(*mapPath, flagSet(fs, "map"))
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if *diff {
		if fs.NArg() != 2 {
			return fmt.Errorf("html: -diff wants two report sets, BASE HEAD; got %d arguments", fs.NArg())
		}
		if err := htmlDiff(*out, n, fs.Arg(0), fs.Arg(1), stdout, stderr); err != nil {
			return fmt.Errorf("html: %w", err)
		}
		return nil
	}
	res, err := aggregate(fs.Args(), stdin, *by, n, &skipper{w: stderr, cmd: "html"})
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	inputs := make([]string, fs.NArg())
	for i, a := range fs.Args() {
		inputs[i] = filepath.Base(a)
	}
	err = writeOutput(*out, stdout, func(w io.Writer) error {
		return writeReportPage(w, res, strings.Join(inputs, ", "))
	})
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "matrixexec html: wrote %s: %s in %s\n", *out, plural(res.Incidents, "incident", "incidents"), plural(len(res.Groups), "group", "groups"))
	}
	return nil
}

// writeReportPage renders the page of res; inputs names the report files.
func writeReportPage(w io.Writer, res *topResult, inputs string) error {
	return reportTemplate().Execute(w, struct {
		Title  string
		Inputs string
		Result *topResult
	}{"Matrix for Go: slow calls, lags and ANRs", inputs, res})
}
