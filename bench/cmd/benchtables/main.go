// Command benchtables turns the raw output of bench/run.sh into the
// Markdown tables of BENCHMARKS.md. It reads only files run.sh wrote in
// its output directory and prints to stdout:
//
//	benchtables hooks  DIR   group 1: g1-<family>.txt, g1-callgrind.txt
//	benchtables lib    DIR NAME   group 2: g2-NAME-{plain,none,instr,ret,defer,b200,rec,retrec,deferrec,pgoplain,pgoinstr}.txt
//	benchtables http   DIR   group 3: g3.txt
//	benchtables build  DIR   group 4: g4.txt, g4-rss-plain.txt, g4-rss-instr.txt
//	benchtables memory DIR   group 5: g5.txt
//
// Timings are summarised by their median over the rounds, and ratios are
// the median of the per-round ratios (each round measures both sides
// close together in time, which cancels part of the machine's noise).
// It never decides pass or fail by itself: the "target" column states the
// issue's target beside the measured ratio.
package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: benchtables hooks|lib|http|build|memory DIR")
		os.Exit(2)
	}
	dir := os.Args[2]
	var err error
	switch os.Args[1] {
	case "hooks":
		err = hooks(dir)
	case "lib":
		if len(os.Args) != 4 {
			err = fmt.Errorf("usage: benchtables lib DIR NAME")
			break
		}
		err = lib(dir, os.Args[3])
	case "http":
		err = httpTable(dir)
	case "build":
		err = build(dir)
	case "memory":
		err = memory(dir)
	default:
		err = fmt.Errorf("unknown table %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtables:", err)
		os.Exit(1)
	}
}

// rounds holds the values of each benchmark in the order of the rounds.
type rounds map[string][]float64

// readBench parses `go test -bench` output: for every benchmark line, the
// value of unit (ns/op or a custom metric), keyed by the name without the
// -GOMAXPROCS suffix.
func readBench(path, unit string) (rounds, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := rounds{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			if fields[i+1] != unit {
				continue
			}
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if _, ok := r[name]; !ok {
				order = append(order, name)
			}
			r[name] = append(r[name], v)
		}
	}
	return r, order, sc.Err()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func minMax(xs []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// perRound applies f to the values of the same round of a and b.
func perRound(a, b []float64, f func(x, y float64) float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, n)
	for i := range n {
		out[i] = f(a[i], b[i])
	}
	return out
}

