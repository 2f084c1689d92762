package tracer

import (
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/matrixgo/matrix/beat"
)

// The tracers build their reports as the typed structs of this file.
// Their json tags are the report's field names (Matrix's, where Matrix has
// the field): the one place those names are spelled. An Issue carries the
// struct (Issue.Report) and, converted at the edge, the same fields as a map
// under those names (Issue.Content), which listeners write out as they are.
//
// A field tagged omitempty is left out of the content when it is zero, a nil
// pointer is left out, and a non-nil one is stored as the value it points to.
// A pointer to a struct tagged ",inline" is a group of fields that some
// reports of a type carry and others do not: its fields are stored in the
// content, as they are, when it is set.

// EvilReport is the content of an issue tagged TagEvilMethod: a slow call
// (detail DetailNormal), a dispatch still running at the lag or ANR
// threshold (DetailLag, DetailANR), or a slow start-up (DetailStartup).
// See EvilMethodTracer, ANRTracer and StartupTracer for each field's
// meaning.
type EvilReport struct {
	// Detail is one of the Detail* constants.
	Detail string `json:"detail"`
	// Scene is the dispatch's scene (a route pattern, …), else its name;
	// for a start-up, the start-up's scene.
	Scene string `json:"scene"`
	// Cost is the dispatch's (or start-up's) duration so far, in ms.
	Cost int64 `json:"cost"`
	// Dispatch is the dispatch reported; nil for a start-up.
	Dispatch *DispatchFields `json:",inline"`
	// Tree is the call tree; nil for a lag.
	Tree *TreeFields `json:",inline"`
	// Watchdog holds what the watchdog saw of a lag or ANR.
	Watchdog *WatchdogFields `json:",inline"`
	// ANR holds what the process looked like at an ANR.
	ANR *ANRFields `json:",inline"`
	// Startup describes a slow start-up.
	Startup *StartupFields `json:",inline"`
	// CPU is the process's CPU time over the dispatch, in ms, when the
	// tracer measured it; Usage the same as a share of the wall time
	// ("87.50%").
	CPU   *int64 `json:"cpu,omitempty"`
	Usage string `json:"usage,omitempty"`
	// Note says why a report lacks something (a call tree, a stack).
	Note string `json:"note,omitempty"`
	// TraceParent is the W3C traceparent of the request, when it had a
	// valid one.
	TraceParent string `json:"traceparent,omitempty"`
	// TraceState is the W3C tracestate of the request, with its valid
	// traceparent: what the caller's tracing systems keep with its trace.
	TraceState string `json:"tracestate,omitempty"`
	// TraceID is the id of the trace the dispatch's spans are in, in 32
	// hex digits, when its request brought no traceparent: the dispatch
	// made it (beat.Dispatch.TraceID), and passed it on to the services
	// it called. Its LAG, ANR and final reports carry the same one.
	TraceID string `json:"trace_id,omitempty"`
	// Why says why a slow call was reported when dispatches slow for
	// their scene are (EvilFloor): "p99 of GET /orders/{id} over the last
	// 1000: 212 ms", "at least the floor of 100 ms (3 earlier GET
	// /orders/{id})", "at least the threshold of 700 ms".
	Why string `json:"why,omitempty"`
	// HeldBack counts the dispatches of the scene that were slow for it
	// but not reported since its last report (SceneConfig's bound).
	HeldBack uint64 `json:"heldBack,omitempty"`
	// AllocBytes and AllocCount are the bytes and the objects the
	// dispatch allocated on the heap, its goroutine and those it started
	// that recorded into it (beat.Dispatch.Allocated): exact, the sizes
	// asked for. Zero when it allocated nothing, or for a start-up.
	AllocBytes uint64 `json:"allocBytes,omitempty"`
	AllocCount uint64 `json:"allocObjects,omitempty"`
	// AllocFunc is the function whose own code allocated the most by the
	// allocation samples (Frame.AllocBytes), and AllocFuncBytes what its
	// samples stand for; empty when the dispatch was not sampled while it
	// allocated.
	AllocFunc      string `json:"allocFunc,omitempty"`
	AllocFuncBytes uint64 `json:"allocFuncBytes,omitempty"`
	// Parts say where a slow call's time went: code without hooks and
	// hooked code by samples, waits, the collector, the scheduler, and
	// what is left unexplained.
	Parts *PartsFields `json:"parts,omitempty"`
	// Repeat is the costliest N+1 pattern of a slow call, when it has one
	// (see TraceConfig.Repeats).
	Repeat *RepeatFields `json:"repeat,omitempty"`
}

