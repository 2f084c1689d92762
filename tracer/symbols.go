package tracer

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/internal/abi"
	"github.com/matrixgo/matrix/tracer/analysis"
)

// Kinds of frames other than calls (Frame.Kind).
const (
	// FrameWait is an interval in which the goroutine did not run: a wait
	// with the runtime's reason, a blocking system call (reason
	// "syscall") or time runnable but not running (reason "runnable").
	FrameWait = "wait"
	// FrameInline is a function without a hook (inlined, a small leaf,
	// blacklisted) named through the program counters of a wait under it.
	FrameInline = "inline"
	// FrameGoroutine is a goroutine the dispatch started (ID 1048575),
	// under the function whose go statement started it, named by the
	// function it runs (File and Line where that is declared); its
	// children are its calls and waits. Its Cost is its wall time, from
	// the go statement to its exit: it ran beside its parent, so that
	// time is not part of the parent's. Reason is "outlived" when it was
	// started inside a boundary (by the library called) and ran past the
	// call's end, where it is cut; "running" when it had not exited when
	// the report was made.
	FrameGoroutine = "goroutine"
	// FrameDB is a database/sql call, named "db <statement>" (Frame.Bound
	// has its attributes); its children are its calls and waits.
	FrameDB = "db"
	// FrameHTTP is a net/http client request, named "http <method>
	// <scheme>://<host>".
	FrameHTTP = "http"
	// FrameRPC is a gRPC client call, named "rpc <method> <host>".
	FrameRPC = "rpc"
	// FramePublish is a message the program published, named "publish
	// <system> <host>" (the messaging system, "nats", and its server).
	FramePublish = "publish"
)

// boundFrame names the boundary of an ExtBound interval.
func boundFrame(x *analysis.Interval) Frame {
	f := boundFrameOf(x.Reason, x.Text())
	if f.Bound != nil {
		f.Bound.SpanID = x.SpanID()
	}
	return f
}

// boundFrameOf names a boundary of kind (abi.BoundDB, …) with text (its
// attributes separated by abi.BoundSep).
func boundFrameOf(kind uint8, text string) Frame {
	attrs := strings.Split(text, string(rune(abi.BoundSep)))
	attr := func(i int) string {
		if i < len(attrs) {
			return attrs[i]
		}
		return ""
	}
	b := &Bound{}
	f := Frame{Bound: b}
	switch kind {
	case abi.BoundDB:
		b.System, b.Statement = attr(0), attr(1)
		f.Kind, f.Func = FrameDB, "db "+b.Statement
	case abi.BoundHTTP:
		b.Method, b.Scheme, b.Host = attr(0), attr(1), attr(2)
		f.Kind, f.Func = FrameHTTP, "http "+b.Method+" "+b.Scheme+"://"+b.Host
	case abi.BoundRPC:
		b.Method, b.Host = attr(0), attr(1)
		f.Kind, f.Func = FrameRPC, "rpc "+b.Method+" "+b.Host
	case abi.BoundPublish:
		b.System, b.Host = attr(0), attr(1)
		f.Kind, f.Func = FramePublish, "publish "+b.System+" "+b.Host
	default:
		f.Kind, f.Func, f.Bound = FrameWait, "bound", nil
		f.Reason = "bound " + strconv.Itoa(int(kind))
	}
	f.Func = strings.TrimSpace(f.Func)
	return f
}

// What a wait waited for (Frame.For).
const (
	// WaitForPool is a wait for a free connection of a database/sql
	// pool: every connection was in use (DB.SetMaxOpenConns).
	WaitForPool = "a free database/sql connection"
)

// poolWaitFunc is where database/sql waits for a connection to be given
// back to its pool.
const poolWaitFunc = "database/sql.(*DB).conn"

// waitFor names what a wait waited for from the program counters where it
// blocked (innermost first, runtime frames left out), or returns "".
func waitFor(pcs []uint64) string {
	if len(pcs) == 0 {
		return ""
	}
	frames := runtime.CallersFrames([]uintptr{uintptr(pcs[0])})
	f, _ := frames.Next()
	if f.Function == poolWaitFunc {
		return WaitForPool
	}
	return ""
}

// WaitKey returns the stack key of a report whose time is best explained
// by a wait: "<func>[<reason>]|", the function that blocked and why (see
// framesOf).
func WaitKey(fn, reason string) string { return fn + "[" + reason + "]|" }