func ns(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if math.Abs(v) >= 10 {
		return fmt.Sprintf("%.0f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func readCallgrind(path string) map[string]float64 {
	out := map[string]float64{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}

func hooks(dir string) error {
	// Each family file (g1-<family>.txt) holds its benchmarks and the
	// unit, Call/empty, measured in the same process, round after round.
	files, _ := filepath.Glob(filepath.Join(dir, "g1-*.txt"))
	r := rounds{}
	unit := map[string][]float64{} // benchmark → Call/empty of its family
	for _, f := range files {
		if strings.HasSuffix(f, "-callgrind.txt") {
			continue
		}
		fr, order, err := readBench(f, "ns/op")
		if err != nil {
			return err
		}
		for _, name := range order {
			if name == "Call/empty" && len(r[name]) > 0 {
				r[name] = append(r[name], fr[name]...)
				continue
			}
			r[name] = fr[name]
			unit[name] = fr["Call/empty"]
		}
	}
	cg := readCallgrind(filepath.Join(dir, "g1-callgrind.txt"))
	empty := r["Call/empty"]
	if len(empty) == 0 {
		return fmt.Errorf("no Call/empty in %s/g1-*.txt", dir)
	}
	n := len(unit["Hook/off/hooked"])
	instr := func(name string) string {
		if v, ok := cg[name]; ok {
			return fmt.Sprintf("%.0f", v)
		}
		return "–"
	}

	fmt.Printf("Per call, median of %d rounds; × empty = median of the per-round ratios to `Call/empty` (one empty non-inlined call, the unit) measured in the same process. Instructions per iteration (loop included) from callgrind where it can count them exactly.\n\n", n)
	fmt.Println("| benchmark | what | ns/op | × empty | instructions/op |")
	fmt.Println("| --- | --- | ---: | ---: | ---: |")
	rows := []struct{ name, what string }{
		{"Call/empty", "**empty non-inlined call (the unit)**"},
		{"Hook/off/twin", "function that calls one function, not instrumented"},
		{"Hook/off/hooked", "same, instrumented, recorder stopped"},
		{"Hook/idle/hooked", "same, recorder running, goroutine in no dispatch"},
		{"Hook/rec/hooked", "same, recording inside a `beat.Begin` dispatch"},
		{"Hook/off/twin-leaf", "leaf function (bare `RET`), not instrumented"},
		{"Hook/off/hooked-leaf", "leaf, instrumented, recorder stopped"},
		{"Hook/idle/hooked-leaf", "leaf, instrumented, goroutine in no dispatch"},
		{"Hook/rec/hooked-leaf", "leaf, instrumented, recording"},
		{"Call/nanotime", "`runtime.nanotime` (go:linkname)"},
		{"Call/time.Now", "`time.Now()`"},
		{"Call/cover-set", "leaf with a `-cover -covermode=set` counter"},
		{"Call/cover-atomic", "leaf with a `-covermode=atomic` counter"},
		{"Call/trace.WithRegion-off", "`trace.WithRegion`, tracing off"},
		{"Call/trace.WithRegion-flightrec", "`trace.WithRegion`, flight recorder on"},
		{"Call/pprof.Do", "`pprof.Do` with one label"},
		{"Call/otel-span", "OpenTelemetry SDK span start+end (sampled, no-op processor)"},
	}
	for _, row := range rows {
		v := r[row.name]
		if len(v) == 0 {
			continue
		}
		u := unit[row.name]
		if row.name == "Call/empty" {
			u = v
		}
		rs := perRound(v, u, func(x, e float64) float64 { return x / e })
		fmt.Printf("| `%s` | %s | %s | %s | %s |\n", row.name, row.what, ns(median(v)), ratio(median(rs)), instr(row.name))
	}

	fmt.Println()
	fmt.Println("What the instrumentation adds to one call (ns/op of the instrumented function minus its uninstrumented twin, per round; for the peers, minus the empty call), against the issue's targets:")
	fmt.Println()
	fmt.Println("| added to one call | added ns | × empty (min–max over rounds) | instructions added | target |")
	fmt.Println("| --- | ---: | ---: | ---: | --- |")
	added := []struct{ what, a, b, target string }{
		{"hook pair, recorder stopped", "Hook/off/hooked", "Hook/off/twin", "≤ 2×"},
		{"hook pair, goroutine not in a dispatch", "Hook/idle/hooked", "Hook/idle/twin", "≤ 2×"},
		{"hook pair, recording", "Hook/rec/hooked", "Hook/rec/twin", "≤ 10×"},
		{"hook pair on a leaf, recorder stopped", "Hook/off/hooked-leaf", "Hook/off/twin-leaf", "(worst case)"},
		{"hook pair on a leaf, not in a dispatch", "Hook/idle/hooked-leaf", "Hook/idle/twin-leaf", "(worst case)"},
		{"hook pair on a leaf, recording", "Hook/rec/hooked-leaf", "Hook/rec/twin-leaf", "(worst case)"},
		{"`-cover` counter, set mode", "Call/cover-set", "Call/empty", ""},
		{"`-cover` counter, atomic mode", "Call/cover-atomic", "Call/empty", ""},
		{"one `runtime.nanotime` read", "Call/nanotime", "Call/empty", ""},
		{"one `time.Now()`", "Call/time.Now", "Call/empty", ""},
		{"`trace.WithRegion`, flight recorder on", "Call/trace.WithRegion-flightrec", "Call/empty", ""},
		{"`pprof.Do` with labels", "Call/pprof.Do", "Call/empty", ""},
		{"OpenTelemetry span", "Call/otel-span", "Call/empty", ""},
	}
	for _, a := range added {
		va, vb := r[a.a], r[a.b]
		if len(va) == 0 || len(vb) == 0 {
			continue
		}
		d := perRound(va, vb, func(x, y float64) float64 { return x - y })
		rs := perRound(d, unit[a.a], func(x, e float64) float64 { return x / e })
		lo, hi := minMax(rs)
		ia := "–"
		if x, ok := cg[a.a]; ok {
			if y, ok := cg[a.b]; ok {
				ia = fmt.Sprintf("%.0f", x-y)
			}
		}
		fmt.Printf("| %s | %s | **%s** (%s – %s) | %s | %s |\n", a.what, ns(median(d)), ratio(median(rs)), ratio(lo), ratio(hi), ia, a.target)
	}
	return nil
}

func lib(dir, name string) error {
	file := func(kind string) string { return filepath.Join(dir, "g2-"+name+"-"+kind+".txt") }
	plain, order, err := readBench(file("plain"), "ns/op")
	if err != nil {
		return err
	}
	cols := []struct{ kind, title string }{
		{"none", "control: matrixexec build, no hook in the library"},
		{"instr", "instrumented (the default, `-exits copy`), not recording"},
		{"ret", "exits at the returns without hook-free copies (`-exits returns`), not recording"},
		{"defer", "deferred exit hook (`-exits defer`), not recording"},
		{"b200", "`-inline-budget 200`, not recording"},
		{"rec", "instrumented (the default), every run recorded"},
		{"retrec", "`-exits returns`, every run recorded"},
		{"deferrec", "deferred exit hook, every run recorded"},
		{"pgoplain", "plain, built with a CPU profile (`-pgo`)"},
		{"pgoinstr", "instrumented with the same profile, not recording"},
	}
	data := map[string]rounds{}
	var used []int
	for i, c := range cols {
		if r, _, err := readBench(file(c.kind), "ns/op"); err == nil && len(r) > 0 {
			data[c.kind] = r
			used = append(used, i)
		}
	}
	fmt.Printf("ns/op: median of %d rounds; ratio: median of the per-round ratios to plain.\n\n", len(plain[order[0]]))
	fmt.Print("| benchmark | plain ns/op |")
	for _, i := range used {
		fmt.Printf(" %s | ratio |", cols[i].title)
	}
	fmt.Print("\n| --- | ---: |")
	for range used {
		fmt.Print(" ---: | ---: |")
	}
	fmt.Println()
	logSum := make([]float64, len(cols))
	count := make([]int, len(cols))
	for _, bench := range order {
		p := plain[bench]
		fmt.Printf("| `%s` | %s |", bench, ns(median(p)))
		for _, i := range used {
			v := data[cols[i].kind][bench]
			if len(v) == 0 {
				fmt.Print(" – | – |")
				continue
			}
			r := median(perRound(v, p, func(x, y float64) float64 { return x / y }))
			logSum[i] += math.Log(r)
			count[i]++
			fmt.Printf(" %s | %s |", ns(median(v)), ratio(r))
		}
		fmt.Println()
	}
	fmt.Print("| **geomean** | |")
	for _, i := range used {
		fmt.Printf(" | **%s** |", ratio(math.Exp(logSum[i]/float64(count[i]))))
	}
	fmt.Println()
	if r, ok := geomeanRatio(order, data["instr"], data["none"]); ok {
		fmt.Printf("\nThe hooks alone (instrumented ÷ control, geomean): **%s**.\n", ratio(r))
	}
	if n := layouts(filepath.Join(dir, "g2-"+name+"-layouts.txt")); n > 1 && data["instr"] != nil {
		// Every round ran each build in n layouts, the natural one
		// first: the ratios above pool them; here each layout alone.
		fmt.Printf("\nEach round ran every build in %d function layouts (the natural one and %d random ones, `-randlayout`); the ratios above pool them. Instrumented ÷ plain in each layout alone (geomean):", n, n-1)
		for l := range n {
			if r, ok := geomeanRatio(order, layoutRounds(data["instr"], n, l), layoutRounds(plain, n, l)); ok {
				what := fmt.Sprintf("seed %d", l)
				if l == 0 {
					what = "natural"
				}
				fmt.Printf(" %s %s;", what, ratio(r))
			}
		}
		fmt.Print(" plain in each random layout ÷ plain in the natural one (geomean):")
		for l := 1; l < n; l++ {
			if r, ok := geomeanRatio(order, layoutRounds(plain, n, l), layoutRounds(plain, n, 0)); ok {
				fmt.Printf(" seed %d %s;", l, ratio(r))
			}
		}
		fmt.Println()
	}
	if r, ok := geomeanRatio(order, data["instr"], data["ret"]); ok {
		fmt.Printf("\nThe default (hook-free copies of small functions) over exits at the returns alone (geomean): **%s**.\n", ratio(r))
	}
	if r, ok := geomeanRatio(order, data["ret"], data["defer"]); ok {
		fmt.Printf("\nExits at the returns over the deferred exit hook (geomean): **%s**.\n", ratio(r))
	}
	if r, ok := geomeanRatio(order, data["pgoinstr"], data["pgoplain"]); ok {
		fmt.Printf("\nWith a PGO profile on both sides (instrumented ÷ plain, both built with `-pgo`, geomean): **%s**.\n", ratio(r))
	}
	return libCallgrind(filepath.Join(dir, "g2-"+name+"-callgrind.txt"))
}

// layouts reads how many function layouts each round of a library ran
// (bench/run.sh's LAYOUTS + 1); 1 if the file is missing.
func layouts(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// layoutRounds keeps the values of layout l of n: each round appended one
// value per layout, in order.
func layoutRounds(r rounds, n, l int) rounds {
	out := rounds{}
	for bench, vs := range r {
		for i := l; i < len(vs); i += n {
			out[bench] = append(out[bench], vs[i])
		}
	}
	return out
}

// geomeanRatio returns the geometric mean over the benchmarks of the
// median per-round ratio a/b, if any benchmark has both.
func geomeanRatio(order []string, a, b rounds) (float64, bool) {
	var l float64
	var n int
	for _, bench := range order {
		if len(a[bench]) > 0 && len(b[bench]) > 0 {
			l += math.Log(median(perRound(a[bench], b[bench], func(x, y float64) float64 { return x / y })))
			n++
		}
	}
	return math.Exp(l / float64(max(n, 1))), n > 0
}

// libCallgrind prints the instruction counts of group 2: lines of
// "pattern kind instructions-per-op".
func libCallgrind(path string) error {
	data, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	type row struct{ plain, instr, ret, deferred, b200, pgoPlain, pgoInstr float64 }
	rows := map[string]*row{}
	var order []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		v, _ := strconv.ParseFloat(f[2], 64)
		r := rows[f[0]]
		if r == nil {
			r = &row{}
			rows[f[0]] = r
			order = append(order, f[0])
		}
		switch f[1] {
		case "plain":
			r.plain = v
		case "instr":
			r.instr = v
		case "ret":
			r.ret = v
		case "defer":
			r.deferred = v
		case "b200":
			r.b200 = v
		case "pgoplain":
			r.pgoPlain = v
		case "pgoinstr":
			r.pgoInstr = v
		}
	}
	fmt.Println()
	fmt.Println("Instructions per op executed in the library's own functions and the hooks (callgrind, exact and repeatable):")
	fmt.Println()
	fmt.Println("| benchmark | plain | instrumented | ratio | `-exits returns` | ratio | `-exits defer` | ratio | `-inline-budget 200` | ratio | plain with `-pgo` | instrumented with `-pgo` | ratio |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, name := range order {
		r := rows[name]
		fmt.Printf("| `%s` | %.0f | %.0f | %s | %.0f | %s | %.0f | %s | %.0f | %s | %.0f | %.0f | %s |\n", benchName(name), r.plain, r.instr, ratio(r.instr/r.plain),
			r.ret, ratio(r.ret/r.plain), r.deferred, ratio(r.deferred/r.plain), r.b200, ratio(r.b200/r.plain), r.pgoPlain, r.pgoInstr, ratio(r.pgoInstr/r.pgoPlain))
	}
	return nil
}

// benchName turns a -test.bench pattern back into a benchmark name.
func benchName(pat string) string {
	r := strings.NewReplacer("^Benchmark", "", "^", "", "$", "")
	return r.Replace(pat)
}

func httpTable(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "g3.txt"))
	if err != nil {
		return err
	}
	// round kind rps p50us p99us requests dispatches notrecorded [cputicks]
	type run struct{ rps, p50, p99, cpu float64 } // cpu: ticks per request, 0 if not measured
	runs := map[string]map[int]run{}
	extra := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		round, _ := strconv.Atoi(f[0])
		var r run
		r.rps, _ = strconv.ParseFloat(f[2], 64)
		r.p50, _ = strconv.ParseFloat(f[3], 64)
		r.p99, _ = strconv.ParseFloat(f[4], 64)
		if len(f) >= 9 {
			reqs, _ := strconv.ParseFloat(f[5], 64)
			ticks, _ := strconv.ParseFloat(f[8], 64)
			if reqs > 0 {
				r.cpu = ticks / reqs
			}
		}
		if runs[f[1]] == nil {
			runs[f[1]] = map[int]run{}
		}
		runs[f[1]][round] = r
		if len(f) >= 8 {
			extra[f[1]] = fmt.Sprintf("%s requests, %s dispatches, %s not recorded (last round)", f[5], f[6], f[7])
		}
	}
	var pr, ir []run
	var ratRPS, ratP50, ratP99, ratCPU []float64
	for round, p := range runs["plain"] {
		i, ok := runs["instr"][round]
		if !ok {
			continue
		}
		pr, ir = append(pr, p), append(ir, i)
		ratRPS = append(ratRPS, i.rps/p.rps)
		ratP50 = append(ratP50, i.p50/p.p50)
		ratP99 = append(ratP99, i.p99/p.p99)
		if p.cpu > 0 && i.cpu > 0 {
			ratCPU = append(ratCPU, i.cpu/p.cpu)
		}
	}
	col := func(rs []run, f func(run) float64) float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	rps := func(r run) float64 { return r.rps }
	p50 := func(r run) float64 { return r.p50 }
	p99 := func(r run) float64 { return r.p99 }
	fmt.Printf("Median of %d interleaved rounds.\n\n", len(pr))
	fmt.Println("| build | requests/s | p50 latency | p99 latency |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	fmt.Printf("| plain | %.0f | %.0f µs | %.0f µs |\n", col(pr, rps), col(pr, p50), col(pr, p99))
	fmt.Printf("| instrumented, every request a recorded dispatch | %.0f | %.0f µs | %.0f µs |\n", col(ir, rps), col(ir, p50), col(ir, p99))
	lo, hi := minMax(ratRPS)
	fmt.Printf("| **ratio** (median of per-round ratios) | **%s** (%s – %s); target ≥ 0.90× | **%s** | **%s**; target ≤ 1.15× |\n",
		ratio(median(ratRPS)), ratio(lo), ratio(hi), ratio(median(ratP50)), ratio(median(ratP99)))
	if len(ratCPU) > 0 {
		lo, hi := minMax(ratCPU)
		fmt.Printf("\nServer CPU per request (utime + stime over the measured run ÷ requests), instrumented ÷ plain: **%s** (%s – %s).\n",
			ratio(median(ratCPU)), ratio(lo), ratio(hi))
	}
	if e := extra["instr"]; e != "" {
		fmt.Printf("\nRecorder counters of the instrumented server: %s.\n", e)
	}
	return nil
}

func build(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "g4.txt"))
	if err != nil {
		return err
	}
	// phase kind round seconds [recompiled]
	type key struct{ phase, kind string }
	secs := map[key]map[int]float64{}
	note := map[key]string{}
	var phases []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		k := key{f[0], f[1]}
		round, _ := strconv.Atoi(f[2])
		s, _ := strconv.ParseFloat(f[3], 64)
		if secs[k] == nil {
			secs[k] = map[int]float64{}
			if f[1] == "plain" {
				phases = append(phases, f[0])
			}
		}
		secs[k][round] = s
		if len(f) >= 5 {
			note[k] = f[4]
		}
	}
	targets := map[string]string{"first": "(fresh map, wrapped in rsswrap)", "cold": "≤ 1.5×", "warm": "≤ 1.1×", "edit": "≤ 1.3×", "editmid": "≤ 1.3×"}
	names := map[string]string{"edit": "edit, end of file", "editmid": "edit, middle of file"}
	fmt.Println("| build | plain s | instrumented s | ratio (min–max) | target | compile steps run (plain / instrumented) |")
	fmt.Println("| --- | ---: | ---: | ---: | --- | --- |")
	for _, ph := range phases {
		p, i := secs[key{ph, "plain"}], secs[key{ph, "instr"}]
		var ps, is, rs []float64
		for round, pv := range p {
			if iv, ok := i[round]; ok {
				ps, is = append(ps, pv), append(is, iv)
				rs = append(rs, iv/pv)
			}
		}
		if len(rs) == 0 {
			continue
		}
		lo, hi := minMax(rs)
		name := ph
		if n, ok := names[ph]; ok {
			name = n
		}
		fmt.Printf("| %s | %.2f | %.2f | **%s** (%s – %s) | %s | %s / %s |\n", name, median(ps), median(is), ratio(median(rs)), ratio(lo), ratio(hi), targets[ph], orDash(note[key{ph, "plain"}]), orDash(note[key{ph, "instr"}]))
	}
	fmt.Println()
	return rss(dir)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// rss summarises the rsswrap logs of the first (cold) builds.
