// Command modproxy writes a module directory as one version of the module
// into a module proxy laid out in a directory (the GOPROXY protocol's
// files: @v/list, .info, .mod, .zip), for GOPROXY=file://DIR. The
// benchmarks build services that require this repository's module at that
// version, as a user's module does after "go get -tool": the module then
// comes from the module cache, whose directories never change, rather than
// from a directory a replace names, whose files matrixexec must stat on
// every build to know whether the tracer changed.
//
// Usage:
//
//	modproxy -out DIR [-version v0.0.0-…] MODULE_DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy's directory")
	version := flag.String("version", "", "the version to write (default: a pseudo-version of now)")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR [-version V] MODULE_DIR")
		os.Exit(2)
	}
	v, err := write(*out, flag.Arg(0), *version, time.Now().UTC())
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	fmt.Println(v)
}

// write writes the module in dir to the proxy out at version (a
// pseudo-version of now when empty) and returns the version.
func write(out, dir, version string, now time.Time) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return "", fmt.Errorf("%s/go.mod names no module", dir)
	}
	if version == "" {
		version = module.PseudoVersion("v0", "", now, "000000000000")
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return "", err
	}
	esc, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, esc, "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	z, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return "", err
	}
	if err := zip.CreateFromDir(z, mv, dir); err != nil {
		z.Close()
		return "", fmt.Errorf("zip %s: %w", dir, err)
	}
	if err := z.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), gomod, 0o644); err != nil {
		return "", err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, now})
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return "", err
	}
	list := filepath.Join(vdir, "list")
	old, _ := os.ReadFile(list)
	if !strings.Contains("\n"+string(old), "\n"+version+"\n") {
		if err := os.WriteFile(list, append(old, version+"\n"...), 0o644); err != nil {
			return "", err
		}
	}
	return version, nil
}
