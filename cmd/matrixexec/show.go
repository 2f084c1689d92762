package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/internal/abi"
)

// show prints reports (JSON lines) for people: each issue's headline and,
// when it has one, its call tree with names and per-function milliseconds.
// Frames without a name are resolved through the mapping file when it can
// be read.
func show(cfg *config, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet("show", stdout)
	mapPath := fs.String("map", cfg.mapPath, "method mapping file for frames the report does not name")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("show: want at most one report file, got %d", fs.NArg())
	}
	data, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	entries, _, _ := idalloc.Load(*mapPath) // optional
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var is map[string]any
		if err := json.Unmarshal([]byte(line), &is); err != nil {
			return fmt.Errorf("show: line %d: not a JSON report: %w", n, err)
		}
		showIssue(w, is, entries)
	}
	return sc.Err()
}

// headline fields, in order, printed when present.
var headline = []string{"detail", "scene", "cost", "stackKey", "usage", "note"}

func showIssue(w io.Writer, is map[string]any, entries map[uint32]idalloc.Entry) {
	fmt.Fprintf(w, "%v", is["tag"])
	frames, _ := is["frames"].([]any)
	if stack, _ := is["stack"].(string); len(frames) == 0 && stack != "" {
		frames = stackFrames(stack)
	}
	for _, k := range headline {
		if v, ok := is[k]; ok && v != "" {
			if k == "cost" {
				fmt.Fprintf(w, "  cost=%vms", v)
				continue
			}
			fmt.Fprintf(w, "  %s=%q", k, fmt.Sprint(v))
			if k == "stackKey" {
				if name := keyName(fmt.Sprint(v), frames); name != "" {
					fmt.Fprintf(w, " (%s)", name)
				}
			}
		}
	}
	fmt.Fprintln(w)
	if len(frames) == 0 {
		var rest []string
		for k, v := range is {
			switch k {
			case "tag", "detail", "scene", "cost", "stackKey", "usage", "note", "stack", "frames", "threadStack":
				continue
			}
			rest = append(rest, fmt.Sprintf("%s=%v", k, compact(v)))
		}
		sort.Strings(rest)
		if len(rest) > 0 {
			fmt.Fprintf(w, "  %s\n", strings.Join(rest, " "))
		}
	}
	for _, f := range frames {
		fr, _ := f.(map[string]any)
		depth, _ := fr["depth"].(float64)
		name, _ := fr["func"].(string)
		pos := ""
		if file, _ := fr["file"].(string); file != "" {
			pos = fmt.Sprintf("%s:%v", file, fr["line"])
		}
		kind, _ := fr["kind"].(string)
		switch kind {
		case "wait":
			// A wait reads as its reason at the line that blocked; the
			// function is its parent's line (or the inline line above).
			reason, _ := fr["reason"].(string)
			name = "[" + reason + "]"
		case "inline", "goroutine":
			name += " (" + kind + ")"
		}
		if name == "" {
			id, _ := fr["id"].(float64)
			if id == abi.ExtID {
				name = "[wait]"
			} else if id == idalloc.Dispatch {
				name = "DISPATCH"
			} else if e, ok := entries[uint32(id)]; ok {
				name, pos = e.Pkg+"."+e.Func, e.Pos
			} else {
				name = fmt.Sprintf("id %v", fr["id"])
			}
		}
		count := ""
		if c, _ := fr["count"].(float64); c > 1 {
			count = fmt.Sprintf(" ×%v", c)
		}
		fmt.Fprintf(w, "  %6vms  %s%s%s  %s\n", fr["cost"], strings.Repeat("  ", int(depth)), name, count, pos)
	}
	if ts, _ := is["threadStack"].(string); ts != "" {
		fmt.Fprintf(w, "  goroutine stack:\n")
		for _, l := range strings.Split(strings.TrimRight(ts, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	fmt.Fprintln(w)
}

// stackFrames turns report lines "depth,id,count,cost" into frames without
// names, for reports that carry no frames.
func stackFrames(stack string) []any {
	var frames []any
	for _, l := range strings.Split(strings.TrimSpace(stack), "\n") {
		f := strings.Split(l, ",")
		if len(f) != 4 {
			continue
		}
		var n [4]float64
		for i := range f {
			fmt.Sscan(f[i], &n[i])
		}
		frames = append(frames, map[string]any{"depth": n[0], "id": n[1], "count": n[2], "cost": n[3]})
	}
	return frames
}

// keyName names the function of a stack key from the report's frames.
func keyName(key string, frames []any) string {
	for _, f := range frames {
		fr, _ := f.(map[string]any)
		if fmt.Sprintf("%v|", fr["id"]) == key {
			name, _ := fr["func"].(string)
			return name
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