// RepeatFields describe an N+1 pattern: one call of Parent called Func
// Calls times, or issued the boundary Bound Calls times, and those calls
// took Cost ms, Percent % of the report's cost (analysis.Repeat, named).
type RepeatFields struct {
	// Func and Parent are the functions as "import/path.Name" (Parent is
	// "DISPATCH" for calls made by the dispatch itself), "" when the
	// binary does not know the id; ID and ParentID are their ids. For a
	// repeated boundary, Func is named as its frame is ("db <statement>",
	// "http <method> <scheme>://<host>", "rpc <method> <host>") and ID is
	// 1048575, as a boundary frame's.
	Func     string `json:"func"`
	ID       uint32 `json:"id"`
	Parent   string `json:"parent"`
	ParentID uint32 `json:"parentId"`
	Calls    int    `json:"calls"`
	Cost     int64  `json:"cost"`
	Percent  int    `json:"percent"`
	// Bound is the repeated boundary, when the pattern is one of the same
	// statement (or request) issued again and again rather than of calls
	// of a function.
	Bound *RepeatBound `json:"bound,omitempty"`
}

// RepeatBound is a boundary repeated by an N+1 pattern (RepeatFields.Bound).
// Like a boundary frame, it never holds a statement's arguments or
// literals, nor a request's path or query.
type RepeatBound struct {
	// Kind is the boundary's frame kind: FrameDB, FrameHTTP, FrameRPC or
	// FramePublish.
	Kind string `json:"kind"`
	// Text is what was repeated, as the frame names it after its kind:
	// the statement, normalised (Bound.Statement); "<method>
	// <scheme>://<host>" of an HTTP request; "<method> <host>" of a gRPC
	// call; "<system> <host>" of a published message.
	Text string `json:"text"`
	// System is a statement's database system, when the driver is known.
	System string `json:"system,omitempty"`
}

// what names the repeated function, or boundary: "db <statement>", ….
func (r RepeatFields) what() string {
	if r.Bound != nil {
		return strings.TrimSpace(r.Bound.Kind + " " + r.Bound.Text)
	}
	return repeatName(r.Func, r.ID)
}

// Key is what reports with the same pattern share, for grouping them:
// "<func> under <parent>", "db <statement> under <parent>".
func (r RepeatFields) Key() string {
	return r.what() + " under " + repeatName(r.Parent, r.ParentID)
}

// String renders the pattern for people, with the functions named without
// their package's path: "N+1: (*orderRepo).loadItem ×48 under
// (*orderService).checkout, 420 ms (56 %)". A repeated boundary is named
// as show names its frame, a long one cut (repeatCut): "N+1: db SELECT
// price FROM items WHERE id = ? ×48 under (*orderRepo).load, 420 ms (56 %)".
func (r RepeatFields) String() string {
	what := r.what()
	if r.Bound != nil {
		what = cutText(what, repeatCut)
	} else {
		what = ShortName(what)
	}
	return "N+1: " + what + " ×" + strconv.Itoa(r.Calls) + " under " +
		ShortName(repeatName(r.Parent, r.ParentID)) + ", " + strconv.FormatInt(r.Cost, 10) + " ms (" + strconv.Itoa(r.Percent) + " %)"
}

// repeatCut is the most characters of a repeated boundary's name that
// RepeatFields.String shows; Key keeps it whole.
const repeatCut = 80