// ParseWaitKey returns the function and reason of a key made by WaitKey;
// ok is false for another key ("<id>|", the key of a call).
func ParseWaitKey(key string) (fn, reason string, ok bool) {
	rest, ok := strings.CutSuffix(key, "]|")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '[')
	if i <= 0 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// A callTree is the analysed, symbolised call tree of one report: the one
// builder of the slow-call, ANR and start-up reports.
type callTree struct {
	res    analysis.Result
	frames []Frame
	key    string // the stack key to report (see framesOf)
	own    int64  // ms the samples found in hooked calls' own code (see framesOf)
}

// buildTree analyses raw records with analysis.AnalyzeRepeats (rule finds
// the N+1 patterns, none when zero) and symbolises the result. buf is
// reused for the records when it is large enough.
func buildTree(raw []uint64, buf []analysis.Record, mode analysis.Mode, endMs uint64, triggerCost int64, rule analysis.RepeatRule) callTree {
	recs := buf[:0]
	for _, v := range raw {
		recs = append(recs, analysis.Record(v))
	}
	res := analysis.AnalyzeWith(recs, mode, endMs, triggerCost, rule, funcOfPC)
	frames, key, own := framesOf(res)
	return callTree{res: res, frames: frames, key: key, own: own}
}

// buildWholeTree is buildTree without the trim: every call of the tree.
func buildWholeTree(raw []uint64, buf []analysis.Record, mode analysis.Mode, endMs uint64, triggerCost int64) callTree {
	recs := buf[:0]
	for _, v := range raw {
		recs = append(recs, analysis.Record(v))
	}
	res := analysis.AnalyzeWhole(recs, mode, endMs, triggerCost)
	frames, key, own := framesOf(res)
	return callTree{res: res, frames: frames, key: key, own: own}
}

// funcOfPC is the analysis.FuncOf of this binary: the id of the
// instrumented function that holds pc, inlined or not.
func funcOfPC(pc uint64) uint32 {
	f := runtime.FuncForPC(uintptr(pc) - 1)
	if f == nil {
		return 0
	}
	id, _ := beat.FuncID(mainPath(f.Name()))
	return id
}

// fill sets a report's call tree and its cost, and its costliest N+1
// pattern if it has one; a non-empty note says why there is no tree,
// before a note the report already has.
func (t callTree) fill(r *EvilReport, note string) {
	r.Cost = t.res.Cost
	r.Tree = &TreeFields{Stack: t.res.Stack, StackKey: t.key, Frames: t.frames, Recorded: note == ""}
	if i, b := heaviestAlloc(t.frames); i >= 0 {
		r.AllocFunc, r.AllocFuncBytes = t.frames[i].Func, b
	}
	if note != "" {
		r.addNote(note)
	}
	if len(t.res.Repeats) > 0 {
		rp := t.res.Repeats[0]
		f := &RepeatFields{ID: rp.ID, ParentID: rp.Parent, Calls: rp.Calls, Cost: rp.Cost}
		if t.res.Cost > 0 {
			f.Percent = int(min(rp.Cost*100/t.res.Cost, 100))
		}
		if rp.Bound != 0 {
			f.Func, f.Bound = repeatBound(rp.Bound, rp.Text)
		} else if fn, ok := beat.Lookup(rp.ID); ok {
			f.Func = fn.String()
		}
		if fn, ok := beat.Lookup(rp.Parent); ok {
			f.Parent = fn.String()
		}
		r.Repeat = f
	}
}

// repeatBound names a repeated boundary of kind (abi.BoundDB, …) with
// text: as its frame is named ("db <statement>", …), and its kind and
// text. A boundary of a kind this binary does not know is "bound <kind>",
// without them.
func repeatBound(kind uint8, text string) (string, *RepeatBound) {
	f := boundFrameOf(kind, text)
	if f.Bound == nil {
		return f.Reason, nil
	}
	b := &RepeatBound{Kind: f.Kind, Text: strings.TrimSpace(strings.TrimPrefix(f.Func, f.Kind)), System: f.Bound.System}
	return f.Func, b
}

// Notes of a slow call without a call tree.
const (
	noteNoBuffer = "no call tree: the recording memory was all in use when the dispatch began (raise MATRIX_RECORD_MEMORY_MB or MATRIX_MAX_BUFFERS)"
	noteShort    = "no call tree: the recording memory was all in use when the dispatch needed more of it, and it stopped recording (raise MATRIX_RECORD_MEMORY_MB)"
	noteWrapped  = "no call tree: the dispatch made more calls than its buffer holds and its oldest records were overwritten (raise MATRIX_BUFFER_SIZE)"
)

