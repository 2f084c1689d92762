package commands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// readInput reads the named file, or stdin for "" and "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "" || name == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	return data, nil
}

func newFlagSet(name string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	return fs
}

// analyze runs the call-tree analysis on recorded events.
func analyze(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet("analyze", stdout)
	mode := fs.String("mode", "strict", "strict (slow call, ANR) or startup (non-strict)")
	end := fs.Uint64("end", 0, "close still-open methods at this time in ms (strict mode); default: the last record's time")
	cost := fs.Int64("cost", 0, "trigger cost in ms; the reported cost is max(cost, largest item)")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("analyze: want at most one input file, got %d", fs.NArg())
	}
	var m analysis.Mode
	switch *mode {
	case "strict":
		m = analysis.Strict
	case "startup", "non-strict":
		m = analysis.NonStrict
	default:
		return fmt.Errorf("analyze: unknown mode %q: want strict or startup", *mode)
	}
	data, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	recs, err := parseRecords(data)
	if err != nil {
		name := fs.Arg(0)
		if name == "" || name == "-" {
			name = "stdin"
		}
		return fmt.Errorf("analyze: %s: %w", name, err)
	}
	endMs := *end
	if endMs == 0 {
		for _, r := range recs {
			endMs = max(endMs, r.Time())
		}
	}
	res := analysis.Analyze(recs, m, endMs, *cost)
	_, err = io.WriteString(stdout, res.Format())
	return err
}

// dumpMagic starts a raw buffer dump written by the recorder (beat.WriteDump).
var dumpMagic = []byte(beat.DumpMagic)

// parseRecords accepts the text event format or a raw dump.
func parseRecords(data []byte) ([]analysis.Record, error) {
	if bytes.HasPrefix(data, dumpMagic) {
		return analysis.ParseDump(data[len(dumpMagic):])
	}
	return analysis.ParseEvents(bytes.NewReader(data))
}

// retrace turns the ids of a report into names using the mapping file.
// Input is JSON lines (issue reports: their stack and stackKey fields gain
// a names counterpart) or bare stack text (each line gains the name).
func retrace(defaultMap string, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := newFlagSet("retrace", stdout)
	mapPath := fs.String("map", defaultMap, "method mapping file")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("retrace: want at most one report file, got %d", fs.NArg())
	}
	entries, _, err := idalloc.Load(*mapPath)
	if err != nil {
		return fmt.Errorf("retrace: %w", err)
	}
	data, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		return fmt.Errorf("retrace: %w", err)
	}
	name := func(id uint64) string {
		if id == idalloc.Dispatch {
			return "DISPATCH"
		}
		if e, ok := entries[uint32(id)]; ok {
			return e.Pkg + "." + e.Func + " " + e.Pos
		}
		return "?"
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			out, err := retraceJSON(line, name)
			if err != nil {
				return fmt.Errorf("retrace: line %d: %w", n, err)
			}
			w.Write(out)
			w.WriteByte('\n')
			continue
		}
		w.WriteString(retraceStackLine(line, name))
		w.WriteByte('\n')
	}
	return sc.Err()
}

// retraceStackLine appends the name to a "depth,id,count,cost" line.
func retraceStackLine(line string, name func(uint64) string) string {
	f := strings.Split(strings.TrimSpace(line), ",")
	if len(f) != 4 {
		return line
	}
	depth, err1 := strconv.Atoi(f[0])
	id, err2 := strconv.ParseUint(f[1], 10, 32)
	if err1 != nil || err2 != nil || depth < 0 {
		return line
	}
	return fmt.Sprintf("%s\t%s%s", strings.TrimSpace(line), strings.Repeat("  ", depth), name(id))
}

func retraceJSON(line string, name func(uint64) string) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		return nil, err
	}
	if stack, ok := obj["stack"].(string); ok {
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimRight(stack, "\n"), "\n") {
			b.WriteString(retraceStackLine(l, name))
			b.WriteByte('\n')
		}
		obj["stackNames"] = b.String()
	}
	if key, ok := obj["stackKey"].(string); ok {
		if id, err := strconv.ParseUint(strings.TrimSuffix(key, "|"), 10, 32); err == nil {
			obj["stackKeyName"] = name(id)
		}
	}
	return json.Marshal(obj)
}
