package auto

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matrixgo/matrix/tracer"
	"github.com/matrixgo/matrix/tracer/internal/autostart"
	"github.com/matrixgo/matrix/tracer/otlp"
)

// A collector that hangs: the exit line says one issue's fate is unknown
// (it was in flight) and that the exit deadline ran out.
func TestReportDropsHungCollector(t *testing.T) {
	release := make(chan struct{})
	got := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- struct{}{}:
		default:
		}
		<-release
	}))
	defer srv.Close()
	defer close(release)
	exp, err := otlp.NewExporter(otlp.Config{URL: srv.URL + "/v1/traces"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	is := tracer.NewIssue(tracer.TagEvilMethod, "", at, nil)
	is.Report = &tracer.EvilReport{Detail: tracer.DetailNormal, Cost: 900, Scene: "GET /x"}
	exp.OnReportIssue(is)
	select {
	case <-got: // the request is in flight
	case <-time.After(time.Minute):
		t.Fatalf("the issue was never sent: %v", exp.Err())
	}
	exp.Close(100 * time.Millisecond)
	var b bytes.Buffer
	reportDrops(&b, exp)
	want := regexp.MustCompile(`^matrix: otlp: 1 issue not exported to http://127\.0\.0\.1:[0-9]+/v1/traces \(0 confirmed, 0 dropped on a full queue, 0 failed, 1 unknown\); the 5s exit deadline ran out with a request in flight, whose issues may have arrived: .*exit deadline ran out.*context canceled\n$`)
	if !want.MatchString(b.String()) {
		t.Errorf("exit line %q", b.String())
	}
	if exp.Unknown() != 1 || !exp.TimedOut() {
		t.Errorf("unknown %d, timed out %v", exp.Unknown(), exp.TimedOut())
	}
}

// OTEL_SDK_DISABLED=true turns off the OTLP sink alone, saying so.
func TestOTLPSinkDisabled(t *testing.T) {
	dir := t.TempDir()
	var warn bytes.Buffer
	_, set, err := autostart.Setup(dir+"/r.jsonl,otlp", func(k string) string {
		return map[string]string{"OTEL_SDK_DISABLED": "true"}[k]
	}, &warn, openOTLP)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Remote() != nil || len(set.Listeners()) != 1 {
		t.Errorf("remote %v, %d listeners: want the file sink alone", set.Remote(), len(set.Listeners()))
	}
	if w := warn.String(); strings.Count(w, "\n") != 1 || !strings.Contains(w, "OTEL_SDK_DISABLED=true") {
		t.Errorf("warning %q", w)
	}
}

func TestStartRejectsBadOTLPConfig(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}
	_, _, err := autostart.Start("otlp", func(k string) string { return env[k] }, io.Discard, openOTLP)
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("err %v", err)
	}
}
