package tracer

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matrixgo/matrix/internal/uuidv4"
)

func TestNewIssueCommonFields(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 89, time.UTC)
	is := NewIssue(TagEvilMethod, "7|", at, map[string]any{"detail": DetailNormal})
	if is.Tag != TagEvilMethod || is.Key != "7|" {
		t.Fatalf("issue %+v", is)
	}
	c := is.Content
	exe, _ := os.Executable()
	want := map[string]any{
		"tag":     TagEvilMethod,
		"process": filepath.Base(exe),
		"pid":     os.Getpid(),
		"time":    "2025-03-04T05:06:07.000000089Z",
		"detail":  DetailNormal,
		"id":      is.ID,
		// The process's host and Go release: a report file alone
		// describes the process that wrote it.
		"goVersion": runtime.Version(),
	}
	if h, _ := os.Hostname(); h != "" {
		want["hostName"] = h
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("content[%q] = %#v, want %#v", k, c[k], v)
		}
	}
	if len(c) != len(want) {
		t.Errorf("content has %d fields, want %d: %v", len(c), len(want), c)
	}
	if !uuidv4.Canonical(is.ID) {
		t.Errorf("issue id %q is not a UUID", is.ID)
	}
	if other := NewIssue(TagFPS, "", time.Time{}, nil); other.ID == is.ID {
		t.Error("two issues share an id")
	} else if ts, err := time.Parse(time.RFC3339Nano, other.Content["time"].(string)); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("zero time not replaced by now: %v %v", other.Content["time"], err)
	}
}

// recorder is a listener that keeps what it gets.
type recorder struct {
	mu     sync.Mutex
	issues []Issue
}

func (r *recorder) OnReportIssue(is Issue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issues = append(r.issues, is)
}

func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []string
	for _, is := range r.issues {
		ks = append(ks, is.Key)
	}
	return ks
}

func TestQueueOverflowDropsWithoutBlocking(t *testing.T) {
	q := newQueue(4, nil)
	entered := make(chan struct{})
	release := make(chan struct{})
	var got atomic.Int32
	q.addListener(ListenerFunc(func(Issue) {
		if got.Add(1) == 1 {
			close(entered)
			<-release // the first issue blocks the listener
		}
	}))
	q.start()
	if !q.report(Issue{Key: "first"}) {
		t.Fatal("first report dropped")
	}
	<-entered
	// The listener is stuck: 4 issues fill the queue, the next 10 drop.
	done := make(chan []bool)
	go func() {
		var res []bool
		for i := 0; i < 14; i++ {
			res = append(res, q.report(Issue{Key: "more"}))
		}
		done <- res
	}()
	select {
	case res := <-done:
		for i, ok := range res {
			if ok != (i < 4) {
				t.Errorf("report %d accepted=%v", i, ok)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("report blocked behind a blocked listener")
	}
	if n := q.dropped.Load(); n != 10 {
		t.Errorf("dropped %d, want 10", n)
	}
	close(release)
	q.stopDelivery(5 * time.Second)
	if n := got.Load(); n != 5 {
		t.Errorf("listener got %d issues, want 5 (1 + the 4 queued, delivered at stop)", n)
	}
	// A stopped queue drops and counts.
	if q.report(Issue{}) {
		t.Error("stopped queue accepted an issue")
	}
	if n := q.dropped.Load(); n != 11 {
		t.Errorf("dropped %d after a report to a stopped queue, want 11", n)
	}
}

func TestPanickingListenerDoesNotStopDelivery(t *testing.T) {
	var logBuf bytes.Buffer
	q := newQueue(16, log.New(&logBuf, "", 0))
	var bad recorder
	var good recorder
	q.addListener(ListenerFunc(func(is Issue) {
		if is.Key == "boom" {
			panic("listener bug")
		}
		bad.OnReportIssue(is)
	}))
	q.addListener(&good)
	q.start()
	for _, k := range []string{"a", "boom", "c"} {
		if !q.report(Issue{Tag: TagEvilMethod, Key: k}) {
			t.Fatalf("report %s dropped", k)
		}
	}
	q.stopDelivery(5 * time.Second)
	if got := strings.Join(good.keys(), ","); got != "a,boom,c" {
		t.Errorf("the other listener got %q, want a,boom,c", got)
	}
	if got := strings.Join(bad.keys(), ","); got != "a,c" {
		t.Errorf("the panicking listener got %q afterwards, want a,c", got)
	}
	if n := q.panics.Load(); n != 1 {
		t.Errorf("panics = %d, want 1", n)
	}
	if !strings.Contains(logBuf.String(), "listener panicked") || !strings.Contains(logBuf.String(), "listener bug") {
		t.Errorf("panic not logged: %s", logBuf.String())
	}
}

func TestStopGivesUpOnAStuckListener(t *testing.T) {
	q := newQueue(8, nil)
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	q.addListener(ListenerFunc(func(Issue) {
		once.Do(func() { close(entered) })
		<-release
	}))
	q.start()
	q.report(Issue{})
	<-entered
	q.report(Issue{})
	q.report(Issue{})
	start := time.Now()
	q.stopDelivery(50 * time.Millisecond)
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("stop took %v with a stuck listener", el)
	}
	close(release)
	// The old delivery goroutine drops what is left once the listener
	// returns.
	deadline := time.Now().Add(5 * time.Second)
	for q.dropped.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := q.dropped.Load(); n != 2 {
		t.Errorf("dropped %d, want the 2 still queued", n)
	}
}

func TestListenerFunc(t *testing.T) {
	var got Issue
	var l Listener = ListenerFunc(func(is Issue) { got = is })
	l.OnReportIssue(Issue{Key: "k"})
	if got.Key != "k" {
		t.Fatal("ListenerFunc did not call the function")
	}
}
