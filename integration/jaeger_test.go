package integration

import (
	"bufio"
	"cmp"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/integration/otlptest"
	"github.com/matrixgo/matrix/internal/testgo"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// The OTLP export of a zero-code service, checked where a user looks at it:
// examples/shop and examples/stuck built through matrixexec export over
// OTLP/HTTP and OTLP/gRPC, and the spans are read back from a real Jaeger
// through its query API (TestJaeger, exhaustive tier), or from the test's
// receiver that decodes the requests with the official OTLP protobuf types
// (TestShopOTLP, every run). Both go through the same checks.

// shopResource is the OTEL_RESOURCE_ATTRIBUTES the services run with.
const shopResource = "service.version=1.2.3,deployment.environment.name=ci"

// protocols are the values of OTEL_EXPORTER_OTLP_PROTOCOL the tests drive.
var protocols = []string{"http/protobuf", "grpc"}

// tspan is a span as a backend gives it back, ids in hex and attribute
// values as strings.
type tspan struct {
	TraceID, SpanID, Parent string
	State                   string // the W3C tracestate
	Name                    string
	Kind                    int // OTLP SpanKind: 1 INTERNAL, 2 SERVER
	Start, End              uint64
	Status                  int // OTLP StatusCode: 2 ERROR
	Attrs                   map[string]string
	Events                  []tevent
	Resource                map[string]string
}

// tevent is a span event.
type tevent struct {
	Name  string
	Attrs map[string]string
}

const (
	spanKindServer = 2
	// jaegerWarnings is the attribute where Jaeger's query service puts
	// what it found wrong with a span (negative duration, clock skew,
	// duplicate span ids, …).
	jaegerWarnings = "@jaeger@warnings"
)

// backend is where a service exports and where the test reads spans back.
type backend interface {
	// endpoint is OTEL_EXPORTER_OTLP_ENDPOINT for the protocol.
	endpoint(t *testing.T, protocol string) string
	// spans returns every span of service received so far, as the
	// backend shows them, or raw: every copy as received.
	spans(t *testing.T, service string, raw bool) []tspan
}

// TestShopOTLP drives the checks of TestJaeger against the test's OTLP
// receivers (HTTP and gRPC), which decode every request with the official
// OTLP protobuf types: the same requests, without building Jaeger. The
// example services are built with the defaults, which link the OTLP sink.
func TestShopOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example services; skipped in -short mode")
	}
	dir := t.TempDir()
	shopBin, stuckBin := buildExample(t, dir, "shop", nil), buildExample(t, dir, "stuck", nil)
	relayBin := buildExample(t, dir, "relay", nil)
	for _, proto := range protocols {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			b := newReceiverBackend(t)
			checkShopExport(t, b, shopBin, proto)
			checkStuckExport(t, b, stuckBin, proto)
			checkRelayExport(t, b, relayBin, proto)
		})
	}
}

// TestJaeger builds Jaeger v2 from the module proxy, runs it on 127.0.0.1
// with in-memory storage, and checks through its /api/v3 query API what
// the example services exported to it over OTLP/HTTP and OTLP/gRPC.
func TestJaeger(t *testing.T) {
	if !testgo.Long() {
		t.Skip("builds Jaeger " + jaegerVersion + " from the module proxy (about 7 minutes the first time) and runs it: the exhaustive tier; set " + testgo.EnvLong + "=1")
	}
	if testing.Short() {
		t.Skip("builds Jaeger and runs the example services; skipped in -short mode")
	}
	jaegerBin := buildJaeger(t)
	j := startJaeger(t, jaegerBin)
	dir := t.TempDir()
	shopBin, stuckBin := buildExample(t, dir, "shop", nil), buildExample(t, dir, "stuck", nil)
	relayBin := buildExample(t, dir, "relay", nil)
	for _, proto := range protocols {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			checkShopExport(t, j, shopBin, proto)
			checkStuckExport(t, j, stuckBin, proto)
			checkRelayExport(t, j, relayBin, proto)
		})
	}
	if t.Failed() {
		t.Logf("Jaeger's log:\n%s", j.log())
	}
}

// serviceName is the service name of a test's run of a program.
func serviceName(prog, protocol string) string {
	return "matrix-" + prog + "-" + strings.NewReplacer("/", "-", ".", "-").Replace(protocol)
}