func rss(dir string) error {
	type step struct {
		tool, pkg  string
		self, tree float64
	}
	read := func(name string) []step {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		var out []step
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 4 {
				continue
			}
			s := step{tool: f[0], pkg: f[1]}
			for _, kv := range f[2:] {
				k, v, _ := strings.Cut(kv, "=")
				x, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "self":
					s.self = x
				case "tree":
					s.tree = x
				}
			}
			out = append(out, s)
		}
		return out
	}
	plain, instr := read("g4-rss-plain.txt"), read("g4-rss-instr.txt")
	if len(instr) == 0 {
		return nil
	}
	stat := func(steps []step, tool string, f func(step) float64) (float64, float64, string, int) {
		var xs []float64
		maxV, maxPkg := 0.0, ""
		for _, s := range steps {
			if s.tool != tool {
				continue
			}
			v := f(s)
			xs = append(xs, v)
			if v > maxV {
				maxV, maxPkg = v, s.pkg
			}
		}
		return median(xs), maxV, maxPkg, len(xs)
	}
	self := func(s step) float64 { return s.self }
	tree := func(s step) float64 { return s.tree }
	mb := func(kb float64) string { return fmt.Sprintf("%.0f MiB", kb/1024) }
	fmt.Println("Peak memory per build step of the first (cold) build, from `rsswrap` (bench/cmd/rsswrap):")
	fmt.Println()
	fmt.Println("| step | steps | median | max | package of the max |")
	fmt.Println("| --- | ---: | ---: | ---: | --- |")
	for _, tool := range []string{"compile", "link"} {
		m, x, pkg, n := stat(plain, tool, tree)
		if n > 0 {
			fmt.Printf("| plain `%s` (the tool alone) | %d | %s | %s | `%s` |\n", tool, n, mb(m), mb(x), pkg)
		}
		m, x, pkg, n = stat(instr, tool, tree)
		if n > 0 {
			fmt.Printf("| instrumented `%s`: matrixexec + the tool (wait4 max RSS) | %d | %s | %s | `%s` |\n", tool, n, mb(m), mb(x), pkg)
		}
		m, x, pkg, n = stat(instr, tool, self)
		if n > 0 {
			fmt.Printf("| matrixexec itself around `%s` (VmHWM, sampled every 2 ms) | %d | %s | %s | `%s` |\n", tool, n, mb(m), mb(x), pkg)
		}
	}
	return nil
}

