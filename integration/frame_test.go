package integration

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// frameScript is what examples/frames runs: normal frames with no work to
// wait for, and one stall per drop level. The costs are in frame intervals
// (16.667 ms at 60 Hz); a frame that takes C intervals drops ⌊C − 1⌋
// frames. Timing noise only ever lengthens a frame (it cannot take less
// than its work), so each stall sits half an interval above the lower
// bound of its level and has the rest of the level as headroom:
//
//	4.5   3 dropped  NORMAL [3,9)   ≥ 75 ms, leaves the level at 166.7 ms (+92 ms)
//	10.5  9 dropped  MIDDLE [9,24)  ≥ 175 ms, leaves it at 416.7 ms (+242 ms)
//	25.5  24 dropped HIGH [24,42)   ≥ 425 ms, leaves it at 716.7 ms (+292 ms)
//	45    44 dropped FROZEN [42,∞)  ≥ 750 ms
//
// A normal frame does not block inside the frame (the loop waits for its
// ticker between frames), so it would have to be descheduled for 67 ms to
// leave BEST [0,3).
const frameScript = "30x0 4.5 30x0 10.5 30x0 25.5 30x0 45 30x0"

const framesPkg = "github.com/matrixgo/matrix/examples/frames"

// fpsLine is one report line of examples/frames: Trace_FPS fields, and
// those of the slow-call report of the frozen frame.
type fpsLine struct {
	Tag         string          `json:"tag"`
	Scene       string          `json:"scene"`
	DropLevel   map[string]int  `json:"dropLevel"`
	DropSum     map[string]int  `json:"dropSum"`
	FPS         float64         `json:"fps"`
	RefreshRate float64         `json:"refreshRate"`
	Interval    float64         `json:"interval"`
	FrameTime   int64           `json:"frameTime"`
	Dropped     int             `json:"dropped"`
	RawFrames   json.RawMessage `json:"frames"` // a count in Trace_FPS, the call tree in Trace_EvilMethod
	Kind        string          `json:"kind"`
	Cost        int64           `json:"cost"`
	StackKey    string          `json:"stackKey"`
	Stack       string          `json:"stack"`
}

// TestFrameDropLevels (issue 4, done-when 3): a 60 Hz frame loop with
// scripted stalls produces Trace_FPS reports whose drop-level counts match
// the stalls exactly, built with matrixexec (where the frozen frame, a
// dispatch over the slow-call threshold, also gets its call tree) and
// without (a frame tracer started by hand; frames have no call trees).
func TestFrameDropLevels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a 60 Hz frame loop for about 4 s per build; skipped in -short mode")
	}
	for _, tc := range []struct {
		name   string
		linked bool
	}{{"matrixexec", true}, {"plain", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "frames")
			args := []string{"build"}
			if tc.linked {
				args = append(args, "-toolexec="+filepath.Join(binDir, "matrixexec"))
			}
			args = append(args, "-o", bin, "./examples/frames")
			build := exec.Command("go", args...)
			build.Dir = moduleRootDir(t)
			build.Env = append(os.Environ(), "MATRIX_MAP="+sharedMap)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}

			report := filepath.Join(dir, "report.jsonl")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run := exec.CommandContext(ctx, bin, "-script", frameScript, "-hz", "60", "-scene", "game")
			run.Env = append(os.Environ(), "MATRIX_REPORT="+report, "MATRIX_FPS_SLICE_MS=1000", "MATRIX_EVIL_THRESHOLD_MS=720")
			start := time.Now()
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("frames: %v\n%s", err, out)
			}
			t.Logf("ran in %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
			checkFrameReports(t, readFPSLines(t, report), tc.linked)
		})
	}
}

func readFPSLines(t *testing.T, path string) []fpsLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []fpsLine
	for _, s := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l fpsLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("report line %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	return lines
}

