package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Jaeger v2 for TestJaeger: built from the module proxy in a scratch module
// (never this module's go.mod), run on 127.0.0.1 with in-memory storage,
// read through its /api/v3 query API (a source build has no UI).

const (
	jaegerModule  = "github.com/jaegertracing/jaeger"
	jaegerVersion = "v1.76.0"
)

// jaegerGoMod is the scratch module's go.mod. Jaeger's own go.mod replaces
// a module; replace directives apply only in the main module, so the
// scratch module repeats it to build what Jaeger's release builds.
const jaegerGoMod = `module matrix.test/jaegerbuild

go 1.24

replace github.com/Shopify/sarama => github.com/Shopify/sarama v1.33.0
`

// buildJaeger returns the path of a jaeger binary of jaegerVersion built
// with the installed Go. It is kept in the user cache directory
// (matrix/jaeger/<version>-<goos>-<goarch>-<go version>/jaeger): the cold
// build takes minutes.
func buildJaeger(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory for the Jaeger binary: %v", err)
	}
	dir := filepath.Join(cache, "matrix", "jaeger", fmt.Sprintf("%s-%s-%s-%s", jaegerVersion, runtime.GOOS, runtime.GOARCH, goEnv(t, "GOVERSION")))
	bin := filepath.Join(dir, "jaeger"+exeSuffix())
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		t.Logf("Jaeger %s: %s (cached)", jaegerVersion, bin)
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(jaegerGoMod), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".jaeger.%d.tmp", os.Getpid()))
	defer os.Remove(tmp)
	start := time.Now()
	for _, args := range [][]string{
		{"get", jaegerModule + "/cmd/jaeger@" + jaegerVersion},
		{"build", "-o", tmp, jaegerModule + "/cmd/jaeger"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s (in a scratch module): %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("Jaeger %s built in %v: %s", jaegerVersion, time.Since(start).Round(time.Second), bin)
	return bin
}

// jaegerConfig is Jaeger's configuration: OTLP receivers, in-memory
// storage, the query API and the health check, each on 127.0.0.1; no
// internal metrics endpoint.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: info

extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:{{health}}
  jaeger_query:
    storage:
      traces: memstore
    max_clock_skew_adjust: 0s
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:{{query_http}}
    grpc:
      endpoint: 127.0.0.1:{{query_grpc}}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{{otlp_grpc}}
      http:
        endpoint: 127.0.0.1:{{otlp_http}}

processors:
  batch:
    timeout: 100ms

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// jaeger is a running Jaeger.
type jaeger struct {
	ports map[string]int
	cmd   *exec.Cmd
	out   *lockedBuffer
}

// startJaeger runs bin with jaegerConfig on free ports and waits until its
// query API and OTLP receivers answer; it checks that everything it
// listens on is on 127.0.0.1.
func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	j := &jaeger{ports: map[string]int{}, out: &lockedBuffer{}}
	cfg := jaegerConfig
	for _, name := range []string{"health", "query_http", "query_grpc", "otlp_grpc", "otlp_http"} {
		j.ports[name] = freePort(t)
		cfg = strings.ReplaceAll(cfg, "{{"+name+"}}", strconv.Itoa(j.ports[name]))
	}
	file := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	j.cmd = exec.Command(bin, "--config", file)
	j.cmd.Stdout, j.cmd.Stderr = j.out, j.out
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("starting Jaeger: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = j.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = j.cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("Jaeger exited: %v\n%s", j.cmd.ProcessState, j.log())
		default:
		}
		if j.ready() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger not ready after 2 minutes:\n%s", j.log())
		}
	}
	if runtime.GOOS == "linux" {
		addrs, err := listening(j.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("Jaeger's listening sockets: %v", err)
		}
		t.Logf("Jaeger listens on %v", addrs)
		for _, a := range addrs {
			if !strings.HasPrefix(a, "127.0.0.1:") {
				t.Errorf("Jaeger listens on %s, not on 127.0.0.1", a)
			}
		}
		if len(addrs) < len(j.ports) {
			t.Errorf("Jaeger listens on %v, want at least the %d ports of its configuration", addrs, len(j.ports))
		}
	}
	return j
}