// cutText cuts s to at most n characters (runes), on a space when there is
// one among its last 20, and marks the cut with "…".
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut, i := 0, 0
	for k := range s {
		if i == n-1 {
			cut = k
			break
		}
		i++
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > 0 && utf8.RuneCountInString(s[sp:cut]) <= 20 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

// repeatName is a function's name, or its id when it has none.
func repeatName(fn string, id uint32) string {
	if fn == "" {
		return "id " + strconv.FormatUint(uint64(id), 10)
	}
	return fn
}

// ShortName drops the import path of a qualified function name:
// "example.com/app.(*T).M" -> "(*T).M".
func ShortName(fn string) string {
	if fn == "DISPATCH" || strings.HasPrefix(fn, "id ") {
		return fn
	}
	pkg := funcPackage(fn)
	if len(pkg) < len(fn) {
		return fn[len(pkg)+1:]
	}
	return fn
}

// DispatchFields name the dispatch of an EvilReport.
type DispatchFields struct {
	// Name is the name the dispatch was begun with.
	Name string `json:"name"`
	// Kind is the dispatch's kind: custom, http, test, benchmark, frame.
	Kind string `json:"kind"`
	// ThreadID and Goroutine are both the dispatching goroutine's id
	// (threadId is Matrix's name).
	ThreadID  uint64 `json:"threadId"`
	Goroutine uint64 `json:"goroutine"`
	// ID is the dispatch's number in the process (beat.Dispatch.ID): the
	// LAG and ANR reports of a dispatch and its final slow-call report
	// carry the same one, so that with the process and pid it tells which
	// reports are of one dispatch. 0 in reports of older versions.
	ID uint64 `json:"dispatchId"`
	// Method, Host and Scheme are those of the HTTP request an http
	// dispatch serves (beat.Request), when the server handed them over;
	// Status is its response's status code once written. Never the
	// request's path or query: its route is the scene.
	Method string `json:"method,omitempty"`
	Host   string `json:"host,omitempty"`
	Scheme string `json:"scheme,omitempty"`
	Status int    `json:"status,omitempty"`
	// Begin is when the dispatch began, in RFC 3339 with nanoseconds,
	// from the same clock as the report's time: with it the dispatch's
	// interval is known at the clock's resolution, not in whole ms.
	Begin string `json:"begin,omitempty"`
}

// requestOf returns the request fields of d for its report.
func requestOf(d *beat.Dispatch) DispatchFields {
	r, _ := d.Request()
	return DispatchFields{Method: r.Method, Host: r.Host, Scheme: r.Scheme, Status: d.Status()}
}

// withRequest returns f with the request fields of req and the begin
// time.
func (f DispatchFields) withRequest(req DispatchFields, begin time.Time) *DispatchFields {
	f.Method, f.Host, f.Scheme, f.Status = req.Method, req.Host, req.Scheme, req.Status
	if !begin.IsZero() {
		f.Begin = begin.Format(time.RFC3339Nano)
	}
	return &f
}

// TreeFields are the call tree of an EvilReport.
type TreeFields struct {
	// Stack is the trimmed tree as lines "depth,id,count,cost".
	Stack string `json:"stack"`
	// StackKey clusters similar incidents ("123|").
	StackKey string `json:"stackKey"`
	// Frames are Stack's lines with the functions named.
	Frames []Frame `json:"frames"`
	// Recorded is false when there is no call tree; Note then says why.
	Recorded bool `json:"recorded"`
}

// WatchdogFields are what the ANR tracer reports of a lag or an ANR.
type WatchdogFields struct {
	// ThreadStack is the dispatching goroutine's stack as a panic prints
	// it, scrubbed of argument values, code offsets and addresses.
	ThreadStack string `json:"threadStack"`
	// Serving: other dispatches ended since this one began; Served: how
	// many.
	Serving bool   `json:"serving"`
	Served  uint64 `json:"served"`
	// Running is the number of dispatches in progress, this one included.
	Running int `json:"running"`
	// Goroutines is runtime.NumGoroutine().
	Goroutines int `json:"goroutines"`
}

// ANRFields are what an ANR report adds about the process.
type ANRFields struct {
	// Memory is {heapBytes, stackBytes, totalBytes, heapGoalBytes}.
	Memory map[string]uint64 `json:"memory"`
	// ProcessPriority and ProcessNice are /proc/self/stat fields 18 and
	// 19 (Linux only).
	ProcessPriority *int `json:"processPriority,omitempty"`
	ProcessNice     *int `json:"processNice,omitempty"`
	// GCPauseMs and GCCycles are the GC's stop-the-world time and cycles
	// since the dispatch began.
	GCPauseMs float64 `json:"gcPauseMs"`
	GCCycles  uint64  `json:"gcCycles"`
}

// StartupFields describe the start-up of a DetailStartup report.
type StartupFields struct {
	// SubType is 1 for a cold start-up, 2 for a warm one.
	SubType       int  `json:"subType"`
	IsWarmStartUp bool `json:"is_warm_start_up"`
	// StartupDuration is the start-up's duration in ms.
	StartupDuration int64 `json:"startup_duration"`
	// The phases of a cold start-up, in ms (see StartupReport).
	ApplicationCreate   *int64 `json:"application_create,omitempty"`
	FirstActivityCreate *int64 `json:"first_activity_create,omitempty"`
	Init                *int64 `json:"init,omitempty"`
}

// StartupReport is the content of an issue tagged TagStartUp: the phases of
// a cold or warm start-up, in ms (see StartupTracer).
type StartupReport struct {
	ApplicationCreate   int64  `json:"application_create"`
	FirstActivityCreate int64  `json:"first_activity_create"`
	StartupDuration     int64  `json:"startup_duration"`
	IsWarmStartUp       bool   `json:"is_warm_start_up"`
	ProcessToRuntime    int64  `json:"process_to_runtime"`
	Init                int64  `json:"init"`
	Scene               string `json:"scene"`
	// Process is how the process started; nil for a warm start-up.
	Process *ProcessFields `json:",inline"`
	// Note says what the phases could not be measured from.
	Note string `json:"note,omitempty"`
}

// ProcessFields say how a cold start-up's process start was measured.
type ProcessFields struct {
	// Source is one of the ProcessStart* constants.
	Source string `json:"process_start_source"`
	// Start is the process start, RFC 3339 with nanoseconds.
	Start string `json:"process_start"`
	// MainEntered: main.main was entered before the program was ready.
	MainEntered bool `json:"main_entered"`
}

// FrameReport is the content of an issue tagged TagFPS: the frames of one
// scene since its last report (see FrameTracer).
type FrameReport struct {
	Scene string `json:"scene"`
	// DropLevel and DropSum count frames and dropped frames per level
	// (DROPPED_FROZEN, …).
	DropLevel map[string]int `json:"dropLevel"`
	DropSum   map[string]int `json:"dropSum"`
	// FPS is the frame rate achieved, RefreshRate the one expected, both
	// per second; Interval the frame interval in ms.
	FPS         float64 `json:"fps"`
	RefreshRate float64 `json:"refreshRate"`
	Interval    float64 `json:"interval"`
	// Frames and Dropped count frames and frames dropped; FrameTime is
	// the time they spanned, ms.
	Frames    int   `json:"frames"`
	Dropped   int   `json:"dropped"`
	FrameTime int64 `json:"frameTime"`
}

// addNote puts note before a note the report already has.
func (r *EvilReport) addNote(note string) {
	if r.Note != "" {
		note += "; " + r.Note
	}
	r.Note = note
}

// newReportIssue returns the issue of a typed report: Report is report,
// and Content holds its fields under their json names plus the fields every
// issue carries (see NewIssue).
func newReportIssue(tag, key string, at time.Time, report any) Issue {
	is := NewIssue(tag, key, at, contentOf(report))
	is.Report = report
	return is
}

// contentOf returns the fields of a report struct (or pointer to one) as a
// map keyed by their json names, following the rules at the top of this
// file.
func contentOf(report any) map[string]any {
	c := make(map[string]any, 24)
	addFields(c, reflect.Indirect(reflect.ValueOf(report)))
	return c
}

func addFields(c map[string]any, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		fv := v.Field(i)
		if opts == "inline" {
			if !fv.IsNil() {
				addFields(c, fv.Elem())
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		switch {
		case fv.Kind() == reflect.Pointer:
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		case opts == "omitempty" && fv.IsZero():
			continue
		}
		c[name] = fv.Interface()
	}
}