// otlpEnv is the environment that makes a zero-code program report to file
// and export to b over protocol as service.
func otlpEnv(t *testing.T, b backend, protocol, service, file string) []string {
	return []string{
		"MATRIX_REPORT=" + file + ",otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + b.endpoint(t, protocol),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_RESOURCE_ATTRIBUTES=" + shopResource,
	}
}

// checkShopExport runs examples/shop exporting to b over protocol, sends
// GET /health and GET /orders/42, and checks the slow request's trace as b
// has it: the resource, the SERVER span, the nesting against matrixexec
// show's tree, the span times; then that exporting the report file again
// adds no span.
func checkShopExport(t *testing.T, b backend, shopBin, protocol string) {
	service := serviceName("shop", protocol)
	file := filepath.Join(t.TempDir(), "report.jsonl")
	env := otlpEnv(t, b, protocol, service, file)
	s := startShop(t, shopBin, env...)
	s.report = file
	s.get(t, "/health")
	s.get(t, "/orders/42")
	if reps := s.waitReports(t, "Trace_EvilMethod", 1); len(reps) != 1 {
		t.Fatalf("got %d slow-call reports, want 1: %+v", len(reps), reps)
	}
	stop(t, s.cmd)
	want := showTree(t, file)

	// The report's frames are the trace's spans (the dispatch's frame is
	// the root span).
	spans := waitSpans(t, b, service, len(want), false)
	root := checkShopTrace(t, spans, service, want)
	if t.Failed() {
		return
	}
	if j, ok := b.(*jaeger); ok {
		j.keep(t, service, root, spans)
	}

	// Exported again from the file, twice: the second export sends the
	// spans of the first, identical, and so adds no span. The spans are
	// compared as stored (raw): a backend that deduplicates shows the
	// copies once.
	export := func() {
		cmd := exec.Command(filepath.Join(binDir, "matrixexec"), "export", "otlp", file)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("matrixexec export otlp: %v\n%s", err, out)
		}
		t.Logf("matrixexec export otlp: %s", strings.TrimSpace(string(out)))
	}
	export()
	first := waitSpans(t, b, service, 2*len(want), true)
	export()
	second := waitSpans(t, b, service, 3*len(want), true)
	if got, want := spanSet(second), spanSet(first); !slices.Equal(got, want) {
		t.Errorf("a second matrixexec export changed the spans of %s: %d distinct spans before, %d after\nbefore:\n%s\nafter:\n%s", service, len(want), len(got), strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	// The exported spans are the service's (same ids, times and
	// attributes) with another resource (service.instance.id, and what
	// only the running process knows): a backend holds both copies.
	warned := 0
	shown := b.spans(t, service, false)
	for _, sp := range shown {
		if sp.Attrs[jaegerWarnings] != "" {
			warned++
		}
	}
	t.Logf("%s: %d distinct spans sent by the service; after the exports %d distinct spans stored, %d shown, %d of them with backend warnings", service, len(spanSet(spans)), len(spanSet(second)), len(shown), warned)
}

// renderTrace draws a trace's spans as a tree from root (siblings by start
// time), for people: the resource, then per span its name, kind, duration
// and some attributes (the root's of the semantic conventions, every
// span's code.line.number and matrix.cost_ms).
func renderTrace(spans []tspan, root tspan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resource: %s\n", kvLine(root.Resource))
	kids := map[string][]tspan{}
	for _, sp := range spans {
		if sp.TraceID == root.TraceID && sp.SpanID != root.SpanID {
			kids[sp.Parent] = append(kids[sp.Parent], sp)
		}
	}
	kinds := map[int]string{1: "INTERNAL", 2: "SERVER"}
	var draw func(sp tspan, depth int)
	draw = func(sp tspan, depth int) {
		attrs := map[string]string{}
		for k, v := range sp.Attrs {
			if depth == 0 && !strings.HasPrefix(k, "matrix.") || k == "matrix.cost_ms" || k == "code.line.number" {
				attrs[k] = v
			}
		}
		d := time.Duration(sp.End - sp.Start).Round(100 * time.Microsecond)
		fmt.Fprintf(&b, "%s%s  [%s %v]  %s\n", strings.Repeat("  ", depth), sp.Name, kinds[sp.Kind], d, strings.TrimSuffix(kvLine(attrs), ";"))
		c := kids[sp.SpanID]
		slices.SortStableFunc(c, func(x, y tspan) int {
			if x.Start != y.Start {
				return cmp.Compare(x.Start, y.Start)
			}
			return strings.Compare(x.Name, y.Name)
		})
		for _, k := range c {
			draw(k, depth+1)
		}
	}
	draw(root, 0)
	return b.String()
}

// checkShopTrace checks the slow GET /orders/42 trace among spans against
// show's tree of the same report, and returns its root span.
func checkShopTrace(t *testing.T, spans []tspan, service string, want []showNode) tspan {
	t.Helper()
	var roots []tspan
	for _, sp := range spans {
		if sp.Kind == spanKindServer {
			roots = append(roots, sp)
		}
	}
	if len(roots) != 1 {
		t.Fatalf("%d SERVER spans in %s, want 1:\n%s", len(roots), service, dumpSpans(spans))
	}
	root := roots[0]
	if root.Name != "GET /orders/{id}" || root.Parent != "" {
		t.Errorf("SERVER span %q with parent %q, want GET /orders/{id}, a trace's root", root.Name, root.Parent)
	}
	for k, v := range map[string]string{
		"http.route":                "/orders/{id}",
		"http.request.method":       "GET",
		"http.response.status_code": "200",
		"server.address":            "127.0.0.1",
		"url.scheme":                "http",
	} {
		if root.Attrs[k] != v {
			t.Errorf("SERVER span: %s=%q, want %q", k, root.Attrs[k], v)
		}
	}
	for k, v := range map[string]string{
		"service.name":                service,
		"service.version":             "1.2.3",
		"deployment.environment.name": "ci",
		"telemetry.sdk.name":          "matrix",
		"telemetry.sdk.language":      "go",
	} {
		if root.Resource[k] != v {
			t.Errorf("resource: %s=%q, want %q (all: %v)", k, root.Resource[k], v, root.Resource)
		}
	}
	var trace []tspan
	for _, sp := range spans {
		if sp.TraceID == root.TraceID {
			trace = append(trace, sp)
		}
		for k, v := range sp.Attrs {
			if strings.Contains(v, "/orders/42") {
				t.Errorf("span %q: %s=%q holds the request's path", sp.Name, k, v)
			}
		}
	}

	// The nesting is show's tree, frame for frame: same functions, waits
	// and goroutines, positions and costs, under the same parents
	// (siblings compared in any order: spans have no order but time).
	got := spanTree(t, trace, root)
	if g, w := canonical(got), canonical(want); g != w {
		t.Errorf("the trace's span tree is not show's:\nspans:\n%s\nshow:\n%s", render(got), render(want))
	}

	// No span is shorter than it took: every span lasts at least a
	// microsecond and its recorded cost less the recorder's 1 ms tick, and
	// contains its children; the known waits last at least their delays.
	byID := map[string]tspan{}
	for _, sp := range trace {
		byID[sp.SpanID] = sp
	}
	hasChild := map[string]bool{}
	for _, sp := range trace {
		d := time.Duration(sp.End - sp.Start)
		if sp.End < sp.Start || d < time.Microsecond {
			t.Errorf("span %q lasts %v (start %d, end %d), want at least 1µs", sp.Name, time.Duration(int64(sp.End)-int64(sp.Start)), sp.Start, sp.End)
		}
		if c, err := strconv.ParseInt(sp.Attrs["matrix.cost_ms"], 10, 64); err == nil && d < time.Duration(c-1)*time.Millisecond {
			t.Errorf("span %q lasts %v, less than its cost %d ms less one tick", sp.Name, d, c)
		}
		if w := sp.Attrs[jaegerWarnings]; w != "" {
			t.Errorf("span %q: backend warnings %s", sp.Name, w)
		}
		if sp.SpanID == root.SpanID {
			continue
		}
		p, ok := byID[sp.Parent]
		if !ok {
			t.Errorf("span %q: parent %s not in the trace", sp.Name, sp.Parent)
			continue
		}
		hasChild[p.SpanID] = true
		if sp.Start < p.Start || sp.End > p.End {
			t.Errorf("span %q [%d, %d] is not inside its parent %q [%d, %d]", sp.Name, sp.Start, sp.End, p.Name, p.Start, p.End)
		}
	}
	if len(hasChild) == 0 {
		t.Errorf("no span has a child:\n%s", dumpSpans(trace))
	}
	for _, c := range []struct {
		parent, name string
		least        time.Duration
	}{
		{"", "GET /orders/{id}", 750 * time.Millisecond}, // query 600 ms, then pricing 150 ms
		{shopPkg + ".(*orderService).checkout", "", 750 * time.Millisecond},
		{shopPkg + ".(*dbClient).query", "[select]", 600 * time.Millisecond},
		{shopPkg + ".(*pricer).total", "[sleep]", 150 * time.Millisecond},
		{shopPkg + ".(*auditLog).record", "[sleep]", 100 * time.Millisecond},
	} {
		found := false
		for _, sp := range trace {
			var match bool
			switch {
			case c.parent == "":
				match = sp.SpanID == root.SpanID && sp.Name == c.name
			case c.name == "":
				match = isCall(sp, c.parent)
			default:
				match = sp.Name == c.name && isCall(byID[sp.Parent], c.parent)
			}
			if !match {
				continue
			}
			found = true
			if d := time.Duration(sp.End - sp.Start); d < c.least {
				t.Errorf("span %q (under %q) lasts %v, want at least %v", sp.Name, c.parent, d, c.least)
			}
		}
		if !found {
			t.Errorf("no span %q under %q:\n%s", c.name, c.parent, dumpSpans(trace))
		}
	}
	return root
}

// isCall reports whether sp is the span of a call of function fn.
func isCall(sp tspan, fn string) bool {
	return sp.Attrs["code.function.name"] == fn && sp.Attrs["matrix.frame.kind"] == ""
}

// checkStuckExport runs examples/stuck exporting to b over protocol, with
// lag and ANR thresholds of 300 and 700 ms, sends GET /block?for=1200ms,
// and checks that its LAG, ANR and final reports are one trace in b: the
// SERVER span of the request and, under it, a LAG and an ANR span whose
// event holds the goroutine's stack, waiting in (*inventory).reserve.
func checkStuckExport(t *testing.T, b backend, stuckBin, protocol string) {
	service := serviceName("stuck", protocol)
	file := filepath.Join(t.TempDir(), "report.jsonl")
	env := append(otlpEnv(t, b, protocol, service, file), "MATRIX_LAG_MS=300", "MATRIX_ANR_MS=700")
	addr, _ := startStuck(t, stuckBin, env...)
	s := &shop{addr: addr, report: file}
	s.get(t, "/block?for=1200ms")
	reps := s.waitReports(t, "Trace_EvilMethod", 3)
	details := map[string]int{}
	for _, r := range reps {
		details[r.Detail]++
	}
	if details["LAG"] != 1 || details["ANR"] != 1 || details["NORMAL"] != 1 {
		t.Fatalf("reports %v, want one LAG, one ANR and one NORMAL: %+v", details, reps)
	}
	spans := waitSpans(t, b, service, 0, false)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if countDetails(spans) >= 3 {
			break
		}
		spans = b.spans(t, service, false)
	}
	var root tspan
	for _, sp := range spans {
		if sp.Attrs["matrix.detail"] == "NORMAL" {
			root = sp
		}
	}
	if root.Name != "GET /block" || root.Kind != spanKindServer || root.Parent != "" {
		t.Fatalf("no SERVER span GET /block at a trace's root:\n%s", dumpSpans(spans))
	}
	for _, detail := range []string{"LAG", "ANR"} {
		n := 0
		for _, sp := range spans {
			if sp.Attrs["matrix.detail"] != detail {
				continue
			}
			n++
			if sp.TraceID != root.TraceID || sp.Parent != root.SpanID {
				t.Errorf("%s span %q: trace %s parent %s, want under %q (trace %s span %s)", detail, sp.Name, sp.TraceID, sp.Parent, root.Name, root.TraceID, root.SpanID)
			}
			ok := false
			for _, ev := range sp.Events {
				ok = ok || ev.Name == detail && strings.Contains(ev.Attrs["matrix.goroutine.stack"], "main.(*inventory).reserve(")
			}
			if !ok {
				t.Errorf("%s span %q has no event %s with the goroutine's stack in (*inventory).reserve: %+v", detail, sp.Name, detail, sp.Events)
			}
			if detail == "ANR" && (sp.Attrs["matrix.memory.heapBytes"] == "" || sp.Attrs["matrix.goroutines"] == "") {
				t.Errorf("ANR span without memory or goroutine count: %v", sp.Attrs)
			}
		}
		if n != 1 {
			t.Errorf("%d %s spans, want 1:\n%s", n, detail, dumpSpans(spans))
		}
	}
}

