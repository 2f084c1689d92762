package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/tracer/analysis"
	"github.com/rogpeppe/go-internal/testscript"
)

func scriptCommands() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"hooks":         cmdHooks,
		"cmpstack":      cmdCmpStack,
		"mapkeeps":      cmdMapKeeps,
		"setfromstdout": cmdSetFromStdout,
		"pprofflat":     cmdPprofFlat,
		"stripnames":    cmdStripNames,
		"otlprecv":      cmdOTLPRecv,
		"otlpspans":     cmdOTLPSpans,
		"otlpresource":  cmdOTLPResource,
		"otlptrace":     cmdOTLPTrace,
		"otlpcalled":    cmdOTLPCalled,
		"samecompiles":  cmdSameCompiles,
		"mapnames":      cmdMapNames,
		"modkept":       cmdModKept,
		"mkdump":        cmdMkdump,
	}
}

// mkdump FILE EVENT...
//
// Writes a raw buffer dump of events "i:ID:MS" or "o:ID:MS" (ID may be D,
// the dispatch) with beat.WriteDump.
func cmdMkdump(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mkdump FILE EVENT...")
	}
	var recs []uint64
	for _, ev := range args[1:] {
		f := strings.Split(ev, ":")
		if len(f) != 3 {
			ts.Fatalf("mkdump: event %q is not i|o:ID:MS", ev)
		}
		id := uint64(analysis.Dispatch)
		if f[1] != "D" {
			n, err := strconv.ParseUint(f[1], 10, 32)
			ts.Check(err)
			id = n
		}
		ms, err := strconv.ParseUint(f[2], 10, 64)
		ts.Check(err)
		recs = append(recs, uint64(analysis.MakeRecord(f[0] == "i", uint32(id), ms)))
	}
	var b bytes.Buffer
	ts.Check(beat.WriteDump(&b, recs))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o644))
}

// modkept BEFORE AFTER ADDED
//
// Checks two outputs of go list -m all, before and after a change to a
// module: every module of BEFORE is in AFTER at the same version, and the
// modules AFTER adds are those of ADDED ("path version" lines), no more,
// no fewer. A replacement (=> …) is not compared.
func cmdModKept(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: modkept BEFORE AFTER ADDED")
	}
	read := func(name string, skipMain bool) map[string]string {
		mods := map[string]string{}
		for i, line := range strings.Split(ts.ReadFile(name), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || (skipMain && i == 0) {
				continue
			}
			if len(f) < 2 {
				ts.Fatalf("%s: %q is not a module and its version", name, line)
			}
			mods[f[0]] = f[1]
		}
		return mods
	}
	before, after, want := read(args[0], true), read(args[1], true), read(args[2], false)
	var changed, added []string
	for path, v := range before {
		if w, ok := after[path]; !ok {
			changed = append(changed, path+" "+v+" → gone")
		} else if w != v {
			changed = append(changed, path+" "+v+" → "+w)
		}
	}
	for path, v := range after {
		if _, ok := before[path]; !ok {
			added = append(added, path+" "+v)
		}
	}
	var wanted []string
	for path, v := range want {
		wanted = append(wanted, path+" "+v)
	}
	sort.Strings(changed)
	sort.Strings(added)
	sort.Strings(wanted)
	if len(changed) > 0 {
		ts.Fatalf("%d of the %d modules changed:\n\t%s\nand %d added:\n\t%s", len(changed), len(before), strings.Join(changed, "\n\t"), len(added), strings.Join(added, "\n\t"))
	}
	if !slices.Equal(added, wanted) {
		ts.Fatalf("added %d modules:\n\t%s\nwant %d:\n\t%s", len(added), strings.Join(added, "\n\t"), len(wanted), strings.Join(wanted, "\n\t"))
	}
}

// mapnames FILE [MAINPATH]
//
// Checks that every function a program names in FILE, on lines "fn NAME
// [LINE]" with NAME as runtime.FuncForPC reports it ("<import path>.<func>",
// or "main.<func>", read as MAINPATH.<func>), has an id in the mapping file
// (see mapPath), at line LINE if given: the map names functions as the
// binary does.
func cmdMapNames(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: mapnames FILE [MAINPATH]")
	}
	entries, _, err := idalloc.Load(mapPath(ts))
	ts.Check(err)
	pos := map[string]string{}
	for _, e := range entries {
		pos[e.Pkg+"."+e.Func] = e.Pos
	}
	var missing []string
	n := 0
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 || f[0] != "fn" {
			continue
		}
		name := f[1]
		if rest, ok := strings.CutPrefix(name, "main."); ok && len(args) == 2 {
			name = args[1] + "." + rest
		}
		n++
		p, ok := pos[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case len(f) == 3 && !strings.HasSuffix(p, ":"+f[2]):
			missing = append(missing, name+" at line "+f[2])
		}
	}
	if n == 0 {
		ts.Fatalf("%s names no function", args[0])
	}
	if len(missing) > 0 {
		var known []string
		for name, p := range pos {
			for _, m := range missing {
				if pkgOf(name) == pkgOf(m) {
					known = append(known, name+" "+p)
					break
				}
			}
		}
		sort.Strings(known)
		ts.Fatalf("not in the map, as the binary names them: %q\nthe map's functions of their packages: %q", missing, known)
	}
	ts.Logf("%d names, all in the map", n)
}

