// Package tracer turns what the beat recorder saw into issue reports: the
// Go counterpart of Tencent Matrix's TracePlugin, its tracers, its Issue
// and its PluginListener.
//
// A Matrix (built with NewBuilder) owns plugins and hands them the
// listeners that receive their issues. The TracePlugin starts the
// recorder (beat.Start) and its tracers; the slow-call tracer
// (EvilMethodTracer) reports every dispatch that took longer than a
// threshold with its call tree. Issues travel from the application to the
// listeners through a bounded queue: reporting never blocks, a full queue
// drops the issue and counts it (Dropped), and a listener that panics is
// recovered.
//
// In a binary that was not built with -toolexec=matrixexec the recorder is
// a no-op: TracePlugin.Start returns an error wrapping
// beat.ErrNotInstrumented and nothing runs.
package tracer

import (
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/internal/uuidv4"
)

// Issue tags (Matrix's SharePluginInfo.TAG_PLUGIN_*).
const (
	// TagEvilMethod marks slow calls (EvilMethodTracer) and slow start-ups.
	TagEvilMethod = "Trace_EvilMethod"
	// TagStartUp marks start-up phase reports.
	TagStartUp = "Trace_StartUp"
	// TagFPS marks frame-drop reports.
	TagFPS = "Trace_FPS"
)

// Issue details, the value of the "detail" content field (Matrix's
// Constants.Type).
const (
	// DetailNormal is a slow call.
	DetailNormal = "NORMAL"
	// DetailLag is a dispatch still running after the lag threshold.
	DetailLag = "LAG"
	// DetailANR is a dispatch still running after the ANR threshold.
	DetailANR = "ANR"
	// DetailStartup is a start-up slower than its threshold.
	DetailStartup = "STARTUP"
)

// Content keys every issue carries.
const (
	// KeyTag is the issue's tag.
	KeyTag = "tag"
	// KeyProcess is the base name of the executable.
	KeyProcess = "process"
	// KeyPID is the process id.
	KeyPID = "pid"
	// KeyTime is when the issue happened, in RFC 3339 with nanoseconds.
	KeyTime = "time"
	// KeyID is the issue's unique id (a random UUID).
	KeyID = "id"
	// KeyHostName is the host's name (os.Hostname), left out when unknown.
	KeyHostName = "hostName"
	// KeyGoVersion is the Go release the program was built with
	// (runtime.Version).
	KeyGoVersion = "goVersion"
)

// IssueKeys returns the content keys NewIssue adds to every issue (the
// Key* constants).
func IssueKeys() []string {
	return []string{KeyTag, KeyProcess, KeyPID, KeyTime, KeyID, KeyHostName, KeyGoVersion}
}

// Issue is one report, Matrix's Issue: a tag saying which tracer made it,
// a key that clusters similar incidents (the stack key for slow calls), and
// the content, which a listener writes out as it is.
//
// Content always carries tag, process, pid, time and id (see the Key*
// constants) plus the tracer's own fields. Listeners share the map and must
// not modify it.
type Issue struct {
	// Tag is one of the Tag* constants.
	Tag string
	// Type is Matrix's Issue.type; the trace tracers leave it 0 and put
	// the kind of incident in content's "detail".
	Type int
	// Key clusters similar incidents (for example the stack key "123|").
	Key string
	// ID is the issue's unique id, as in Content["id"].
	ID string
	// Report is the report as its typed struct: *EvilReport,
	// *StartupReport or *FrameReport for the issues of this package's
	// tracers; nil for an issue made by NewIssue. Listeners share it and
	// must not modify it.
	Report any
	// Content holds the report fields, under the report's field names.
	Content map[string]any
}

// NewIssue returns an issue with the fields every issue carries added to
// content (which it takes over; nil is fine): tag, process, pid, id,
// hostName, goVersion and time, which is at in RFC 3339 with nanoseconds,
// or now if at is zero. (The process's fields make a report file enough
// for an exporter to name the process as a live one would.)
func NewIssue(tag, key string, at time.Time, content map[string]any) Issue {
	if content == nil {
		content = make(map[string]any, 7)
	}
	if at.IsZero() {
		at = time.Now()
	}
	id := uuidv4.Random()
	content[KeyTag] = tag
	content[KeyProcess] = processName()
	content[KeyPID] = os.Getpid()
	content[KeyTime] = at.Format(time.RFC3339Nano)
	content[KeyID] = id
	if h := hostName(); h != "" {
		content[KeyHostName] = h
	}
	content[KeyGoVersion] = runtime.Version()
	return Issue{Tag: tag, Key: key, ID: id, Content: content}
}

// hostName is the host's name, "" when the system does not say.
var hostName = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// processName is the base name of the executable.
var processName = sync.OnceValue(func() string {
	if exe, err := os.Executable(); err == nil {
		return filepath.Base(exe)
	}
	if len(os.Args) > 0 {
		return filepath.Base(os.Args[0])
	}
	return ""
})