// countDetails counts the spans that are a report's (LAG, ANR, NORMAL).
func countDetails(spans []tspan) int {
	n := 0
	for _, sp := range spans {
		if sp.Attrs["matrix.detail"] != "" {
			n++
		}
	}
	return n
}

// waitSpans waits up to 30 s for b to hold at least n spans of service (at
// least one when n is 0), and for their number to stay the same for a
// second, and returns them.
func waitSpans(t *testing.T, b backend, service string, n int, raw bool) []tspan {
	t.Helper()
	n = max(n, 1)
	var spans []tspan
	last, since := -1, time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		spans = b.spans(t, service, raw)
		if len(spans) != last {
			last, since = len(spans), time.Now()
		}
		if len(spans) >= n && time.Since(since) >= time.Second {
			return spans
		}
	}
	t.Fatalf("%d spans of %s after 30 s, want at least %d:\n%s", len(spans), service, n, dumpSpans(spans))
	return nil
}

// stop interrupts a service and waits for it to exit (the OTLP sink sends
// what it holds at exit).
func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("interrupting %s: %v", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", cmd.Path, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit 30 s after an interrupt", cmd.Path)
	}
}

// showNode is a call-tree node as matrixexec show prints it.
type showNode struct {
	Label    string // "name ×count  file:line  cost=Nms"
	Children []*showNode
}

