package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExactUnderStarvation runs an instrumented program at nice 19 beside
// three busy processes at nice 0, on a machine of two cores or more, so
// that the program, and the recorder's clock thread with it, get a sliver
// of the CPU. The boundaries of waits are stamped with the system clock,
// not the clock thread's: the call holding a 100 ms sleep or a 200 ms mutex
// wait reads no less than the program measured around the wait inside it
// and no more than it measured outside the call (each within 5 % and the
// clock's 1 ms tick; the thread may be descheduled between the wait's end
// and the call's return), and over 200 dispatches of nested calls no node
// is shorter than its children, and no call is missing.
func TestExactUnderStarvation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a program starved of CPU for seconds; skipped in -short mode")
	}
	if _, err := exec.LookPath("nice"); err != nil {
		t.Skip("needs nice(1)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "starved"+exeSuffix())
	cmd := exec.Command("go", "build", "-toolexec="+filepath.Join(binDir, "matrixexec"), "-o", bin, "./integration/testdata/starved")
	cmd.Dir = moduleRootDir(t)
	cmd.Env = append(os.Environ(), "MATRIX_MAP="+sharedMap, "MATRIX_STRICT=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The busy processes: bounded in time whatever happens to the test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := 0; i < 3; i++ {
		busy := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		defer busy.Wait()
	}
	defer cancel()

	reportFile := filepath.Join(dir, "report.jsonl")
	run := exec.CommandContext(ctx, "nice", "-n", "19", bin)
	run.Env = append(os.Environ(), "MATRIX_REPORT="+reportFile, "MATRIX_EVIL_THRESHOLD_MS=1", "MATRIX_EVIL_SCENE_REPORTS_PER_MIN=1000000")
	var stdout bytes.Buffer
	run.Stdout, run.Stderr = &stdout, os.Stderr
	if err := run.Run(); err != nil {
		t.Fatalf("starved program: %v\n%s", err, stdout.String())
	}
	cancel()

	// What the program measured, by dispatch id.
	type measure struct {
		kind         string
		inner, outer int64 // µs
	}
	measured := map[int64]measure{}
	sc := bufio.NewScanner(&stdout)
	done := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "done" {
			done = true
			continue
		}
		if len(f) != 4 {
			t.Fatalf("program printed %q", sc.Text())
		}
		id, err1 := strconv.ParseInt(f[1], 10, 64)
		inner, err2 := strconv.ParseInt(f[2], 10, 64)
		outer, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || outer < inner {
			t.Fatalf("program printed %q", sc.Text())
		}
		measured[id] = measure{f[0], inner, outer}
	}
	if !done || len(measured) != 6 {
		t.Fatalf("program output incomplete:\n%s", stdout.String())
	}

	type starvedReport struct {
		report
		DispatchID int64 `json:"dispatchId"`
	}
	reps, raw := readJSONLines[starvedReport](t, reportFile)
	trees := 0
	for _, r := range reps {
		if r.Tag != "Trace_EvilMethod" || r.Detail != "NORMAL" {
			continue
		}
		checkNesting(t, r.Scene, r.Frames)
		switch r.Scene {
		case "tree":
			trees++
			for _, fn := range []string{starvedPkg + ".outer", starvedPkg + ".middle", starvedPkg + ".leaf"} {
				if _, ok := callFrame(r.Frames, fn); !ok {
					t.Errorf("dispatch %d: no frame for %s in\n%s", r.DispatchID, fn, r.Stack)
				}
			}
		case "sleep", "mutex":
			m, ok := measured[r.DispatchID]
			if !ok || m.kind != r.Scene {
				t.Errorf("report of dispatch %d (%s) not among the measured ones %v", r.DispatchID, r.Scene, measured)
				continue
			}
			fn := starvedPkg + map[string]string{"sleep": ".nap", "mutex": ".lock"}[r.Scene]
			f, ok := callFrame(r.Frames, fn)
			if !ok {
				t.Errorf("dispatch %d: no frame for %s in\n%s", r.DispatchID, fn, r.Stack)
				continue
			}
			// The recorder's times are whole milliseconds of a 1 ms tick.
			lo, hi := float64(m.inner)/1000, float64(m.outer)/1000
			if c := float64(f.Cost); c < lo-(lo*0.05+2) || c > hi+(hi*0.05+2) {
				t.Errorf("%s: %s reads %d ms, the program measured %.1f ms inside it and %.1f ms around it (want between, within 5%%)", r.Scene, fn, f.Cost, lo, hi)
			}
			delete(measured, r.DispatchID)
		}
	}
	if trees != 200 {
		t.Errorf("%d reports of the 200 tree dispatches", trees)
	}
	if len(measured) != 0 {
		t.Errorf("no report for the measured dispatches %v", measured)
	}
	if t.Failed() {
		os.WriteFile(filepath.Join(os.TempDir(), "starved-reports.jsonl"), []byte(raw), 0o644)
		t.Logf("the reports are in %s", filepath.Join(os.TempDir(), "starved-reports.jsonl"))
	}
}

// checkNesting fails t if a node of frames (pre-order, with depths) costs
// less than its children together.
func checkNesting(t *testing.T, name string, frames []frame) {
	t.Helper()
	for i, f := range frames {
		var sum int64
		for j := i + 1; j < len(frames) && frames[j].Depth > f.Depth; j++ {
			if frames[j].Depth == f.Depth+1 && frames[j].Kind != "goroutine" {
				sum += frames[j].Cost
			}
		}
		if sum > f.Cost {
			t.Errorf("%s: %s costs %d ms, less than its children's %d ms:\n%s", name, f.Func, f.Cost, sum, fmt.Sprint(frames))
		}
	}
}

// starvedPkg is the package path of testdata/starved, which names its
// functions in reports.
const starvedPkg = "github.com/matrixgo/matrix/integration/testdata/starved"

// callFrame returns the first call node of function fn in frames.
func callFrame(frames []frame, fn string) (frame, bool) {
	for _, f := range frames {
		if f.Func == fn && f.Kind == "" {
			return f, true
		}
	}
	return frame{}, false
}