// A recording says how the records of a report were recorded, for
// treeNote.
type recording int

const (
	recDispatch       recording = iota // by a dispatch, into its buffer
	recNoBuffer                        // by none: the dispatch began with every buffer in use
	recShort                           // by a dispatch that ran out of recording memory
	recOff                             // by none: the recorder was not running
	recWarmMarked                      // by none: a warm start-up marked with Reload and Ready
	recStartup                         // on the start-up ring, during package initialisation
	recStartupWrapped                  // on the start-up ring, which overflowed
)

// dispatchRecording is the recording of dispatch d.
func dispatchRecording(d *beat.Dispatch) recording {
	switch {
	case !d.Recorded():
		return recNoBuffer
	case d.Short():
		return recShort
	}
	return recDispatch
}

// treeNote explains a report without a call tree, given how its records
// were recorded and whether it has any (a tree, for a warm start-up), or
// returns "" when it has a call tree. Every report decides its note here.
func treeNote(rec recording, has bool) string {
	switch rec {
	case recNoBuffer:
		return noteNoBuffer
	case recShort:
		return noteShort
	case recOff:
		return noteNotRecording
	case recWarmMarked:
		return noteWarmNoTree
	case recStartupWrapped:
		return noteStartupWrap
	}
	switch {
	case has:
		return ""
	case rec == recStartup:
		return noteNoStartupRec
	}
	return noteWrapped
}