// showTree runs matrixexec show on a report file holding one slow call and
// returns its tree, the dispatch's node at the root labelled DISPATCH.
// sampledMark is how show marks a sampled frame after its function.
var sampledMark = regexp.MustCompile(` \(sampled ×[0-9]+\)$`)

func showTree(t *testing.T, file string) []showNode {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "matrixexec"), "show", file).CombinedOutput()
	if err != nil {
		t.Fatalf("matrixexec show: %v\n%s", err, out)
	}
	var nodes []showNode
	var depths []int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		// "  %6dms  <2 spaces per depth><name>[ ×N][  file:line]"
		line, ok := strings.CutPrefix(sc.Text(), "  ")
		if !ok || len(line) < 10 || line[6:10] != "ms  " {
			continue
		}
		cost, err := strconv.Atoi(strings.TrimSpace(line[:6]))
		if err != nil {
			continue
		}
		rest := line[10:]
		trimmed := strings.TrimLeft(rest, " ")
		depth := (len(rest) - len(trimmed)) / 2
		name, pos, _ := strings.Cut(trimmed, "  ")
		pos = basePos(pos)
		// A sampled frame's span is named by its function alone.
		name = sampledMark.ReplaceAllString(name, "")
		if depth == 0 && name == "DISPATCH" {
			nodes = append(nodes, showNode{Label: "DISPATCH"})
		} else {
			nodes = append(nodes, showNode{Label: fmt.Sprintf("%s  %s  cost=%dms", name, pos, cost)})
		}
		depths = append(depths, depth)
	}
	if len(nodes) == 0 || nodes[0].Label != "DISPATCH" {
		t.Fatalf("matrixexec show: no call tree from DISPATCH:\n%s", out)
	}
	return treeOf(nodes, depths)
}

