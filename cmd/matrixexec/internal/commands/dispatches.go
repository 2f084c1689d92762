package commands

import (
	"cmp"
	"slices"

	"github.com/matrixgo/matrix/tracer"
)

// One dispatch can be reported up to three times: LAG and ANR while it
// still runs (the watchdog), and its final report, a slow call, once it
// ends. top, html and pprof make them one incident: the final report,
// which carries the LAG and ANR reports as its history; for a dispatch
// whose final report is not in the input (the program ended first, or the
// slow-call tracer was off), its last LAG or ANR report, with the earlier
// one as its history. Reports tell their dispatch by process, pid and
// dispatch number (report.dispatchKey); reports without one (older
// versions) are each an incident of their own.

// watchEvent is a LAG or ANR report in the history of an incident.
type watchEvent struct {
	Detail string `json:"detail"`
	// CostMs is how long the dispatch had run at the report.
	CostMs int64  `json:"costMs"`
	Time   string `json:"time,omitempty"`
	// Source is the report's file:line.
	Source string `json:"source"`
	// ThreadStack is the dispatching goroutine's stack at the report.
	ThreadStack string `json:"threadStack,omitempty"`
}

// heldReport is a LAG or ANR report waiting for its dispatch's final one.
type heldReport struct {
	key string
	pos string
	r   *report
}

// merger makes the reports of one dispatch one incident as they stream
// by: it holds back a dispatch's LAG and ANR reports until its final
// report comes, keeping only their history (a few fields each) once it
// has.
type merger struct {
	finals  map[string]bool
	held    map[string]heldReport
	history map[string][]watchEvent
}

func newMerger() *merger {
	return &merger{finals: map[string]bool{}, held: map[string]heldReport{}, history: map[string][]watchEvent{}}
}

// take takes one incident report and reports whether it is an incident to
// count now: a report without a dispatch number, or a final report. A LAG
// or ANR report is kept in its dispatch's history instead, and held back
// (rest returns it) until a final report of the dispatch comes.
func (m *merger) take(pos string, r *report) bool {
	key, ok := r.dispatchKey()
	if !ok {
		return true
	}
	if !r.watchdog() {
		m.finals[key] = true
		delete(m.held, key)
		return true
	}
	m.history[key] = append(m.history[key], watchEvent{Detail: r.Detail, CostMs: r.Cost, Time: r.Time, Source: pos, ThreadStack: r.ThreadStack})
	if m.finals[key] {
		return false
	}
	if h, ok := m.held[key]; !ok || later(r, h.r) {
		m.held[key] = heldReport{key, pos, r}
	}
	return false
}

// later reports whether watchdog report a was made after b of the same
// dispatch: it had run longer, or it is the ANR of the same tick.
func later(a, b *report) bool {
	if a.Cost != b.Cost {
		return a.Cost > b.Cost
	}
	return a.Detail == tracer.DetailANR && b.Detail != tracer.DetailANR
}

// rest returns the held reports of the dispatches without a final report,
// in the order of their keys: each is an incident.
func (m *merger) rest() []heldReport {
	out := make([]heldReport, 0, len(m.held))
	for _, h := range m.held {
		out = append(out, h)
	}
	slices.SortFunc(out, func(x, y heldReport) int { return cmp.Compare(x.key, y.key) })
	clear(m.held)
	return out
}

// historyOf returns the LAG and ANR reports of an incident's dispatch
// other than the incident's own report (at pos), earliest first.
func (m *merger) historyOf(r *report, pos string) []watchEvent {
	key, ok := r.dispatchKey()
	if !ok {
		return nil
	}
	var out []watchEvent
	for _, e := range m.history[key] {
		if e.Source != pos {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(x, y watchEvent) int { return cmp.Compare(x.CostMs, y.CostMs) })
	return out
}