func checkFrameReports(t *testing.T, lines []fpsLine, linked bool) {
	t.Helper()
	wantLevel := map[string]int{"DROPPED_BEST": 150, "DROPPED_NORMAL": 1, "DROPPED_MIDDLE": 1, "DROPPED_HIGH": 1, "DROPPED_FROZEN": 1}
	minSum := map[string]int{"DROPPED_BEST": 0, "DROPPED_NORMAL": 3, "DROPPED_MIDDLE": 9, "DROPPED_HIGH": 24, "DROPPED_FROZEN": 44}
	level, sum := map[string]int{}, map[string]int{}
	var fps, evil []fpsLine
	frames := 0
	for _, l := range lines {
		switch l.Tag {
		case "Trace_FPS":
			fps = append(fps, l)
			for k, v := range l.DropLevel {
				level[k] += v
			}
			for k, v := range l.DropSum {
				sum[k] += v
			}
			var n int
			if err := json.Unmarshal(l.RawFrames, &n); err != nil {
				t.Fatalf("Trace_FPS frames %s: %v", l.RawFrames, err)
			}
			frames += n
			if l.Scene != "game" || l.Interval != 16.667 || l.RefreshRate != 60 {
				t.Errorf("report scene %q interval %v refreshRate %v, want game 16.667 60", l.Scene, l.Interval, l.RefreshRate)
			}
			// fps = frames × 1 s / frame time (frameTime is truncated to ms).
			if want := float64(n) * 1000 / float64(l.FrameTime); l.FPS > 60 || math.Abs(l.FPS-want) > 0.01*want {
				t.Errorf("fps %v for %d frames in %d ms, want %.2f", l.FPS, n, l.FrameTime, want)
			}
		case "Trace_EvilMethod":
			evil = append(evil, l)
		default:
			t.Errorf("unexpected report %q", l.Tag)
		}
	}
	// 234 slots of 16.667 ms: three full slices of 1 s, the rest at exit.
	if len(fps) < 2 {
		t.Fatalf("%d Trace_FPS reports, want one per second of frame time", len(fps))
	}
	for i, l := range fps[:len(fps)-1] {
		if l.FrameTime < 1000 {
			t.Errorf("report %d covers %d ms of frame time, less than the 1000 ms slice", i, l.FrameTime)
		}
	}
	if frames != 154 {
		t.Errorf("reports count %d frames, the script ran 154", frames)
	}
	for k, want := range wantLevel {
		if level[k] != want {
			t.Errorf("dropLevel %s = %d, want %d (all: %v)", k, level[k], want, level)
		}
		if sum[k] < minSum[k] {
			t.Errorf("dropSum %s = %d, want at least %d (all: %v)", k, sum[k], minSum[k], sum)
		}
	}

	if !linked {
		if len(evil) != 0 {
			t.Errorf("a plain build made %d slow-call reports", len(evil))
		}
		return
	}
	// The frozen frame is a dispatch over the threshold: its call tree
	// names the function it spent its time in.
	if len(evil) != 1 {
		t.Fatalf("%d Trace_EvilMethod reports, want 1 (the frozen frame)", len(evil))
	}
	e := evil[0]
	var tree []frame
	if err := json.Unmarshal(e.RawFrames, &tree); err != nil {
		t.Fatalf("slow-call frames %s: %v", e.RawFrames, err)
	}
	if e.Kind != "frame" || e.Scene != "game" || e.Cost < 750 {
		t.Errorf("slow frame: kind %q scene %q cost %d, want frame, game, >= 750", e.Kind, e.Scene, e.Cost)
	}
	found := false
	for _, f := range tree {
		if f.Func == framesPkg+".decodeTexture" && f.Kind == "" {
			found = true
			// It sleeps: the key names it and the sleep.
			if f.Cost < 740 || e.StackKey != framesPkg+".decodeTexture[sleep]|" {
				t.Errorf("decodeTexture: cost %d ms, stackKey %q (id %d)", f.Cost, e.StackKey, f.ID)
			}
		}
	}
	if !found {
		t.Errorf("the slow frame's call tree does not name decodeTexture:\n%s", e.Stack)
	}
}
