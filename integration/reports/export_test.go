package reports

import (
	"bytes"
	"encoding/hex"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/integration/otlptest"
)

const (
	exportTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	exportSpan  = "00f067aa0ba902b7"
)

// A slow call written by a current build (frames with starts, a
// traceparent), one written before reports had frames (stack only), and a
// frame-rate report, which is not an issue.
var exportReports = strings.Join([]string{
	`{"tag":"Trace_EvilMethod","id":"11111111-2222-4333-8444-555555555555","time":"2026-01-02T03:04:05.9Z","process":"shop","pid":7,"detail":"NORMAL","cost":900,"stackKey":"7|","scene":"GET /slow","traceparent":"00-` + exportTrace + `-` + exportSpan + `-01","frames":[{"depth":0,"id":1048574,"count":1,"cost":900,"func":"DISPATCH","file":"","line":0,"start":0},{"depth":1,"id":7,"count":1,"cost":850,"func":"example.com/shop.slow","file":"/s/main.go","line":9,"start":40}]}`,
	`{"tag":"Trace_EvilMethod","id":"66666666-2222-4333-8444-555555555555","time":"2026-01-02T03:04:06Z","process":"shop","pid":7,"detail":"NORMAL","cost":800,"stackKey":"7|","scene":"GET /old","stack":"0,1048574,1,800\n1,7,1,300\n1,8,1,400\n"}`,
	`{"tag":"Trace_FPS","time":"2026-01-02T03:04:06Z","id":"x","fps":58.5}`,
}, "\n") + "\n"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runExport(t *testing.T, endpoint string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	var out, errb bytes.Buffer
	code = run(append([]string{"export", "otlp", "-timeout", "20s"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestExportOTLP(t *testing.T) {
	rcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	mapFile := writeFile(t, "map.txt", "")
	code, stdout, stderr := runExport(t, rcv.URL, "-service", "shop", "-map", mapFile, writeFile(t, "r.jsonl", exportReports))
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "exported 2 issues (5 spans)") || !strings.Contains(stdout, "skipped 1 report") {
		t.Errorf("stdout %q", stdout)
	}
	spans := rcv.Spans()
	if len(spans) != 5 {
		t.Fatalf("%d spans:\n%s", len(spans), otlptest.Dump(spans))
	}
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	root, slow := byName["GET /slow"], byName["example.com/shop.slow"]
	if root.Span == nil || slow.Span == nil {
		t.Fatalf("spans:\n%s", otlptest.Dump(spans))
	}
	if hex.EncodeToString(root.TraceId) != exportTrace || hex.EncodeToString(root.ParentSpanId) != exportSpan {
		t.Errorf("root not joined to the caller's trace:\n%s", otlptest.Dump(spans))
	}
	if string(slow.ParentSpanId) != string(root.SpanId) || slow.Attr("code.line.number") != "9" || root.Resource["service.name"] != "shop" {
		t.Errorf("slow span:\n%s", otlptest.Dump(spans))
	}
	// The old report: children laid out one after the other.
	var old []otlptest.Span
	for _, s := range spans {
		if string(s.TraceId) != string(root.TraceId) {
			old = append(old, s)
		}
	}
	if len(old) != 3 || old[2].StartTimeUnixNano != old[1].EndTimeUnixNano {
		t.Errorf("old report's spans:\n%s", otlptest.Dump(old))
	}
	for _, tree := range [][]otlptest.Span{old, {root, slow}} {
		if err := otlptest.CheckNested(tree); err != nil {
			t.Error(err)
		}
	}
}

// Over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc), exporting the same file
// twice sends the same spans and resource.
func TestExportOTLPGRPCTwice(t *testing.T) {
	rcv, err := otlptest.StartGRPC()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	mapFile := writeFile(t, "map.txt", "")
	file := writeFile(t, "r.jsonl", exportReports)
	for range 2 {
		code, stdout, stderr := runExport(t, rcv.URL, "-map", mapFile, file)
		if code != 0 || !strings.Contains(stdout, "exported 2 issues (5 spans) to "+rcv.URL+"/opentelemetry.proto.collector.trace.v1.TraceService/Export") {
			t.Fatalf("exit %d: %s%s", code, stdout, stderr)
		}
	}
	spans := rcv.Spans()
	if len(spans) != 10 {
		t.Fatalf("%d spans:\n%s", len(spans), otlptest.Dump(spans))
	}
	first, second := otlptest.Dump(spans[:5]), otlptest.Dump(spans[5:])
	if first != second {
		t.Errorf("the second export differs:\n%s\n%s", first, second)
	}
	for i := range 5 {
		if !maps.Equal(spans[i].Resource, spans[i+5].Resource) {
			t.Errorf("resource %v, then %v", spans[i].Resource, spans[i+5].Resource)
		}
	}
}

func TestExportOTLPBadInput(t *testing.T) {
	rcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	good := writeFile(t, "good.jsonl", exportReports)
	lines := strings.Split(exportReports, "\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "no report file"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.jsonl")}, "no such file"},
		{"empty", []string{good, writeFile(t, "empty.jsonl", "\n")}, "empty.jsonl: empty input"},
		// Malformed lines are skipped, naming them (TestMalformedLinesSkipped):
		// a file of nothing else has no issue to export.
		{"not a report", []string{writeFile(t, "other.jsonl", `{"level":"info"}`+"\n")}, "other.jsonl:1: not a Matrix report"},
		{"no time", []string{writeFile(t, "old.jsonl", strings.Replace(lines[1], `"time":"2026-01-02T03:04:06Z",`, "", 1)+"\n")}, "old.jsonl:1: report has no time"},
		{"bad stack", []string{writeFile(t, "stack.jsonl", strings.Replace(lines[1], `1,8,1,400`, `1,x,1,400`, 1)+"\n")}, "stack.jsonl:1: stack line"},
		{"no issue", []string{writeFile(t, "fps.jsonl", lines[2]+"\n")}, "no issue to export"},
		{"bad endpoint", []string{"-endpoint", "localhost:4318", good}, "-endpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runExport(t, rcv.URL, c.args...)
			if code == 0 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q, want non-zero and %q (stdout %q)", code, stderr, c.want, stdout)
			}
		})
	}
	if n := rcv.Requests(); n != 0 {
		t.Errorf("bad input sent %d requests; want nothing sent", n)
	}

	// A collector that is down: a clear error and a non-zero exit.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	code, _, stderr := runExport(t, down, good)
	if code == 0 || !strings.Contains(stderr, "2 of 2 issues not exported") || !strings.Contains(stderr, "connection refused") {
		t.Errorf("collector down: exit %d, stderr %q", code, stderr)
	}
}

// TestExportOTLPSkipsMalformedLines: a torn line, text and a last line cut
// short are skipped with a warning naming each; the issues of the other
// lines are exported.
func TestExportOTLPSkipsMalformedLines(t *testing.T) {
	rcv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	lines := strings.Split(exportReports, "\n")
	bad := writeFile(t, "bad.jsonl", strings.Join([]string{
		lines[0],
		lines[1][:60] + lines[2], // a torn line, the next report glued to it
		"text",
		lines[1],
		lines[1][:80], // cut short
	}, "\n"))
	code, stdout, stderr := runExport(t, rcv.URL, bad)
	if code != 0 || !strings.Contains(stdout, "exported 2 issues (5 spans)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, n := range []string{"2", "3", "5"} {
		if want := "matrixexec export otlp: skipping " + bad + ":" + n + ": not a JSON report"; !strings.Contains(stderr, want) {
			t.Errorf("no warning %q in stderr:\n%s", want, stderr)
		}
	}
	if len(rcv.Spans()) != 5 {
		t.Errorf("%d spans received, want 5", len(rcv.Spans()))
	}
}
