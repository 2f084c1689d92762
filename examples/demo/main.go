// Command demo shows Matrix for Go end to end in under a minute: it builds
// matrixexec, builds the example shop service with -toolexec=matrixexec,
// starts it with MATRIX_REPORT set, sends a fast and a slow request, and
// prints the slow request's report as a call tree with names.
//
// Run it from the repository root:
//
//	go run ./examples/demo
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "matrix-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	matrixexec := filepath.Join(dir, "matrixexec")
	shop := filepath.Join(dir, "shop")
	report := filepath.Join(dir, "report.jsonl")

	step("building matrixexec (and matrixreport beside it, which runs matrixexec show)")
	if err := goCmd("build", "-o", dir+string(filepath.Separator), "./cmd/matrixexec/..."); err != nil {
		return err
	}
	step("building examples/shop with -toolexec=matrixexec (the first build instruments the standard library's runtime too: ~20 s)")
	if err := goCmd("build", "-toolexec="+matrixexec, "-o", shop, "./examples/shop"); err != nil {
		return err
	}

	step("starting the shop with MATRIX_REPORT=" + report)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, shop, "-addr", "127.0.0.1:0")
	// The receipt's signature hashes long enough that the samples of the
	// running goroutine name the standard library's code it runs in.
	srv.Env = append(os.Environ(), "MATRIX_REPORT="+report, "SHOP_SIGN_ROUNDS=600000")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the shop's address: %w", err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "shop listening on "))

	for _, path := range []string{"/health", "/orders/42"} {
		start := time.Now()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		step(fmt.Sprintf("GET %-10s %s in %v: %s", path, resp.Status, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(body))))
	}

	// Reports are written off the request path: wait for the slow one.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile(report); strings.Contains(string(data), "Trace_EvilMethod") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no report in %s after 10s", report)
		}
		time.Sleep(50 * time.Millisecond)
	}
	step("the reports (" + matrixexec + " show " + report + "):")
	show := exec.Command(matrixexec, "show", report)
	show.Stdout, show.Stderr = os.Stdout, os.Stderr
	return show.Run()
}

func step(msg string) { fmt.Println("==>", msg) }

func goCmd(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