// framesOf symbolises a call tree with the names the binary carries
// (beat.Lookup), as the "frames" field of a report, and returns the stack
// key to report.
//
// A wait (an item with an interval) is named by the user code that
// blocked: the program counters recorded with it are expanded through the
// inline tree (runtime.CallersFrames), and the innermost frame of user code
// names the wait's function and line. User code is a package this binary
// instrumented, or any package outside the standard library (whose first
// path element has no dot). User functions between the hooked function the
// wait is recorded under and that innermost frame (inlined or without a
// hook) become FrameInline frames, outermost first, each as costly as the
// wait. A wait whose key wins names its function and reason,
// "<func>[<reason>]|": never an address, so keys are stable across builds.
func framesOf(res analysis.Result) ([]Frame, string, int64) {
	frames := make([]Frame, 0, len(res.Items))
	key := res.Key
	type anc struct {
		depth, add int
		name       string
		sampled    []Frame // its sampled frames, which end its subtree
		goroutine  bool    // it is a goroutine the dispatch started, or inside one
	}
	var own int64 // the samples' share of hooked calls' own code, outside goroutines
	var st []anc  // the open ancestors: their depth in res.Items, the depth shift of their subtree, their name
	pop := func() {
		a := st[len(st)-1]
		st = st[:len(st)-1]
		frames = append(frames, a.sampled...)
	}
	var alloc []uint64 // by frame: what the allocation samples of its call stand for
	inGo := func(f Frame) bool {
		return f.Kind == FrameGoroutine || len(st) > 0 && st[len(st)-1].goroutine
	}
	sampledOf := func(i int, f Frame) []Frame {
		if i >= len(res.Samples) || res.Samples[i] == nil {
			return nil
		}
		if b := allocTotal(res.Samples[i]); b != 0 {
			alloc = append(alloc, make([]uint64, len(frames)-len(alloc))...)
			alloc[len(frames)-1] = b
		}
		sf := sampledFrames(res.Samples[i], f.Depth+1, f.Start)
		if !inGo(f) {
			rest := res.Samples[i].Sampled
			for _, c := range sf {
				if c.Depth == f.Depth+1 {
					rest -= c.Cost
				}
			}
			own += max(rest, 0)
		}
		if i == res.KeyIndex && len(sf) > 0 {
			if k := sampledKey(sf, res.Cost); k != "" {
				key = k
			}
		}
		return sf
	}
	for i, it := range res.Items {
		for len(st) > 0 && st[len(st)-1].depth >= it.Depth {
			pop()
		}
		add, parent := 0, ""
		if len(st) > 0 {
			add, parent = st[len(st)-1].add, st[len(st)-1].name
		}
		var x *analysis.Interval
		if res.Exts != nil {
			x = res.Exts[i]
		}
		var start int64
		if i < len(res.Starts) {
			start = res.Starts[i]
		}
		if x == nil {
			f := Frame{Depth: it.Depth + add, ID: it.ID, Count: it.Count, Cost: it.Cost, Start: start}
			if fn, ok := beat.Lookup(it.ID); ok {
				f.Func, f.File, f.Line = fn.String(), fn.File, fn.Line
			}
			frames = append(frames, f)
			st = append(st, anc{it.Depth, add, f.Func, sampledOf(i, f), inGo(f)})
			continue
		}
		if x.Kind == analysis.ExtGo {
			g := goroutineFrame(x)
			g.Depth, g.ID, g.Count, g.Cost, g.Start = it.Depth+add, it.ID, it.Count, it.Cost, start
			if i == res.KeyIndex {
				key = WaitKey(g.Func, FrameGoroutine)
			}
			frames = append(frames, g)
			st = append(st, anc{it.Depth, add, g.Func, sampledOf(i, g), true})
			continue
		}
		if x.Kind == analysis.ExtBound {
			b := boundFrame(x)
			b.Depth, b.ID, b.Count, b.Cost, b.Start = it.Depth+add, it.ID, it.Count, it.Cost, start
			if i == res.KeyIndex {
				key = WaitKey(b.Func, b.Kind)
			}
			frames = append(frames, b)
			// The waits inside it are named from the function it is in.
			st = append(st, anc{it.Depth, add, parent, sampledOf(i, b), inGo(b)})
			continue
		}
		chain, at := userFrames(x.PCs, parent)
		for j := len(chain) - 1; j >= 0; j-- {
			c := chain[j]
			frames = append(frames, Frame{Depth: it.Depth + add, Count: it.Count, Cost: it.Cost, Start: start, Func: c.Function, File: c.File, Line: c.Line, Kind: FrameInline})
			add++
		}
		w := Frame{Depth: it.Depth + add, ID: it.ID, Count: it.Count, Cost: it.Cost, Start: start, Kind: FrameWait, Reason: reasonOf(x)}
		if x.Kind == analysis.ExtWait {
			w.For = waitFor(x.PCs)
			w.WokenBy = wakerOf(x.Waker)
		}
		switch {
		case len(chain) > 0:
			w.Func, w.File, w.Line = chain[0].Function, chain[0].File, chain[0].Line
		case at.Function != "":
			w.Func, w.File, w.Line = at.Function, at.File, at.Line
		default:
			w.Func = parent // no program counters (a system call, …), or none in user code
		}
		frames = append(frames, w)
		st = append(st, anc{it.Depth, add, w.Func, nil, inGo(w)})
		if i == res.KeyIndex {
			name := w.Func
			if name == "" {
				name, _, _ = strings.Cut(res.Key, "|") // the id of the function it is under
			}
			key = WaitKey(name, w.Reason)
		}
	}
	for len(st) > 0 {
		pop()
	}
	if alloc != nil {
		withAllocs(frames, alloc)
	}
	return frames, key, own
}

// goroutineFrame names the goroutine of an ExtGo interval by the function
// it runs. A go statement whose call the compiler wrapped in a function of
// its own (F.gowrap1) is named after the function the call calls, as the
// rewriter recorded it (beat.GoCallee), at the go statement's position.
func goroutineFrame(x *analysis.Interval) Frame {
	f := Frame{Kind: FrameGoroutine}
	switch {
	case x.Outlived():
		f.Reason = "outlived"
	case x.Running():
		f.Reason = "running"
	}
	if x.Handoff() {
		// A worker handed work: named where it was parked.
		f.Handoff = true
		if len(x.PCs) > 0 {
			if at, ok := innermostNamed(x.PCs[:1]); ok {
				f.Func, f.File, f.Line = at.Function, at.File, at.Line
			}
		}
		return f
	}
	if len(x.PCs) > 0 {
		if fn := runtime.FuncForPC(uintptr(x.PCs[0])); fn != nil {
			f.Func = mainPath(fn.Name())
			f.File, f.Line = fn.FileLine(fn.Entry())
			if isGoWrapper(f.Func) {
				if callee, ok := beat.GoCallee(f.File, f.Line); ok {
					f.Func = mainPath(callee)
				}
			}
		}
	}
	return f
}

