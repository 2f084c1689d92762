// Command rsswrap is a -toolexec wrapper that measures the peak memory of
// the build step it wraps, for group 4 of BENCHMARKS.md:
//
//	go build -toolexec="rsswrap LOG" ./...                 (plain build)
//	go build -toolexec="rsswrap LOG matrixexec [flags]" ./...  (instrumented)
//
// It runs the rest of its command line as a child and appends one line to
// LOG when the child exits:
//
//	<tool> <package> self=<kB> tree=<kB> ms=<wall ms>
//
// tree is the peak resident set of the child and of everything it waited
// for (wait4's ru_maxrss: the larger of the child and the compiler or
// linker matrixexec runs); self is the child's own high-water mark
// (VmHWM), sampled from /proc every 2 ms while it runs, so that
// matrixexec's own footprint shows apart from the compiler's. A child
// that lives less than a sample is reported with self=0.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: rsswrap LOG command [args...]")
		os.Exit(2)
	}
	logPath, args := os.Args[1], os.Args[2:]
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signal.Ignore(os.Interrupt) // the child gets it from the terminal too
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rsswrap:", err)
		os.Exit(1)
	}
	done := make(chan struct{})
	hwm := make(chan int64)
	go func() {
		var peak int64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := vmHWM(cmd.Process.Pid); v > peak {
				peak = v
			}
			select {
			case <-done:
				hwm <- peak
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	self := <-hwm
	var tree int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		tree = ru.Maxrss
	}
	// -V=full and other queries are not build steps.
	if !contains(args, "-V=full") && !contains(args, "-V") && !contains(args, "-flags") {
		line := fmt.Sprintf("%s %s self=%d tree=%d ms=%d\n", toolName(args), pkgName(), self, tree, time.Since(start).Milliseconds())
		if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			f.WriteString(line) // one write: lines of concurrent steps do not mix
			f.Close()
		}
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "rsswrap:", err)
		os.Exit(1)
	}
}

func contains(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}

// toolName is the base name of the Go tool being run: the first argument
// under $GOROOT/pkg/tool (matrixexec puts its own flags before it).
func toolName(args []string) string {
	for _, a := range args {
		if strings.Contains(a, string(filepath.Separator)+"pkg"+string(filepath.Separator)+"tool"+string(filepath.Separator)) {
			return filepath.Base(a)
		}
	}
	return filepath.Base(args[0])
}

func pkgName() string {
	p := os.Getenv("TOOLEXEC_IMPORTPATH")
	if p == "" {
		return "-"
	}
	return strings.ReplaceAll(p, " ", "_")
}

func vmHWM(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
