package commands

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/matrixgo/matrix/idalloc"
	"github.com/matrixgo/matrix/tracer"
)

// This file is what the commands that read reports (show, top, pprof,
// html) share: reading JSON-line reports from files or stdin, resolving
// the functions of their frames, building call trees with self times, and
// writing an output file whole or not at all.

// report is one JSON-line report as the viewing commands read it: the
// fields they use (see the README's "Reports" and tracer.Issue); the rest
// of the line is ignored.
type report struct {
	Tag      string        `json:"tag"`
	Detail   string        `json:"detail"`
	Scene    string        `json:"scene"`
	Cost     int64         `json:"cost"`
	Stack    string        `json:"stack"`
	StackKey string        `json:"stackKey"`
	Frames   []reportFrame `json:"frames"`
	Time     string        `json:"time"`
	// Process, PID and DispatchID tell which reports are of one dispatch
	// (see dispatchKey); DispatchID is 0 in reports of older versions.
	Process    string `json:"process"`
	PID        int64  `json:"pid"`
	DispatchID uint64 `json:"dispatchId"`
	// ThreadStack is the goroutine's stack of a LAG or ANR report.
	ThreadStack string `json:"threadStack"`
	// The fields of a summary (tag Trace_Summary, tracer.SummaryReport)
	// that diff reads.
	Costs    [][2]int64           `json:"costs"`
	Untraced int                  `json:"untraced"`
	Paths    []tracer.SummaryPath `json:"paths"`
	Dropped  uint64               `json:"dropped"`
	// Repeat is the N+1 pattern of a slow call, when it has one.
	Repeat *tracer.RepeatFields `json:"repeat"`
	// AllocBytes is what the dispatch allocated, exactly.
	AllocBytes uint64 `json:"allocBytes"`
	// HeldBack counts the dispatches of the scene the tracer held back
	// (not reported) before this report.
	HeldBack uint64 `json:"heldBack"`
}

// repeatKey is what top and html group r by with -by repeat: its N+1
// pattern's key, "" for none.
func (r *report) repeatKey() string {
	if r.Repeat == nil {
		return ""
	}
	return r.Repeat.Key()
}

// reportFrame is one call-tree node of a report: the tracer's Frame.
type reportFrame = tracer.Frame

// Frame kinds (reportFrame.Kind).
const (
	// frameKindWait is time the goroutine spent blocked, with a reason.
	frameKindWait = tracer.FrameWait
	// frameKindGoroutine is the root of a goroutine the dispatch started.
	frameKindGoroutine = tracer.FrameGoroutine
	// frameKindInline is a function without a hook, named by the inline
	// tree; it is a call like any other.
	frameKindInline = tracer.FrameInline
	// frameKindSampled is a function without a hook that a hooked call's
	// own time went to, found by sampling; its cost is that share.
	frameKindSampled = tracer.FrameSampled
	// frameKindDB, frameKindHTTP, frameKindRPC and frameKindPublish are
	// boundaries: calls out of the program, named by their statement or
	// host.
	frameKindDB      = tracer.FrameDB
	frameKindHTTP    = tracer.FrameHTTP
	frameKindRPC     = tracer.FrameRPC
	frameKindPublish = tracer.FramePublish
)

// incident reports whether r is a slow call, lag, ANR or slow start-up:
// a report of tag Trace_EvilMethod, which the viewing commands group and
// turn into profiles.
func (r *report) incident() bool { return r.Tag == tracer.TagEvilMethod }

// watchdog reports whether r is a LAG or ANR report: made while its
// dispatch was still running, which a final report may follow.
func (r *report) watchdog() bool {
	return r.Detail == tracer.DetailLag || r.Detail == tracer.DetailANR
}

// dispatchKey returns what identifies r's dispatch: its process, pid and
// dispatch number; ok is false for a report without a dispatch number
// (a start-up, or a report of an older version).
func (r *report) dispatchKey() (key string, ok bool) {
	if r.DispatchID == 0 {
		return "", false
	}
	return r.Process + "\x00" + strconv.FormatInt(r.PID, 10) + "\x00" + strconv.FormatUint(r.DispatchID, 10), true
}

// frames returns the report's frames, made from its "stack" lines when it
// has no frames (reports of older versions, or edited by hand).
func (r *report) frames() []reportFrame {
	if len(r.Frames) == 0 && r.Stack != "" {
		return stackFrames(r.Stack)
	}
	return r.Frames
}