// treeOf links nodes given in pre-order with their depths; it returns them
// with nodes[0] the root.
func treeOf(nodes []showNode, depths []int) []showNode {
	var stack []int
	for i := range nodes {
		for len(stack) > 0 && depths[stack[len(stack)-1]] >= depths[i] {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			p := &nodes[stack[len(stack)-1]]
			p.Children = append(p.Children, &nodes[i])
		}
		stack = append(stack, i)
	}
	return nodes
}

// spanTree is the tree of a trace's spans from root, each labelled as show
// prints its frame: the span name ("[goroutine] f" is show's "go f", an
// inline frame's "(inline)" and a wait's "for …" are added from the
// attributes), its count, code.file.path:code.line.number and
// matrix.cost_ms.
func spanTree(t *testing.T, trace []tspan, root tspan) []showNode {
	nodes := []showNode{{Label: "DISPATCH"}}
	index := map[string]int{root.SpanID: 0}
	for _, sp := range trace {
		if sp.SpanID == root.SpanID {
			continue
		}
		name := sp.Name
		if fn, ok := strings.CutPrefix(name, "[goroutine] "); ok {
			name = "go " + fn
			if r := sp.Attrs["matrix.wait.reason"]; r != "" {
				name += " (" + r + " at the report)"
			}
		}
		switch sp.Attrs["matrix.frame.kind"] {
		case "inline":
			name += " (inline)"
		case "wait":
			if f := sp.Attrs["matrix.wait.for"]; f != "" {
				name += " for " + f
			}
		}
		if c, _ := strconv.Atoi(sp.Attrs["matrix.count"]); c > 1 {
			name += fmt.Sprintf(" ×%d", c)
		}
		pos := ""
		if f := sp.Attrs["code.file.path"]; f != "" {
			pos = basePos(f + ":" + sp.Attrs["code.line.number"])
		}
		index[sp.SpanID] = len(nodes)
		nodes = append(nodes, showNode{Label: fmt.Sprintf("%s  %s  cost=%sms", name, pos, sp.Attrs["matrix.cost_ms"])})
	}
	for _, sp := range trace {
		if sp.SpanID == root.SpanID {
			continue
		}
		p, ok := index[sp.Parent]
		if !ok {
			t.Errorf("span %q: parent %s is not in the trace", sp.Name, sp.Parent)
			continue
		}
		nodes[p].Children = append(nodes[p].Children, &nodes[index[sp.SpanID]])
	}
	return nodes
}