// pkgOf returns the import path part of a qualified function name: up to
// the first dot after its last slash, outside brackets.
func pkgOf(name string) string {
	end := strings.IndexAny(name, "([")
	if end < 0 {
		end = len(name)
	}
	start := strings.LastIndexByte(name[:end], '/') + 1
	if dot := strings.IndexByte(name[start:end], '.'); dot >= 0 {
		return name[:start+dot]
	}
	return name
}

// samecompiles PLAIN INSTRUMENTED
//
// Checks that two go build -x logs (plain, and with -toolexec) compile the
// same packages, at least one: the packages are named by the -p flag of
// each compile.
func cmdSameCompiles(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: samecompiles PLAIN INSTRUMENTED")
	}
	compiled := func(file string) []string {
		var pkgs []string
		for _, line := range strings.Split(ts.ReadFile(file), "\n") {
			if !strings.Contains(line, "/compile -o ") {
				continue
			}
			f := strings.Fields(line)
			for i := range f[:len(f)-1] {
				if f[i] == "-p" {
					pkgs = append(pkgs, f[i+1])
				}
			}
		}
		sort.Strings(pkgs)
		return pkgs
	}
	plain, inst := compiled(args[0]), compiled(args[1])
	ts.Logf("plain build compiled %q; instrumented build compiled %q", plain, inst)
	if len(plain) == 0 {
		ts.Fatalf("the plain build compiled nothing")
	}
	if !slices.Equal(plain, inst) {
		ts.Fatalf("the builds compiled different packages")
	}
}

// hooks FILE ran|notran NAME...
//
// Checks which functions' hooks appear in the MATRIX_DEBUG_HOOKS=1 output
// captured in FILE. NAME is "<import path>.<func>" as in the mapping file
// named by $MATRIX_MAP (or $WORK/.matrix/methodMapping.txt). "ran" needs an
// enter and an exit hook for each NAME; "notran" needs the function to have
// no id at all or no hook in the output.
func cmdHooks(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || (args[1] != "ran" && args[1] != "notran") {
		ts.Fatalf("usage: hooks FILE ran|notran NAME...")
	}
	enters, exits := map[uint32]int{}, map[uint32]int{}
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile(args[0])))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "matrix-hook" {
			continue
		}
		id, err := strconv.ParseUint(f[2], 10, 32)
		ts.Check(err)
		if f[1] == "i" {
			enters[uint32(id)]++
		} else {
			exits[uint32(id)]++
		}
	}
	ids := mapIDs(ts)
	for _, name := range args[2:] {
		id, known := ids[name]
		switch args[1] {
		case "ran":
			if !known {
				ts.Fatalf("%s has no id in the map", name)
			}
			if enters[id] == 0 || exits[id] == 0 {
				ts.Fatalf("%s (id %d): %d enters, %d exits recorded", name, id, enters[id], exits[id])
			}
			ts.Logf("%s (id %d): %d enters, %d exits", name, id, enters[id], exits[id])
		case "notran":
			if known && (enters[id] > 0 || exits[id] > 0) {
				ts.Fatalf("%s (id %d) was recorded", name, id)
			}
		}
	}
}

func mapPath(ts *testscript.TestScript) string {
	if p := ts.Getenv("MATRIX_MAP"); p != "" {
		return p
	}
	return ts.MkAbs(".matrix/methodMapping.txt")
}

func mapIDs(ts *testscript.TestScript) map[string]uint32 {
	entries, _, err := idalloc.Load(mapPath(ts))
	ts.Check(err)
	ids := map[string]uint32{}
	for id, e := range entries {
		ids[e.Pkg+"."+e.Func] = id
	}
	return ids
}

var (
	hexOffset = regexp.MustCompile(`\+0x[0-9a-f]+`)
	hexValue  = regexp.MustCompile(`0x[0-9a-f]+`)
)