// stackFrames turns report lines "depth,id,count,cost" into frames without
// names.
func stackFrames(stack string) []reportFrame {
	var frames []reportFrame
	for _, l := range strings.Split(strings.TrimSpace(stack), "\n") {
		f := strings.Split(strings.TrimSpace(l), ",")
		if len(f) != 4 {
			continue
		}
		depth, err1 := strconv.Atoi(f[0])
		id, err2 := strconv.ParseUint(f[1], 10, 32)
		count, err3 := strconv.Atoi(f[2])
		cost, err4 := strconv.ParseInt(f[3], 10, 64)
		if err := errors.Join(err1, err2, err3, err4); err != nil || depth < 0 {
			continue
		}
		frames = append(frames, reportFrame{Depth: depth, ID: uint32(id), Count: count, Cost: cost})
	}
	return frames
}

// keyID returns the function id a stack key "<id>|" names.
func keyID(key string) (uint32, bool) {
	s, _, _ := strings.Cut(key, "|")
	id, err := strconv.ParseUint(s, 10, 32)
	return uint32(id), err == nil && s != ""
}

// eachLine calls fn for every non-blank line of the named files, or of
// stdin when there are none ("-" is stdin too), with its position
// "file:line". complete is false for a final line that does not end in a
// newline: a file cut short, or still being written.
func eachLine(inputs []string, stdin io.Reader, fn func(pos string, line []byte, complete bool) error) error {
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for _, name := range inputs {
		if err := eachLineOf(name, stdin, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachLineOf(name string, stdin io.Reader, fn func(pos string, line []byte, complete bool) error) error {
	in, label := stdin, "stdin"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("read input: %w", err)
		}
		defer f.Close()
		in, label = f, name
	}
	r := bufio.NewReaderSize(in, 1<<20)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		complete := err == nil
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s: %w", label, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if ferr := fn(label+":"+strconv.Itoa(n), t, complete); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// maxSkipWarnings is how many malformed lines a command names one by one;
// the rest are counted in one line at the end.
const maxSkipWarnings = 20

// skipper tells about the malformed lines a command skips: each on its
// own line on w ("matrixexec top: skipping r.jsonl:6: truncated report:
// …"), up to maxSkipWarnings, then their number.
type skipper struct {
	w   io.Writer
	cmd string
	n   int
}

// skip tells about one malformed line; err names it (file:line).
func (s *skipper) skip(err error) {
	s.n++
	if s.n <= maxSkipWarnings {
		fmt.Fprintf(s.w, "matrixexec %s: skipping %v\n", s.cmd, err)
	}
}

// done tells how many malformed lines were not named.
func (s *skipper) done() {
	if s.n > maxSkipWarnings {
		fmt.Fprintf(s.w, "matrixexec %s: skipped %d more malformed lines\n", s.cmd, s.n-maxSkipWarnings)
	}
}

// eachReport calls fn for every report of the inputs (see eachLine) and
// skips, through sk, the lines that are not reports (decodeReport): a
// torn line, a line of another program, a report of another layout.
func eachReport(inputs []string, stdin io.Reader, sk *skipper, fn func(pos string, line []byte, r *report) error) error {
	defer sk.done()
	return eachLine(inputs, stdin, func(pos string, line []byte, complete bool) error {
		r := new(report)
		if err := decodeReport(pos, line, complete, r); err != nil {
			sk.skip(err)
			return nil
		}
		return fn(pos, line, r)
	})
}

// decodeReport parses one report line, with a message for people when it
// is not one (see decodeLine).
func decodeReport(pos string, line []byte, complete bool, r *report) error {
	if line[0] != '{' {
		return fmt.Errorf("%s: not a JSON report (reports are JSON objects, one a line)", pos)
	}
	if err := decodeLine(line, r); err != nil {
		var syn *jsontext.SyntacticError
		var sem *jsonv2.SemanticError
		switch {
		case !complete && (errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF)):
			return fmt.Errorf("%s: truncated report: the file ends inside it (cut short, or still being written): %w", pos, err)
		case errors.As(err, &sem):
			return fmt.Errorf("%s: a report of another layout (written by another version?): %w", pos, err)
		}
		return fmt.Errorf("%s: not a JSON report: %w", pos, err)
	}
	if r.Tag == "" {
		return fmt.Errorf("%s: not a Matrix report: no \"tag\" field", pos)
	}
	return nil
}

// decodeLine decodes one report line into v with the JSON v2 prototype,
// which reads a report in half the time of encoding/json (BENCHMARKS.md,
// group 6), as leniently as encoding/json does: invalid UTF-8 and
// duplicate names are accepted, and names it does not know are skipped.
func decodeLine(line []byte, v any) error {
	return jsonv2.Unmarshal(line, v, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// names resolves the functions of frames: from the report itself, else
// from the method mapping file of the build, read when first needed.
type names struct {
	path     string
	explicit bool // named on the command line: it must be readable
	loaded   bool
	entries  map[uint32]idalloc.Entry
	err      error
}

// newNames returns a resolver using the map at path. An explicit map is
// read at once, and an error reading it is returned.
func newNames(path string, explicit bool) (*names, error) {
	n := &names{path: path, explicit: explicit}
	if explicit && path != "" { // -map "" means no map
		n.load()
		if n.err != nil {
			return nil, fmt.Errorf("map: %w", n.err)
		}
	}
	return n, nil
}

func (n *names) load() {
	if n.loaded {
		return
	}
	n.loaded = true
	if n.path == "" {
		n.err = fs.ErrNotExist
		return
	}
	n.entries, _, n.err = idalloc.Load(n.path)
}

// function returns the function of an ordinary frame, its file and line;
// ok is false when neither the report nor the map names it.
func (n *names) function(f *reportFrame) (name, file string, line int, ok bool) {
	if f.Func != "" {
		return f.Func, f.File, f.Line, true
	}
	if f.ID == idalloc.Dispatch {
		return "DISPATCH", "", 0, true
	}
	n.load()
	e, ok := n.entries[f.ID]
	if !ok {
		return "", "", 0, false
	}
	file = e.Pos
	if i := strings.LastIndexByte(e.Pos, ':'); i >= 0 {
		if l, err := strconv.Atoi(e.Pos[i+1:]); err == nil {
			file, line = e.Pos[:i], l
		}
	}
	return e.Pkg + "." + e.Func, file, line, true
}

// unnamed explains why the function id of a report at pos has no name.
func (n *names) unnamed(pos string, id uint32) error {
	n.load()
	switch {
	case n.err != nil && errors.Is(n.err, fs.ErrNotExist):
		return fmt.Errorf("%s: function id %d has no name: the report comes from a binary that did not know its functions' names (another build?) and there is no map; give the method mapping file of the build that made it with -map FILE", pos, id)
	case n.err != nil:
		return fmt.Errorf("%s: function id %d has no name in the report, and the map cannot be read: %w", pos, id, n.err)
	}
	return fmt.Errorf("%s: function id %d has no name in the report nor in the map %s: the report comes from another build; give that build's method mapping file with -map FILE", pos, id, n.path)
}

// node is one call-tree node of a report, its function resolved.
type node struct {
	Depth int `json:"depth"`
	// Name is what the node is shown as: the function, "[reason]" for a
	// wait, "go function" for a goroutine.
	Name string `json:"name"`
	// Func is the function (of a wait: where it blocked, when known).
	Func string `json:"func,omitempty"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Cost is the node's wall time in ms, Self the part not spent in its
	// children (never negative).
	Cost  int64 `json:"cost"`
	Self  int64 `json:"self"`
	Count int   `json:"count"`
	// Samples is how many stack samples a sampled node stands for.
	Samples int `json:"samples,omitempty"`
	// Alloc is what the allocation samples under the node stand for
	// (Frame.AllocBytes), AllocSelf the part not under its children.
	Alloc     uint64 `json:"alloc,omitempty"`
	AllocSelf uint64 `json:"allocSelf,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// For is what a wait waited for, when the report says (Frame.For).
	For string `json:"for,omitempty"`
	// WokenBy names the goroutine that ended a wait, when another did
	// (Frame.WokenBy): "(*pool).work pool.go:31", or "goroutine N" when
	// it was in no user code.
	WokenBy string `json:"wokenBy,omitempty"`
	// Handoff marks a goroutine node as a worker handed work by the
	// dispatch (Frame.Handoff).
	Handoff bool `json:"handoff,omitempty"`
	// Bound is the name of the innermost boundary the node is in, or
	// is ("db SELECT …"; see tracer.Bound), "" outside any.
	Bound string `json:"bound,omitempty"`
	ID    uint32 `json:"id"`
	// Parent is the index of the parent node, -1 for a root.
	Parent int `json:"parent"`
}

// pos returns "file:line", or "" when the file is unknown.
func (nd *node) pos() string {
	if nd.File == "" {
		return ""
	}
	return nd.File + ":" + strconv.Itoa(nd.Line)
}

// resolveTree turns a report's frames (in pre-order with depths) into
// nodes with names, parents, depths in the tree and self times. In strict
// mode a frame that cannot be named is an error (see names.unnamed);
// otherwise it is shown as "id N".
func resolveTree(pos string, frames []reportFrame, n *names, strict bool) ([]node, error) {
	nodes := make([]node, len(frames))
	var stack []int // open ancestors
	for i := range frames {
		f := &frames[i]
		nd := &nodes[i]
		*nd = node{Cost: max(f.Cost, 0), Count: max(f.Count, 0), Samples: f.Samples, Alloc: f.AllocBytes, Kind: f.Kind, Reason: f.Reason, For: f.For, ID: f.ID, Parent: -1}
		// The claimed depths place a frame under the last shallower
		// one; the node's depth is its place in the tree, one more
		// than its parent's, whatever its frame claims: what is drawn
		// for a report is bounded by the frames it holds.
		for len(stack) > 0 && frames[stack[len(stack)-1]].Depth >= f.Depth {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			nd.Parent = stack[len(stack)-1]
			nd.Depth = nodes[nd.Parent].Depth + 1
		}
		stack = append(stack, i)
		if isBoundKind(f.Kind) {
			nd.Name, nd.Func, nd.Bound = f.Func, f.Func, f.Func
			continue
		}
		switch f.Kind {
		case frameKindWait:
			nd.Func, nd.File, nd.Line = f.Func, f.File, f.Line
			reason := f.Reason
			if reason == "" {
				reason = "wait"
			}
			nd.Name = "[" + reason + "]"
			nd.WokenBy = wakerName(f.WokenBy)
			continue
		case frameKindSampled:
			nd.Func, nd.File, nd.Line, nd.Name = f.Func, f.File, f.Line, f.Func
			continue
		case "", frameKindGoroutine, frameKindInline:
		default:
			return nil, fmt.Errorf("%s: frame of unknown kind %q (a report from a newer version? update matrixexec)", pos, f.Kind)
		}
		name, file, line, ok := n.function(f)
		if !ok {
			if strict {
				return nil, n.unnamed(pos, f.ID)
			}
			nd.Name = fmt.Sprintf("id %d", f.ID)
			continue
		}
		nd.Func, nd.File, nd.Line, nd.Name = name, file, line, name
		if f.Kind == frameKindGoroutine {
			nd.Name = "go " + name
			if f.Handoff {
				nd.Name, nd.Handoff = "handed to "+name, true
			}
		}
	}
	for i := range nodes {
		if p := nodes[i].Parent; nodes[i].Bound == "" && p >= 0 && nodes[i].Kind != frameKindGoroutine {
			nodes[i].Bound = nodes[p].Bound // parents come first
		}
	}
	selfTimes(nodes)
	return nodes, nil
}

// wakerName names the goroutine that woke a wait: its function, short,
// and the base name of its file with the line; "goroutine N" when it was
// in no user code; "" for none.
func wakerName(w *tracer.Waker) string {
	switch {
	case w == nil:
		return ""
	case w.Func == "":
		return "goroutine " + strconv.FormatUint(w.Goroutine, 10)
	case w.File == "":
		return tracer.ShortName(w.Func)
	}
	return tracer.ShortName(w.Func) + " " + filepath.Base(w.File) + ":" + strconv.Itoa(w.Line)
}

// isBoundKind reports whether a frame kind is a boundary's.
func isBoundKind(kind string) bool {
	switch kind {
	case frameKindDB, frameKindHTTP, frameKindRPC, frameKindPublish:
		return true
	}
	return false
}

// selfTimes sets each node's Self: its cost minus its children's, never
// negative. A goroutine the node started ran beside it: its time is not
// the node's.
func selfTimes(nodes []node) {
	for i := range nodes {
		nodes[i].Self = nodes[i].Cost
		nodes[i].AllocSelf = nodes[i].Alloc
	}
	for i := range nodes {
		p := nodes[i].Parent
		if p >= 0 && nodes[i].Kind != frameKindGoroutine {
			// Costs are not negative: once at 0, Self stays there,
			// and the subtraction cannot overflow.
			nodes[p].Self = max(nodes[p].Self-nodes[i].Cost, 0)
		}
		if p >= 0 {
			// Allocations add up, a goroutine's too.
			nodes[p].AllocSelf -= min(nodes[p].AllocSelf, nodes[i].Alloc)
		}
	}
}

// printTree writes nodes as indented lines "cost  name ×count  file:line".
func printTree(w io.Writer, indent string, nodes []node) {
	for i := range nodes {
		nd := &nodes[i]
		count := ""
		if nd.Count > 1 {
			count = fmt.Sprintf(" ×%d", nd.Count)
		}
		pos := nd.pos()
		if pos != "" {
			pos = "  " + pos
		}
		name := nd.Name
		switch {
		case nd.Kind == frameKindInline:
			name += " (inline)"
		case nd.Kind == frameKindSampled:
			name += fmt.Sprintf(" (sampled ×%d)", nd.Samples)
		case nd.Kind == frameKindGoroutine && nd.Reason == "outlived":
			name += " (outlives the call)"
		case nd.Kind == frameKindGoroutine && nd.Reason != "":
			name += " (" + nd.Reason + " at the report)"
		case nd.Kind == frameKindWait && nd.For != "":
			name += " for " + nd.For
		}
		if nd.WokenBy != "" {
			name += " woken by " + nd.WokenBy
		}
		fmt.Fprintf(w, "%s%6dms  %s%s%s%s\n", indent, nd.Cost, strings.Repeat("  ", nd.Depth), name, count, pos)
	}
}

// writeOutput writes a file through write, whole or not at all: into a
// temporary file in the same directory, renamed over path at the end. "-"
// is stdout.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) (err error) {
	if path == "-" {
		return write(stdout)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