// basePos reduces a position to its file's base name and line: show
// prints the file as the binary has it, code.file.path is relative to the
// module (TestCodeFilePath in tracer/otlp).
func basePos(pos string) string {
	if i := strings.LastIndexAny(pos, `/\`); i >= 0 {
		return pos[i+1:]
	}
	return pos
}

// canonical renders a tree with every node's children sorted, so that two
// trees compare equal whatever their siblings' order.
func canonical(nodes []showNode) string {
	var c func(n *showNode) string
	c = func(n *showNode) string {
		kids := make([]string, len(n.Children))
		for i, k := range n.Children {
			kids[i] = c(k)
		}
		slices.Sort(kids)
		return n.Label + "{" + strings.Join(kids, ",") + "}"
	}
	return c(&nodes[0])
}

// render draws a tree, one node per line, for failure messages.
func render(nodes []showNode) string {
	var b strings.Builder
	var r func(n *showNode, depth int)
	r = func(n *showNode, depth int) {
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), n.Label)
		for _, k := range n.Children {
			r(k, depth+1)
		}
	}
	r(&nodes[0], 0)
	return b.String()
}

// spanSet is one line per distinct span (ids, times, name, attributes,
// resource), sorted: a span sent twice, identical, is there once, as a
// backend that deduplicates shows it.
func spanSet(spans []tspan) []string {
	lines := make([]string, len(spans))
	for i, sp := range spans {
		lines[i] = spanLine(sp)
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

func spanLine(sp tspan) string {
	return fmt.Sprintf("trace=%s span=%s parent=%s start=%d end=%d kind=%d name=%s attrs=%s resource=%s", sp.TraceID, sp.SpanID, sp.Parent, sp.Start, sp.End, sp.Kind, sp.Name, kvLine(sp.Attrs), kvLine(sp.Resource))
}

// kvLine renders attributes as "k=v;…", sorted.
func kvLine(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s;", k, m[k])
	}
	return b.String()
}

func dumpSpans(spans []tspan) string {
	return strings.Join(spanSet(spans), "\n")
}

// receiverBackend is the test's OTLP receivers (otlptest), one per
// protocol.
type receiverBackend struct {
	recv map[string]*otlptest.Receiver
}

func newReceiverBackend(t *testing.T) *receiverBackend {
	b := &receiverBackend{recv: map[string]*otlptest.Receiver{}}
	for proto, start := range map[string]func() (*otlptest.Receiver, error){"http/protobuf": otlptest.Start, "grpc": otlptest.StartGRPC} {
		r, err := start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		b.recv[proto] = r
	}
	return b
}

func (b *receiverBackend) endpoint(t *testing.T, protocol string) string {
	r, ok := b.recv[protocol]
	if !ok {
		t.Fatalf("no receiver for %q", protocol)
	}
	return r.URL
}

func (b *receiverBackend) spans(t *testing.T, service string, raw bool) []tspan {
	var out []tspan
	for _, r := range b.recv {
		if errs := r.Errors(); len(errs) > 0 {
			t.Fatalf("receiver: bad requests: %v", errs)
		}
		for _, s := range r.Spans() {
			if s.Resource["service.name"] != service {
				continue
			}
			sp := tspan{
				TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId), State: s.TraceState,
				Name: s.Name, Kind: int(s.Kind), Start: s.StartTimeUnixNano, End: s.EndTimeUnixNano,
				Status: int(s.GetStatus().GetCode()), Attrs: pbAttrs(s.Attributes), Resource: s.Resource,
			}
			if len(s.ParentSpanId) > 0 {
				sp.Parent = hex.EncodeToString(s.ParentSpanId)
			}
			for _, ev := range s.Events {
				sp.Events = append(sp.Events, tevent{Name: ev.Name, Attrs: pbAttrs(ev.Attributes)})
			}
			out = append(out, sp)
		}
	}
	return out
}

func pbAttrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch x := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = strconv.FormatBool(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		}
	}
	return m
}

// spanKindClient is OTLP's SpanKind CLIENT.
const spanKindClient = 3

// startRelay starts examples/relay as role ("stock", or "front" when
// stock is the stock service's address), exporting to b over protocol,
// and returns it and its address.
func startRelay(t *testing.T, b backend, bin, protocol, role, stock string) (*exec.Cmd, string) {
	t.Helper()
	var args []string
	if stock != "" {
		args = []string{"-stock", "http://" + stock}
	}
	env := append(otlpEnv(t, b, protocol, serviceName("relay-"+role, protocol), filepath.Join(t.TempDir(), "report.jsonl")), "MATRIX_EVIL_THRESHOLD_MS=100")
	return startService(t, bin, role, args, env)
}

// checkRelayExport runs examples/relay's two services, each exporting to
// b over protocol under a service name of its own, sends the front's
// GET /checkout/7, and checks that b has one trace across both: the stock
// service's SERVER span is the child of the front's CLIENT span, the call
// that carried the front's trace context on. A second request,
// GET /checkout/8, brings a caller's trace context with a tracestate: both
// services' spans are in the caller's trace and keep its tracestate, which
// the front passed on.
func checkRelayExport(t *testing.T, b backend, bin, protocol string) {
	const callerTrace, callerSpan, state = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
	stock, stockAddr := startRelay(t, b, bin, protocol, "stock", "")
	front, frontAddr := startRelay(t, b, bin, protocol, "front", stockAddr)
	(&shop{addr: frontAddr}).get(t, "/checkout/7")
	req, err := http.NewRequest("GET", "http://"+frontAddr+"/checkout/8", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	req.Header.Set("Tracestate", state)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Error(err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	stop(t, front)
	stop(t, stock)
	frontSpans := waitSpans(t, b, serviceName("relay-front", protocol), 6, false)
	stockSpans := waitSpans(t, b, serviceName("relay-stock", protocol), 4, false)
	// find returns the span of kind and name in the trace, or in any
	// trace but the caller's when trace is "".
	find := func(spans []tspan, kind int, name, trace string) tspan {
		t.Helper()
		for _, sp := range spans {
			if sp.Kind == kind && sp.Name == name && (sp.TraceID == trace || trace == "" && sp.TraceID != callerTrace) {
				return sp
			}
		}
		t.Fatalf("no span %q of kind %d in trace %q:\n%s", name, kind, trace, dumpSpans(spans))
		return tspan{}
	}
	for _, trace := range []string{"", callerTrace} {
		root := find(frontSpans, spanKindServer, "GET /checkout/{id}", trace)
		call := find(frontSpans, spanKindClient, "GET", root.TraceID)
		served := find(stockSpans, spanKindServer, "GET /stock/{sku}", root.TraceID)
		wantParent, wantState := "", ""
		if trace != "" {
			wantParent, wantState = callerSpan, state
		}
		if root.Parent != wantParent || call.TraceID != root.TraceID {
			t.Errorf("the front's call %s is not in the trace of its request %s (parent %q, want %q)", call.TraceID, root.TraceID, root.Parent, wantParent)
		}
		if served.TraceID != call.TraceID || served.Parent != call.SpanID {
			t.Errorf("the stock service's span (trace %s, parent %s) is not the child of the front's call (trace %s, span %s)\nfront:\n%s\nstock:\n%s",
				served.TraceID, served.Parent, call.TraceID, call.SpanID, dumpSpans(frontSpans), dumpSpans(stockSpans))
		}
		for _, sp := range []tspan{root, call, served} {
			if sp.State != wantState {
				t.Errorf("span %q in trace %s has tracestate %q, want %q", sp.Name, sp.TraceID, sp.State, wantState)
			}
		}
	}
}