// cmpstack A B
//
// Compares two captured outputs that contain Go tracebacks, ignoring code
// offsets and argument values (which legitimately differ between builds)
// and the lines of MATRIX_DEBUG_HOOKS. File names, line numbers, function
// names and messages must be identical.
func cmdCmpStack(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: cmpstack A B")
	}
	norm := func(s string) string {
		var b strings.Builder
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "matrix-hook ") {
				continue
			}
			l = hexOffset.ReplaceAllString(l, "")
			l = hexValue.ReplaceAllString(l, "0x?")
			b.WriteString(l + "\n")
		}
		return b.String()
	}
	a, b := norm(ts.ReadFile(args[0])), norm(ts.ReadFile(args[1]))
	if (a == b) == neg {
		if neg {
			ts.Fatalf("%s and %s are the same", args[0], args[1])
		}
		ts.Fatalf("%s and %s differ:\n--- %s\n%s\n--- %s\n%s", args[0], args[1], args[0], a, args[1], b)
	}
}

// mapkeeps OLD NEW
//
// Checks that every id of the mapping file OLD is in NEW with the same key:
// ids are never changed or reused.
func cmdMapKeeps(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mapkeeps OLD NEW")
	}
	old, _, err := idalloc.Load(ts.MkAbs(args[0]))
	ts.Check(err)
	cur, _, err := idalloc.Load(ts.MkAbs(args[1]))
	ts.Check(err)
	for id, e := range old {
		n, ok := cur[id]
		if !ok || n.Pkg != e.Pkg || n.Func != e.Func {
			ts.Fatalf("id %d was %s.%s, now %s.%s", id, e.Pkg, e.Func, n.Pkg, n.Func)
		}
	}
	ts.Logf("%d ids kept, %d new", len(old), len(cur)-len(old))
}

// setfromstdout NAME
//
// Sets the environment variable NAME to the previous command's standard
// output, trimmed (the script language has no command substitution).
func cmdSetFromStdout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: setfromstdout NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// reportFrame is the part of a report's frame these commands use.
type reportFrame struct {
	Depth  int    `json:"depth"`
	Cost   int64  `json:"cost"`
	Func   string `json:"func"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// name is what a profile calls the frame's node: its function, or
// "[reason]" for a wait.
func (f reportFrame) name() string {
	if f.Kind == "wait" {
		return "[" + f.Reason + "]"
	}
	return f.Func
}

// pprofflat FUNC MINMS REPORT
//
// Checks the previous command's output, go tool pprof -top of a profile
// made from REPORT: FUNC's flat time is within 10 % of FUNC's self time in
// the reports (its cost minus its children's, summed over the incidents),
// and at least MINMS milliseconds. FUNC "[reason]" names the waits of that
// reason.
func cmdPprofFlat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: pprofflat FUNC MINMS REPORT")
	}
	fn := args[0]
	minMs, err := strconv.ParseFloat(args[1], 64)
	ts.Check(err)
	var want float64
	for _, line := range strings.Split(ts.ReadFile(args[2]), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r struct {
			Tag    string        `json:"tag"`
			Frames []reportFrame `json:"frames"`
		}
		ts.Check(json.Unmarshal([]byte(line), &r))
		for i, f := range r.Frames {
			if f.name() != fn {
				continue
			}
			self := f.Cost
			for _, c := range r.Frames[i+1:] {
				if c.Depth <= f.Depth {
					break
				}
				if c.Depth == f.Depth+1 {
					self -= c.Cost
				}
			}
			want += float64(max(self, 0))
		}
	}
	var flat float64 = -1
	for _, line := range strings.Split(ts.ReadFile("stdout"), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[len(f)-1] != fn {
			continue
		}
		d, err := time.ParseDuration(f[0])
		if err != nil {
			ts.Fatalf("flat %q of %s: %v", f[0], fn, err)
		}
		flat = float64(d) / float64(time.Millisecond)
	}
	if flat < 0 {
		ts.Fatalf("%s not in the pprof output", fn)
	}
	ts.Logf("%s: flat %.0fms, self in the reports %.0fms", fn, flat, want)
	if flat < minMs {
		ts.Fatalf("%s: flat %.0fms, want at least %.0fms", fn, flat, minMs)
	}
	if flat < 0.9*want || flat > 1.1*want {
		ts.Fatalf("%s: flat %.0fms, the reports say %.0fms", fn, flat, want)
	}
}

// stripnames IN OUT
//
// Writes the reports of IN to OUT without function names, files and
// lines, as a binary that does not know them writes them.
func cmdStripNames(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stripnames IN OUT")
	}
	var out strings.Builder
	for _, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r map[string]any
		ts.Check(json.Unmarshal([]byte(line), &r))
		frames, _ := r["frames"].([]any)
		for _, f := range frames {
			fr := f.(map[string]any)
			if fr["func"] != "DISPATCH" {
				fr["func"], fr["file"], fr["line"] = "", "", 0
			}
		}
		b, err := json.Marshal(r)
		ts.Check(err)
		out.Write(b)
		out.WriteByte('\n')
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out.String()), 0o644))
}
