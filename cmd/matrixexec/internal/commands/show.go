package commands

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/matrixgo/matrix/tracer"
)

// show prints reports (JSON lines) for people: each issue's headline and,
// when it has one, its call tree with names and per-function milliseconds.
// Frames without a name are resolved through the mapping file when it can
// be read. Malformed lines are skipped with a warning on stderr naming
// them.
func show(defaultMap string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("show", stdout)
	mapPath := fs.String("map", defaultMap, "method mapping file for frames the report does not name")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("show: want at most one report file, got %d", fs.NArg())
	}
	n, _ := newNames(*mapPath, false) // optional
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	sk := &skipper{w: stderr, cmd: "show"}
	err := eachReport(fs.Args(), stdin, sk, func(pos string, line []byte, r *report) error {
		var is map[string]any
		if err := json.Unmarshal(line, &is); err != nil {
			sk.skip(fmt.Errorf("%s: not a JSON report: %w", pos, err))
			return nil
		}
		nodes, err := resolveTree(pos, r.frames(), n, false)
		if err != nil {
			return err
		}
		showIssue(w, is, r.Repeat, nodes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	return nil
}

// headline fields, in order, printed when present.
var headline = []string{"detail", "scene", "cost", "stackKey", "usage", "why", "heldBack", "note"}

// showIssue prints one report: its headline, its N+1 pattern (repeat, if
// any), its call tree and its goroutine stack.
func showIssue(w io.Writer, is map[string]any, repeat *tracer.RepeatFields, nodes []node) {
	fmt.Fprintf(w, "%v", is["tag"])
	for _, k := range headline {
		if v, ok := is[k]; ok && v != "" {
			if k == "cost" {
				fmt.Fprintf(w, "  cost=%vms", v)
				continue
			}
			fmt.Fprintf(w, "  %s=%q", k, fmt.Sprint(v))
			if k == "stackKey" {
				if name := keyName(fmt.Sprint(v), nodes); name != "" {
					fmt.Fprintf(w, " (%s)", name)
				}
			}
		}
	}
	fmt.Fprintln(w)
	if repeat != nil {
		fmt.Fprintf(w, "  %s\n", repeat)
	}
	if b, ok := is["allocBytes"].(float64); ok {
		n, _ := is["allocObjects"].(float64)
		fmt.Fprintf(w, "  allocated %s in %.0f objects", byteSize(b), n)
		if fn, _ := is["allocFunc"].(string); fn != "" {
			fb, _ := is["allocFuncBytes"].(float64)
			fmt.Fprintf(w, ", most by %s (≈%s)", fn, byteSize(fb))
		}
		fmt.Fprintln(w)
	}
	if p, ok := is["parts"].(map[string]any); ok {
		num := func(k string) float64 { v, _ := p[k].(float64); return v }
		fmt.Fprintf(w, "  time: %.0fms code without hooks (sampled), %.0fms hooked code (sampled), %.0fms waits, %.0fms GC assists, %.0fms runnable, %.0fms unexplained",
			num("sampled"), num("own"), num("waits"), num("gc"), num("runnable"), num("unexplained"))
		if st, ok := p["stopped"].(float64); ok {
			fmt.Fprintf(w, "; the world stood still %.3gms", st)
		}
		fmt.Fprintln(w)
	}
	if len(nodes) == 0 {
		var rest []string
		for k, v := range is {
			switch k {
			case "tag", "detail", "scene", "cost", "stackKey", "usage", "note", "stack", "frames", "threadStack", "repeat", "allocBytes", "allocObjects", "allocFunc", "allocFuncBytes", "parts":
				continue
			case tracer.KeyHostName, tracer.KeyGoVersion:
				continue // the process's, the same in every report it wrote
			}
			rest = append(rest, fmt.Sprintf("%s=%v", k, compact(v)))
		}
		sort.Strings(rest)
		if len(rest) > 0 {
			fmt.Fprintf(w, "  %s\n", strings.Join(rest, " "))
		}
	}
	printTree(w, "  ", nodes)
	if ts, _ := is["threadStack"].(string); ts != "" {
		fmt.Fprintf(w, "  goroutine stack:\n")
		for _, l := range strings.Split(strings.TrimRight(ts, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	fmt.Fprintln(w)
}

// keyName names the function of a stack key "<id>|" from a report's nodes:
// the first ordinary call with the key's id. A wait's key names its
// function itself: "".
func keyName(key string, nodes []node) string {
	id, ok := keyID(key)
	if !ok {
		return ""
	}
	for i := range nodes {
		if nodes[i].ID == id && nodes[i].Kind != frameKindWait && nodes[i].Func != "" {
			return nodes[i].Func
		}
	}
	return ""
}

func compact(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
}

// byteSize renders a number of bytes for people, in powers of 1000:
// "512 B", "1.5 MB", "1.28 GB".
func byteSize(b float64) string {
	for _, u := range []string{"B", "kB", "MB", "GB", "TB"} {
		if b < 1000 || u == "TB" {
			if u == "B" {
				return fmt.Sprintf("%.0f B", b)
			}
			return fmt.Sprintf("%.3g %s", b, u)
		}
		b /= 1000
	}
	return ""
}