// wakerOf names the goroutine that woke a wait by the innermost frame of
// user code among its program counters; nil for none.
func wakerOf(w *analysis.Waker) *Waker {
	if w == nil {
		return nil
	}
	out := &Waker{Goroutine: w.Goid}
	if at, ok := innermostNamed(w.PCs); ok {
		out.Func, out.File, out.Line = at.Function, at.File, at.Line
	}
	return out
}

// innermostNamed returns the innermost frame of user code among pcs (see
// innermostUser) or, when none is user code (a goroutine of the standard
// library, such as net/http's connection loops), the innermost frame that
// has a name.
func innermostNamed(pcs []uint64) (runtime.Frame, bool) {
	if at, ok := innermostUser(pcs); ok {
		return at, true
	}
	if len(pcs) == 0 {
		return runtime.Frame{}, false
	}
	frames := callerFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function != "" {
			f.Function = mainPath(f.Function)
			return f, true
		}
		if !more {
			return runtime.Frame{}, false
		}
	}
}

// innermostUser returns the innermost frame of user code (see userCode)
// that the return program counters pcs expand to, inlined frames included.
func innermostUser(pcs []uint64) (runtime.Frame, bool) {
	chain, _ := userFrames(pcs, "")
	if len(chain) == 0 {
		return runtime.Frame{}, false
	}
	return chain[0], true
}

// isGoWrapper reports whether a function name is the compiler's wrapper of
// a go statement's call: "….F.gowrap<n>".
func isGoWrapper(fn string) bool {
	i := strings.LastIndex(fn, ".gowrap")
	if i < 0 {
		return false
	}
	n := fn[i+len(".gowrap"):]
	if n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// reasonOf names an interval: the runtime's wait reason of a wait,
// "syscall" or "runnable".
func reasonOf(x *analysis.Interval) string {
	if x.Kind == analysis.ExtWait {
		if r := beat.WaitReason(x.Reason); r != "" {
			return r
		}
		return "wait " + strconv.Itoa(int(x.Reason))
	}
	return x.KindName()
}

// callerFrames expands recorded return program counters (innermost
// first), inlined frames included.
func callerFrames(pcs []uint64) *runtime.Frames {
	up := make([]uintptr, len(pcs))
	for i, pc := range pcs {
		up[i] = uintptr(pc)
	}
	return runtime.CallersFrames(up)
}

// userFrames expands pcs (innermost first) and returns the frames of user
// code inside the function named parent, innermost first, and the frame
// of parent itself (zero if pcs do not reach it).
func userFrames(pcs []uint64, parent string) (chain []runtime.Frame, at runtime.Frame) {
	if len(pcs) == 0 {
		return nil, at
	}
	parent = trimTypeArgs(parent)
	frames := callerFrames(pcs)
	for {
		f, more := frames.Next()
		f.Function = mainPath(f.Function)
		if f.Function != "" && userCode(f.Function) {
			if parent != "" && trimTypeArgs(f.Function) == parent {
				return chain, f
			}
			chain = append(chain, f)
		}
		if !more {
			// The program counters did not reach parent (too deep, or
			// parent has no name): frames beyond the innermost may be
			// parent's callers, so only that one is named.
			return chain[:min(len(chain), 1)], at
		}
	}
}

var mainPkg = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		return bi.Path
	}
	return "main"
})

// mainPath renames a function of package main ("main.F") after the main
// package's import path ("example.com/app.F").
func mainPath(fn string) string {
	if rest, ok := strings.CutPrefix(fn, "main."); ok {
		return mainPkg() + "." + rest
	}
	return fn
}

// userCode reports whether the function with this qualified name
// (runtime.Frame.Function) belongs to user code: a package this binary
// instrumented, or one outside the standard library.
func userCode(fn string) bool {
	pkg := funcPackage(fn)
	if beat.Instrumented(pkg) {
		return true
	}
	first, _, _ := strings.Cut(pkg, "/")
	return pkg == "main" || strings.Contains(first, ".")
}

// funcPackage returns the import path of a qualified function name:
// "example.com/a/b.(*T).M" → "example.com/a/b".
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

// trimTypeArgs drops the type arguments of an instantiated generic
// function's name ("F[...]"), which the binary's names do not carry.
func trimTypeArgs(fn string) string {
	if i := strings.Index(fn, "["); i >= 0 {
		if j := strings.LastIndexByte(fn, ']'); j > i {
			return fn[:i] + fn[j+1:]
		}
	}
	return fn
}