// ready reports whether the query API and both OTLP receivers answer.
func (j *jaeger) ready() bool {
	resp, err := http.Get(j.queryURL("/api/v3/services"))
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	for _, p := range []string{"otlp_grpc", "otlp_http"} {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(j.ports[p]))
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}

func (j *jaeger) log() string { return j.out.String() }

func (j *jaeger) queryURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(j.ports["query_http"]) + path
}

func (j *jaeger) endpoint(t *testing.T, protocol string) string {
	switch protocol {
	case "http/protobuf":
		return "http://127.0.0.1:" + strconv.Itoa(j.ports["otlp_http"])
	case "grpc":
		return "http://127.0.0.1:" + strconv.Itoa(j.ports["otlp_grpc"])
	}
	t.Fatalf("no Jaeger receiver for %q", protocol)
	return ""
}

// apiTraces is the query API's answer with traces: OTLP JSON under
// "result".
type apiTraces struct {
	Result struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []apiKV `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []apiSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	} `json:"result"`
}

// spans returns the spans of service's traces of the last hour: the search
// finds the traces, each is then read by its id (/api/v3/traces/{id}). As
// the UI shows them (after the query service's adjustments, which
// deduplicate identical spans and add warnings), or raw, as stored: every
// copy received. (Jaeger v1.76.0's in-memory storage hands the adjusters
// its stored spans: a query that adds a warning adds it to the stored span,
// once more on every query.) It checks that /api/v3/services lists the
// service once it has spans.
func (j *jaeger) spans(t *testing.T, service string, raw bool) []tspan {
	t.Helper()
	now := time.Now()
	q := url.Values{
		"query.service_name":   {service},
		"query.start_time_min": {now.Add(-time.Hour).Format(time.RFC3339Nano)},
		"query.start_time_max": {now.Add(time.Hour).Format(time.RFC3339Nano)},
		"query.num_traces":     {"100"},
	}
	byID := ""
	if raw {
		q.Set("query.raw_traces", "true")
		byID = "?raw_traces=true"
	}
	var found apiTraces
	if j.getJSON(t, "/api/v3/traces?"+q.Encode(), &found) == http.StatusNotFound {
		return nil
	}
	var ids []string
	for _, rs := range found.Result.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if !slices.Contains(ids, s.TraceID) {
					ids = append(ids, s.TraceID)
				}
			}
		}
	}
	var out []tspan
	for _, id := range ids {
		var res apiTraces
		if j.getJSON(t, "/api/v3/traces/"+id+byID, &res) == http.StatusNotFound {
			t.Fatalf("trace %s found by the search is not found by its id", id)
		}
		for _, rs := range res.Result.ResourceSpans {
			resource := apiAttrs(t, rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := tspan{
						TraceID: s.TraceID, SpanID: s.SpanID, Parent: s.ParentSpanID, State: s.TraceState, Name: s.Name,
						Kind: int(s.Kind), Start: uint64(s.Start), End: uint64(s.End), Status: int(s.Status.Code),
						Attrs: apiAttrs(t, s.Attributes), Resource: resource,
					}
					for _, ev := range s.Events {
						sp.Events = append(sp.Events, tevent{Name: ev.Name, Attrs: apiAttrs(t, ev.Attributes)})
					}
					out = append(out, sp)
				}
			}
		}
	}
	if len(out) > 0 {
		var svc struct {
			Services []string `json:"services"`
		}
		j.getJSON(t, "/api/v3/services", &svc)
		if !slices.Contains(svc.Services, service) {
			t.Errorf("/api/v3/services lists %v, not %s", svc.Services, service)
		}
	}
	return out
}

// keep writes, when MATRIX_JAEGER_OUT names a directory, the trace of root
// as the query API returns it (<service>.json, indented) and drawn as a
// tree (<service>.txt, see renderTrace).
func (j *jaeger) keep(t *testing.T, service string, root tspan, spans []tspan) {
	dir := os.Getenv("MATRIX_JAEGER_OUT")
	if dir == "" {
		return
	}
	resp, err := http.Get(j.queryURL("/api/v3/traces/" + root.TraceID))
	if err != nil {
		t.Fatalf("GET the trace: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET the trace: %v", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("the trace: %v\n%s", err, body)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{service + ".json": pretty.Bytes(), service + ".txt": []byte(renderTrace(spans, root))} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// getJSON decodes the answer to GET path into v, unless it is a 404 (no
// traces); it returns the status.
func (j *jaeger) getJSON(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := http.Get(j.queryURL(path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return resp.StatusCode
	default:
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return resp.StatusCode
}

// apiSpan is a span in the query API's OTLP JSON: ids in hex, 64-bit
// numbers as strings, enums as numbers.
type apiSpan struct {
	TraceID      string  `json:"traceId"`
	SpanID       string  `json:"spanId"`
	ParentSpanID string  `json:"parentSpanId"`
	TraceState   string  `json:"traceState"`
	Name         string  `json:"name"`
	Kind         apiEnum `json:"kind"`
	Start        apiInt  `json:"startTimeUnixNano"`
	End          apiInt  `json:"endTimeUnixNano"`
	Attributes   []apiKV `json:"attributes"`
	Events       []struct {
		Name       string  `json:"name"`
		Attributes []apiKV `json:"attributes"`
	} `json:"events"`
	Status struct {
		Code apiEnum `json:"code"`
	} `json:"status"`
}

// apiKV is an attribute: one of the AnyValue fields is set.
type apiKV struct {
	Key   string `json:"key"`
	Value struct {
		String *string          `json:"stringValue"`
		Int    *apiInt          `json:"intValue"`
		Bool   *bool            `json:"boolValue"`
		Double *float64         `json:"doubleValue"`
		Array  *json.RawMessage `json:"arrayValue"`
	} `json:"value"`
}

func apiAttrs(t *testing.T, kvs []apiKV) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.String != nil:
			m[kv.Key] = *v.String
		case v.Int != nil:
			m[kv.Key] = strconv.FormatInt(int64(*v.Int), 10)
		case v.Bool != nil:
			m[kv.Key] = strconv.FormatBool(*v.Bool)
		case v.Double != nil:
			m[kv.Key] = strconv.FormatFloat(*v.Double, 'g', -1, 64)
		case v.Array != nil:
			// Jaeger's warnings are an array of strings.
			m[kv.Key] = string(*v.Array)
		default:
			t.Errorf("attribute %s: no value the test reads", kv.Key)
		}
	}
	return m
}

// apiInt is a 64-bit integer that JSON holds as a string or a number.
type apiInt int64

func (n *apiInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		w, err2 := strconv.ParseInt(s, 10, 64)
		if err2 != nil {
			return fmt.Errorf("integer %s: %w", b, err)
		}
		*n = apiInt(w)
		return nil
	}
	*n = apiInt(v)
	return nil
}

// apiEnum is an OTLP enum, given as its number or its name.
type apiEnum int

var otlpEnumNames = map[string]int{
	"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
	"SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5,
	"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2,
}

func (e *apiEnum) UnmarshalJSON(b []byte) error {
	if n, err := strconv.Atoi(string(b)); err == nil {
		*e = apiEnum(n)
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("enum %s: %w", b, err)
	}
	n, ok := otlpEnumNames[name]
	if !ok {
		return fmt.Errorf("enum %s: unknown name", b)
	}
	*e = apiEnum(n)
	return nil
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// listening returns the addresses (ip:port) of the TCP sockets process pid
// listens on, from /proc (Linux).
func listening(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(l, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			if table == "tcp6" && os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		lines := strings.Split(string(data), "\n")
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			a, err := procAddr(f[1])
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/net/%s: %w", pid, table, err)
			}
			addrs = append(addrs, a)
		}
	}
	slices.Sort(addrs)
	return addrs, nil
}

// procAddr decodes /proc/net/tcp's "0100007F:1F90" (IPv4) or its 32-digit
// IPv6 form: 32-bit words in host (little-endian) order.
func procAddr(s string) (string, error) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || len(h)%8 != 0 || len(h) == 0 {
		return "", fmt.Errorf("address %q", s)
	}
	ip := make(net.IP, len(h)/2)
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(h[w*8:w*8+8], 16, 32)
		if err != nil {
			return "", fmt.Errorf("address %q: %w", s, err)
		}
		ip[w*4], ip[w*4+1], ip[w*4+2], ip[w*4+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	if v4 := ip.To4(); v4 != nil && len(ip) == 16 && !ip.Equal(net.IPv6zero) {
		ip = v4
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), nil
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