// Listener receives issues, Matrix's PluginListener.onReportIssue. It is
// called from the delivery goroutine of the plugin, one issue at a time; a
// slow listener delays later issues (and the queue drops what does not
// fit), a listener that panics is recovered and counted. A listener must
// not stop the plugin that calls it (Stop would wait for it until
// StopTimeout). If it is still busy when Stop gives up waiting, it may be
// called again by the delivery goroutine of the next Start while the old
// call is in progress.
type Listener interface {
	// OnReportIssue receives one issue. Its Content must not be modified.
	OnReportIssue(issue Issue)
}

// ListenerFunc adapts a function to Listener.
type ListenerFunc func(issue Issue)

// OnReportIssue calls f(issue).
func (f ListenerFunc) OnReportIssue(issue Issue) { f(issue) }

// Reporter accepts issues from tracers. Report never blocks: it returns
// false when the issue was dropped.
type Reporter interface {
	// Report queues issue for the listeners, or drops it.
	Report(issue Issue) bool
}

// Defaults of the delivery queue.
const (
	// DefaultQueueSize is the capacity of the queue between the
	// application and the listeners.
	DefaultQueueSize = 256
	// DefaultStopTimeout bounds how long Stop waits for the listeners to
	// take the issues still queued.
	DefaultStopTimeout = 5 * time.Second
)

// queue is the bounded queue between the tracers and the listeners, with
// one delivery goroutine while it runs.
type queue struct {
	// ch holds pointers: the collector reads every pointer word of a
	// channel's buffer on every cycle, and 256 issues of 80 bytes are
	// 1,500 of them, nil but for the few issues queued; 256 pointers are
	// 256.
	ch        chan *Issue
	listeners atomic.Pointer[[]Listener]
	logger    *log.Logger
	open      atomic.Bool
	dropped   atomic.Uint64
	panics    atomic.Uint64

	mu   sync.Mutex // serialises start and stop
	stop chan struct{}
	done chan struct{}
	// abandon is closed when stop gives up waiting: the delivery
	// goroutine then drops what is left instead of delivering it.
	abandon chan struct{}
}

func newQueue(size int, logger *log.Logger) *queue {
	if size <= 0 {
		size = DefaultQueueSize
	}
	return &queue{ch: make(chan *Issue, size), logger: logger}
}

// addListener adds l for every later issue; it may be called at any time.
func (q *queue) addListener(l Listener) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var list []Listener
	if p := q.listeners.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, l)
	q.listeners.Store(&list)
}

// report queues is, or drops and counts it when the queue is full or not
// running. It never blocks.
func (q *queue) report(is Issue) bool {
	if !q.open.Load() {
		q.dropped.Add(1)
		return false
	}
	select {
	case q.ch <- &is:
		return true
	default:
		q.dropped.Add(1)
		return false
	}
}

// start starts the delivery goroutine.
func (q *queue) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop != nil {
		return
	}
	q.stop, q.done, q.abandon = make(chan struct{}), make(chan struct{}), make(chan struct{})
	stop, done, abandon := q.stop, q.done, q.abandon
	beat.Go(func() { q.deliverLoop(stop, done, abandon) })
	q.open.Store(true)
}

// stopDelivery closes the queue to new issues, lets the delivery goroutine
// hand over what is queued, and waits for it to exit, at most timeout; after
// that it returns and the rest of the queue is dropped and counted.
func (q *queue) stopDelivery(timeout time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop == nil {
		return
	}
	q.open.Store(false)
	close(q.stop)
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-q.done:
	case <-t.C:
		close(q.abandon)
		if q.logger != nil {
			q.logger.Printf("matrix: tracer: a listener is still busy after %v; issues still queued are dropped", timeout)
		}
	}
	q.stop, q.done, q.abandon = nil, nil, nil
}

func (q *queue) deliverLoop(stop, done, abandon chan struct{}) {
	defer close(done)
	for {
		select {
		case <-abandon:
			q.drop()
			return
		default:
		}
		select {
		case is := <-q.ch:
			q.deliver(*is)
		case <-stop:
			for {
				select {
				case <-abandon:
					q.drop()
					return
				default:
				}
				select {
				case is := <-q.ch:
					q.deliver(*is)
				default:
					return
				}
			}
		}
	}
}

// drop empties the queue, counting what it drops.
func (q *queue) drop() {
	for {
		select {
		case <-q.ch:
			q.dropped.Add(1)
		default:
			return
		}
	}
}

func (q *queue) deliver(is Issue) {
	p := q.listeners.Load()
	if p == nil {
		return
	}
	for _, l := range *p {
		q.call(l, is)
	}
}

// call calls one listener, recovering a panic so that it reaches neither
// the application nor the other listeners.
func (q *queue) call(l Listener, is Issue) {
	defer func() {
		if r := recover(); r != nil {
			q.panics.Add(1)
			if q.logger != nil {
				q.logger.Printf("matrix: tracer: listener panicked; issue not delivered to it: tag %s, issue %s: %v\n%s",
					is.Tag, is.ID, r, debug.Stack())
			}
		}
	}()
	l.OnReportIssue(is)
}