func memory(dir string) error {
	path := filepath.Join(dir, "g5.txt")
	metrics := []struct{ unit, what string }{
		{"buffer-B", "ring buffer of one recording dispatch (`ReadStats().BufferBytes`)"},
		{"dispatch-B", "`beat.Dispatch` struct (`unsafe.Sizeof`, pooled)"},
		{"buffers", "buffers allocated with 10,000 goroutines in a dispatch"},
		{"not-recorded", "dispatches that found no free buffer (timed, not recorded)"},
		{"bound-B", "bound: the recording memory (`RecordMemory`, in chunks of 16 KiB)"},
		{"record-B", "recording memory held (`ReadStats().RecordBytes`)"},
		{"buffers-B", "address space of the buffers (buffers × buffer size)"},
		{"heap-delta-B", "measured heap growth (`MemStats.HeapAlloc`) with the 10,000 dispatches open"},
		{"heap-per-goroutine-B", "heap growth per goroutine beyond the buffers (Dispatch, closure, channel wait; on Linux the buffers are not on the heap)"},
		{"stack-delta-B", "goroutine stacks (`StackInuse`), the goroutines' own cost, not the recorder's"},
		{"rss-delta-B", "resident set growth (`VmRSS`)"},
		{"heap-after-stop-B", "heap left after the dispatches end and `beat.Stop` (pooled structs until the next GC cycles)"},
	}
	var configs []string
	vals := map[string]map[string]float64{}
	for _, m := range metrics {
		r, order, err := readBench(path, m.unit)
		if err != nil {
			return err
		}
		for _, name := range order {
			cfg := strings.TrimPrefix(name, "Dispatches10k/")
			if vals[cfg] == nil {
				vals[cfg] = map[string]float64{}
				configs = append(configs, cfg)
			}
			vals[cfg][m.unit] = median(r[name])
		}
	}
	fmt.Print("| quantity |")
	for _, c := range configs {
		fmt.Printf(" `%s` |", c)
	}
	fmt.Print("\n| --- |")
	for range configs {
		fmt.Print(" ---: |")
	}
	fmt.Println()
	for _, m := range metrics {
		fmt.Printf("| %s |", m.what)
		for _, c := range configs {
			v := vals[c][m.unit]
			if strings.HasSuffix(m.unit, "-B") && math.Abs(v) >= 1<<20 {
				fmt.Printf(" %.1f MiB |", v/(1<<20))
			} else if strings.HasSuffix(m.unit, "-B") && math.Abs(v) >= 1<<10 {
				fmt.Printf(" %.1f KiB |", v/(1<<10))
			} else if strings.HasSuffix(m.unit, "-B") {
				fmt.Printf(" %.0f B |", v)
			} else {
				fmt.Printf(" %.0f |", v)
			}
		}
		fmt.Println()
	}
	return nil
}
