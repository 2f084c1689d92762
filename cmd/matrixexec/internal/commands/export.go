package commands

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/tracer"
	"github.com/matrixgo/matrix/tracer/otlp"
)

// exportCmd dispatches "matrixexec export FORMAT ...".
func exportCmd(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "otlp" {
		return errors.New("export: want \"export otlp [flags] REPORT...\"")
	}
	return exportOTLP(defaultMap, args[1:], stdin, stdout, stderr, os.Getenv)
}

// exportOTLP sends the issues of JSON-line reports as OTLP traces, as the
// running program's otlp sink would. Every input is read and checked
// before anything is sent; malformed lines are skipped with a warning on
// stderr naming them.
func exportOTLP(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("export otlp", stdout)
	endpoint := fs.String("endpoint", "", "base OTLP endpoint, \"/v1/traces\" appended for OTLP/HTTP (default: the OTEL_EXPORTER_OTLP_* environment)")
	service := fs.String("service", "", "service.name of the spans (default: OTEL_SERVICE_NAME, else unknown_service:<process>)")
	mapPath := fs.String("map", defaultMap, "method mapping file, to name frames of reports that carry only ids")
	timeout := fs.Duration("timeout", time.Minute, "give up sending after this long")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() == 0 {
		return errors.New("export otlp: no report file (use - for stdin)")
	}
	ocfg, err := otlp.ConfigFromEnv(getenv)
	if err != nil {
		return fmt.Errorf("export otlp: %w", err)
	}
	if *endpoint != "" {
		if ocfg.Protocol == otlp.ProtocolGRPC {
			_, err = otlp.TracesURL(*endpoint) // checks it
			ocfg.URL = *endpoint
		} else {
			ocfg.URL, err = otlp.TracesURL(*endpoint)
		}
		if err != nil {
			return fmt.Errorf("export otlp: -endpoint %q: %w", *endpoint, err)
		}
	}
	if *service != "" {
		ocfg.Resource.ServiceName = *service
	}
	entries, _, _ := idalloc.Load(*mapPath) // optional

	var batch []*otlp.ResourceSpans
	spans, skipped := 0, 0
	sk := &skipper{w: stderr, cmd: "export otlp"}
	for _, name := range fs.Args() {
		data, err := readInput(name, stdin)
		if err != nil {
			return fmt.Errorf("export otlp: %w", err)
		}
		if name == "-" {
			name = "stdin"
		}
		rs, n, skip, err := reportSpans(name, data, ocfg.Resource, entries, sk)
		if err != nil {
			return fmt.Errorf("export otlp: %w", err)
		}
		batch, spans, skipped = append(batch, rs...), spans+n, skipped+skip
	}
	sk.done()
	if len(batch) == 0 {
		msg := fmt.Sprintf("export otlp: no issue to export in %s (%d reports of other kinds", strings.Join(fs.Args(), ", "), skipped)
		if sk.n > 0 {
			msg += ", " + plural(sk.n, "malformed line", "malformed lines") + " skipped"
		}
		return errors.New(msg + ")")
	}

	ocfg.QueueSize = len(batch)
	exp, err := otlp.NewExporter(ocfg)
	if err != nil {
		return fmt.Errorf("export otlp: %w", err)
	}
	for _, rs := range batch {
		exp.Enqueue(rs)
	}
	exp.Flush(*timeout)
	exp.Close(time.Second)
	if n := exp.Dropped(); n > 0 {
		return fmt.Errorf("export otlp: %d of %d issues not exported to %s: %w", n, len(batch), exp.URL(), exp.Err())
	}
	fmt.Fprintf(stdout, "exported %d issues (%d spans) to %s", len(batch), spans, exp.URL())
	if skipped > 0 {
		fmt.Fprintf(stdout, "; skipped %d reports that are not issues (Trace_FPS, Trace_StartUp)", skipped)
	}
	fmt.Fprintln(stdout)
	return nil
}

// reportSpans parses one report file into the spans of its issues. A bad
// line (not JSON, not a report, an issue without time or id) is skipped,
// through sk, which names it.
func reportSpans(name string, data []byte, res otlp.Resource, entries map[uint32]idalloc.Entry, sk *skipper) (out []*otlp.ResourceSpans, spans, skipped int, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, 0, 0, fmt.Errorf("%s: empty input", name)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		r := new(otlp.Report)
		if err := decodeLine(line, r); err != nil {
			sk.skip(fmt.Errorf("%s:%d: not a JSON report: %w", name, n, err))
			continue
		}
		if r.Tag == "" {
			sk.skip(fmt.Errorf("%s:%d: not a Matrix report (no tag)", name, n))
			continue
		}
		if !r.Exported() {
			skipped++
			continue
		}
		var frames []tracer.Frame
		if r.Evil != nil && r.Evil.Tree != nil {
			t := r.Evil.Tree
			if len(t.Frames) == 0 && t.Stack != "" {
				if t.Frames, err = framesFromStack(t.Stack); err != nil {
					sk.skip(fmt.Errorf("%s:%d: %w", name, n, err))
					continue
				}
				t.Recorded = true // (a report with a stack has its tree)
			}
			frames = t.Frames
		}
		for i := range frames {
			f := &frames[i]
			if f.Func != "" {
				continue
			}
			if f.ID == idalloc.Dispatch {
				f.Func = "DISPATCH"
			} else if e, ok := entries[f.ID]; ok {
				f.Func = e.Pkg + "." + e.Func
				if file, line, ok := strings.Cut(e.Pos, ":"); ok {
					f.File = file
					f.Line, _ = strconv.Atoi(line)
				}
			}
		}
		s, err := otlp.Spans(r)
		if err != nil {
			sk.skip(fmt.Errorf("%s:%d: %w", name, n, err))
			continue
		}
		out = append(out, otlp.NewResourceSpans(r, res, s))
		spans += len(s)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	return out, spans, skipped, nil
}

// framesFromStack turns report lines "depth,id,count,cost" into frames,
// for reports written before reports carried frames. Those frames have no
// start either: each node is placed after its previous sibling, from its
// parent's start (a node of cost c ms ran for less than c+1 ms).
func framesFromStack(stack string) ([]tracer.Frame, error) {
	var frames []tracer.Frame
	type open struct{ depth, next int64 }
	var parents []open
	for _, l := range strings.Split(strings.TrimSpace(stack), "\n") {
		f := strings.Split(strings.TrimSpace(l), ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("stack line %q: want depth,id,count,cost", l)
		}
		var n [4]int64
		for i := range f {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("stack line %q: bad number %q", l, f[i])
			}
			n[i] = v
		}
		for len(parents) > 0 && parents[len(parents)-1].depth >= n[0] {
			parents = parents[:len(parents)-1]
		}
		var start int64
		if len(parents) > 0 {
			p := &parents[len(parents)-1]
			start = p.next
			p.next = start + n[3] + 1
		}
		parents = append(parents, open{depth: n[0], next: start})
		frames = append(frames, tracer.Frame{Depth: int(n[0]), ID: uint32(n[1]), Count: int(n[2]), Cost: n[3], Start: start})
	}
	return frames, nil
}
