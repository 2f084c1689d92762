package tracer

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/beat"
)

const linkedSkip = "needs a binary built with -toolexec=matrixexec, which TestMain runs the tests in unless MATRIX_TEST_LINKED=off"

func requireLinked(t testing.TB) {
	t.Helper()
	if !beat.Linked() {
		t.Skip(linkedSkip)
	}
}

func requirePlain(t *testing.T) {
	t.Helper()
	if beat.Linked() {
		t.Skip("this binary is linked to the recorder; the no-op contract is checked by the plain go test run")
	}
}

// fakePlugin logs its lifecycle.
type fakePlugin struct {
	tag       string
	log       *[]string
	startErr  error
	initErr   error
	listeners []Listener
}

func (p *fakePlugin) Init() error            { *p.log = append(*p.log, "init "+p.tag); return p.initErr }
func (p *fakePlugin) Start() error           { *p.log = append(*p.log, "start "+p.tag); return p.startErr }
func (p *fakePlugin) Stop()                  { *p.log = append(*p.log, "stop "+p.tag) }
func (p *fakePlugin) Tag() string            { return p.tag }
func (p *fakePlugin) AddListener(l Listener) { p.listeners = append(p.listeners, l) }

func TestBuilderLifecycle(t *testing.T) {
	var log []string
	a := &fakePlugin{tag: "A", log: &log}
	b := &fakePlugin{tag: "B", log: &log}
	var l recorder
	m, err := NewBuilder().Plugin(a).Plugin(b).Listener(&l).Build()
	if err != nil {
		t.Fatal(err)
	}
	if m.Plugin("B") != b || m.Plugin("C") != nil || len(m.Plugins()) != 2 {
		t.Error("Plugin lookup")
	}
	if len(a.listeners) != 1 || a.listeners[0] != Listener(&l) {
		t.Errorf("listeners not handed to the plugin: %v", a.listeners)
	}
	if err := m.StartAllPlugins(); err != nil {
		t.Fatal(err)
	}
	m.StopAllPlugins()
	if got := strings.Join(log, ","); got != "init A,init B,start A,start B,stop B,stop A" {
		t.Errorf("lifecycle %s", got)
	}
}

func TestBuilderDefaultListener(t *testing.T) {
	var log []string
	a := &fakePlugin{tag: "A", log: &log}
	if _, err := NewBuilder().Plugin(a).Build(); err != nil {
		t.Fatal(err)
	}
	if len(a.listeners) != 1 {
		t.Fatalf("got %d listeners, want the default JSON listener", len(a.listeners))
	}
	if _, ok := a.listeners[0].(*jsonListener); !ok {
		t.Errorf("default listener is %T", a.listeners[0])
	}
}

func TestBuilderErrors(t *testing.T) {
	var log []string
	if _, err := NewBuilder().Plugin(&fakePlugin{tag: "A", log: &log}).Plugin(&fakePlugin{tag: "A", log: &log}).Build(); err == nil {
		t.Error("duplicate tags accepted")
	}
	if _, err := NewBuilder().Plugin(nil).Build(); err == nil {
		t.Error("nil plugin accepted")
	}
	boom := errors.New("boom")
	_, err := NewBuilder().Plugin(&fakePlugin{tag: "A", log: &log, initErr: boom}).Build()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"A"`) {
		t.Errorf("init error %v", err)
	}
	_, err = NewBuilder().Plugin(NewTracePlugin(TraceConfig{QueueSize: -1})).Build()
	if err == nil || !strings.Contains(err.Error(), "QueueSize") {
		t.Errorf("bad trace config: %v", err)
	}
}

func TestStartAllPluginsRollsBack(t *testing.T) {
	var log []string
	boom := errors.New("boom")
	m, err := NewBuilder().Listener(&recorder{}).
		Plugin(&fakePlugin{tag: "A", log: &log}).
		Plugin(&fakePlugin{tag: "B", log: &log, startErr: boom}).
		Plugin(&fakePlugin{tag: "C", log: &log}).Build()
	if err != nil {
		t.Fatal(err)
	}
	log = nil
	err = m.StartAllPlugins()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"B"`) {
		t.Errorf("error %v", err)
	}
	if got := strings.Join(log, ","); got != "start A,start B,stop A" {
		t.Errorf("lifecycle %s", got)
	}
}

// In a plain build the plugin says the program is not instrumented and
// starts nothing.
func TestPlainBuildNotInstrumented(t *testing.T) {
	requirePlain(t)
	before := runtime.NumGoroutine()
	p := NewTracePlugin(DefaultTraceConfig())
	m, err := NewBuilder().Plugin(p).Listener(&recorder{}).Build()
	if err != nil {
		t.Fatal(err)
	}
	err = m.StartAllPlugins()
	if !errors.Is(err, beat.ErrNotInstrumented) {
		t.Fatalf("StartAllPlugins = %v, want an error wrapping beat.ErrNotInstrumented", err)
	}
	if !strings.Contains(err.Error(), "not instrumented") || !strings.Contains(err.Error(), "-toolexec=matrixexec") {
		t.Errorf("unclear message: %v", err)
	}
	if p.Started() || beat.Started() {
		t.Error("something started")
	}
	if n := runtime.NumGoroutine(); n != before {
		t.Errorf("%d goroutines after a failed start, %d before", n, before)
	}
	if p.Report(Issue{}) {
		t.Error("a plugin that is not running accepted an issue")
	}
	if p.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1", p.Dropped())
	}
	m.StopAllPlugins() // harmless
}

func TestTracePluginTracers(t *testing.T) {
	p := NewTracePlugin(TraceConfig{EvilMethod: true})
	if p.Tag() != "Trace" {
		t.Errorf("tag %q", p.Tag())
	}
	evil, ok := p.Tracer(EvilMethodTracerName).(*EvilMethodTracer)
	if !ok {
		t.Fatalf("no EvilMethodTracer: %v", p.Tracers())
	}
	if evil.Threshold() != DefaultEvilThreshold {
		t.Errorf("threshold %v, want the 700ms default", evil.Threshold())
	}
	if c := p.Config(); c.QueueSize != DefaultQueueSize || c.StopTimeout != DefaultStopTimeout {
		t.Errorf("defaults not applied: %+v", c)
	}
	if off := NewTracePlugin(TraceConfig{}); len(off.Tracers()) != 0 {
		t.Errorf("zero config runs tracers: %v", off.Tracers())
	}
	if err := NewTracePlugin(TraceConfig{Tracers: []Tracer{nil}}).Init(); err == nil {
		t.Error("nil tracer accepted")
	}
}
