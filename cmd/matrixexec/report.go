package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/matrixgo/matrix/cmd/matrixexec/internal/reportcmd"
	"github.com/matrixgo/matrix/internal/modversion"
	"github.com/matrixgo/matrix/internal/self"
)

// forward runs a report command in matrixreport (see package reportcmd),
// with the id map this matrixexec's flags and environment name and this
// matrixexec's version, and ends as it ended.
func forward(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	tool, err := findReportTool(os.Executable, goToolPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(tool, args...)
	cmd.Env = append(os.Environ(),
		reportcmd.EnvMap+"="+cfg.mapFile(),
		reportcmd.EnvVersion+"="+modversion.Running(self.Module))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return exitError(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", reportcmd.Tool, err)
	}
	return nil
}

// findReportTool returns the path of matrixreport: the one beside this
// executable (go install of both, or a build into one directory), else the
// tool of that name of the module in the current directory (go get -tool;
// go tool keeps each tool's executable in a directory of its own).
func findReportTool(self func() (string, error), goTool func(name string) (string, error)) (string, error) {
	name := reportcmd.Tool
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	var looked []string
	if exe, err := self(); err == nil {
		path := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			return path, nil
		}
		looked = append(looked, filepath.Dir(exe))
	}
	path, err := goTool(reportcmd.Tool)
	if err == nil {
		return path, nil
	}
	looked = append(looked, "the tools of the current module")
	return "", fmt.Errorf("the report commands run in %s, which is not in %s (%v): install it beside matrixexec, with go get -tool %s (or go install github.com/matrixgo/matrix/cmd/matrixexec/...@VERSION, the version of matrixexec)",
		reportcmd.Tool, strings.Join(looked, " nor in "), err, reportcmd.Package)
}

// goToolPath returns the path of the executable of a tool of the module in
// the current directory (go tool -n NAME), building it if needed.
func goToolPath(name string) (string, error) {
	var stderr strings.Builder
	cmd := exec.Command("go", "tool", "-n", name)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	path := strings.TrimSpace(string(out))
	if path == "" {
		return "", fmt.Errorf("go tool -n %s printed no path", name)
	}
	return path, nil
}
