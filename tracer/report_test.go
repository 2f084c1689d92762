package tracer

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestReportContent: the content of a typed report has its fields under
// their json names with their Go types; a field tagged omitempty is left out
// when zero, a nil pointer or group is left out, and a set pointer is stored
// as its value.
func TestReportContent(t *testing.T) {
	cpu := int64(0)
	r := &EvilReport{
		Detail:   DetailNormal,
		Scene:    "GET /x",
		Cost:     120,
		Dispatch: &DispatchFields{Name: "http", Kind: "http", ThreadID: 7, Goroutine: 7, ID: 3},
		Tree:     &TreeFields{Stack: "0,1,1,120\n", StackKey: "1|", Recorded: true},
		CPU:      &cpu,
	}
	is := newReportIssue(TagEvilMethod, "1|", time.Time{}, r)
	if is.Report != r {
		t.Errorf("Report = %v, want the report", is.Report)
	}
	want := map[string]any{
		"detail": DetailNormal, "scene": "GET /x", "cost": int64(120),
		"name": "http", "kind": "http", "threadId": uint64(7), "goroutine": uint64(7), "dispatchId": uint64(3),
		"stack": "0,1,1,120\n", "stackKey": "1|", "frames": []Frame(nil), "recorded": true,
		"cpu": int64(0),
	}
	for k, v := range want {
		if got, ok := is.Content[k]; !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("content[%q] = %#v (present %v), want %#v", k, got, ok, v)
		}
	}
	var extra []string
	for k := range is.Content {
		if _, ok := want[k]; !ok && !slices.Contains(IssueKeys(), k) {
			extra = append(extra, k)
		}
	}
	if slices.Sort(extra); len(extra) > 0 {
		t.Errorf("content has %v, which the report leaves out", extra)
	}

	// A warm start-up's phases are zero, and present; it has no process
	// fields and no note.
	c := contentOf(&StartupReport{StartupDuration: 30, IsWarmStartUp: true, Scene: "s"})
	if v, ok := c["application_create"]; !ok || v != int64(0) {
		t.Errorf("application_create = %#v, %v", v, ok)
	}
	for _, k := range []string{"process_start_source", "process_start", "main_entered", "note"} {
		if _, ok := c[k]; ok {
			t.Errorf("warm start-up report has %q", k)
		}
	}
}

// TestAddNote: a note explaining a missing tree goes before the report's
// own note.
func TestAddNote(t *testing.T) {
	r := &EvilReport{}
	r.addNote("b")
	r.addNote("a")
	if r.Note != "a; b" {
		t.Errorf("note %q, want %q", r.Note, "a; b")
	}
}
