// Package gocmd is what matrixexec knows of the go command that runs it:
// its command line and directory (read from the OS where it can be), the
// build flags a nested build must share with it, its module root, and the
// go command of a tool's toolchain.
package gocmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// ToolGo returns the go command of the toolchain that owns a tool path
// ($GOROOT/pkg/tool/$GOOS_$GOARCH/compile).
func ToolGo(tool string) string {
	goroot := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(tool))))
	exe := "go"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	return filepath.Join(goroot, "bin", exe)
}

// buildFlagArity lists the go command's flags that change how packages are
// compiled, and whether they take a value. The nested build mirrors them so
// that the packages it shares with the parent build are the same archives.
var buildFlagArity = map[string]bool{
	"race": false, "msan": false, "asan": false, "trimpath": false, "linkshared": false, "cover": false,
	"covermode": true, "coverpkg": true, "tags": true, "gcflags": true, "asmflags": true,
	"buildmode": true, "pgo": true, "mod": true, "modfile": true, "overlay": true,
	"toolexec": true, "installsuffix": true, "compiler": true, "gccgoflags": true,
}

// otherValueFlags are the flags of go build, run and test, other than the
// build flags above, that take a value as the next argument.
var otherValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "pkgdir": true, "ldflags": true, "exec": true,
	"run": true, "skip": true, "bench": true, "benchtime": true, "count": true, "cpu": true,
	"parallel": true, "timeout": true, "shuffle": true, "fuzz": true, "fuzztime": true,
	"fuzzminimizetime": true, "list": true, "vet": true, "outputdir": true,
	"coverprofile": true, "cpuprofile": true, "memprofile": true, "memprofilerate": true,
	"blockprofile": true, "blockprofilerate": true, "mutexprofile": true,
	"mutexprofilefraction": true, "trace": true,
}

// BuildFlags returns the build flags of the go command that runs us,
// as far as the OS lets us see them (see goCommandOf). GOFLAGS and the
// GOOS/GOARCH/CGO environment reach the nested build by inheritance.
func BuildFlags() []string { return FilterBuildFlags(Line(), Dir()) }

// pathFlags are the build flags whose value is a file, relative to the go
// command's directory.
var pathFlags = map[string]bool{"pgo": true, "modfile": true, "overlay": true}

// FilterBuildFlags returns the build flags of a go command line as
// "-name" or "-name=value". Relative file values are made absolute against
// dir, the go command's directory, when it is known, so that they name the
// same files wherever the nested build runs.
func FilterBuildFlags(args []string, dir string) []string {
	if len(args) < 2 {
		return nil
	}
	var out []string
	// go test takes flags after its packages, up to -args; the other
	// commands stop at the first package or file, and what follows (go
	// run's program arguments) is not theirs.
	flagsAfterPackages := args[1] == "test"
	for i := 2; i < len(args); i++ { // args[0] = go, args[1] = build/test/run/...
		a := args[i]
		if a == "--" || a == "-args" || a == "--args" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			if flagsAfterPackages {
				continue
			}
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := buildFlagArity[name]
		if !known {
			if otherValueFlags[name] && !hasValue {
				i++ // its value is not a package
			}
			continue
		}
		switch {
		case takesValue && !hasValue && i+1 < len(args):
			i++
			value, hasValue = args[i], true
		case !takesValue:
			out = append(out, a)
			continue
		}
		if name == "pgo" && value == "auto" {
			// auto resolves against the main package, which the nested
			// build does not have: the compile flags carry the profile.
			continue
		}
		if pathFlags[name] && dir != "" && value != "" && !filepath.IsAbs(value) && !(name == "pgo" && value == "off") {
			value = filepath.Join(dir, value)
		}
		if hasValue {
			out = append(out, "-"+name+"="+value)
		}
	}
	return out
}

// A process is what goCommandOf needs to know of a process.
type process struct {
	ppid int      // its parent
	exe  string   // its program file, "" if unknown
	args []string // its command line
	cwd  string   // its working directory, "" if unknown
}

// goCommands are the go commands that build packages and so may run a
// -toolexec tool.
var goCommands = map[string]bool{"build": true, "install": true, "run": true, "test": true, "vet": true, "list": true, "get": true}

// goCommandOf returns the go command that runs this tool: the nearest
// ancestor process, from pid up, whose program is named go and whose first
// argument is a go command that builds. A wrapper in between (a -toolexec
// of "strace matrixexec", say) is passed over. It returns the zero process
// where the command line cannot be read (read reads Linux's /proc;
// elsewhere there is none), or when no ancestor is the go command.
func goCommandOf(read func(pid int) (process, error), pid int) process {
	for range 16 {
		if pid <= 1 {
			return process{}
		}
		p, err := read(pid)
		if err != nil {
			return process{}
		}
		name := p.exe
		if name == "" && len(p.args) > 0 {
			name = p.args[0]
		}
		if name = filepath.Base(name); (name == "go" || name == "go.exe") && len(p.args) > 1 && goCommands[p.args[1]] {
			return p
		}
		pid = p.ppid
	}
	return process{}
}

// readProcess reads a process's parent, program and command line from
// /proc.
func readProcess(pid int) (process, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	cmdline, err := os.ReadFile(dir + "/cmdline")
	if err != nil {
		return process{}, err
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return process{}, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return process{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return process{}, fmt.Errorf("%s/stat: unexpected format", dir)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return process{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	exe, _ := os.Readlink(dir + "/exe") // only for our own user's processes
	cwd, _ := os.Readlink(dir + "/cwd")
	return process{ppid: ppid, exe: exe, cwd: cwd, args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}, nil
}

// goCommand is the go command that runs matrixexec (see goCommandOf),
// read once per invocation.
var goCommand = sync.OnceValue(func() process { return goCommandOf(readProcess, os.Getppid()) })

// Line returns the command line of the go command that runs
// matrixexec, nil if unknown.
func Line() []string { return goCommand().args }

// Dir returns the working directory of the go command that runs
// matrixexec (after its -C), "" if unknown: its relative flag values are
// relative to it, and the nested build of MATRIX_ZEROCODE_MODULE runs
// elsewhere.
func Dir() string { return goCommand().cwd }

// PkgAtVersion reports whether a go command line installs or runs a
// package at a version (go install pkg@version, go run pkg@version).
func PkgAtVersion(args []string) bool {
	if len(args) < 3 || args[1] != "install" && args[1] != "run" {
		return false
	}
	for i := 2; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			return strings.Contains(a, "@") // the first package
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && (buildFlagArity[name] || otherValueFlags[name]) {
			i++ // its value
		}
	}
	return false
}

// ModuleRoot returns the directory whose .matrix folder holds the default
// map and blacklist: the workspace root when a go.work is in use, otherwise
// the main module's root, otherwise the current directory. cmd/go runs the
// tools in the directory where it was invoked.
func ModuleRoot(getenv func(string) string) string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	if w := getenv("GOWORK"); w != "" && w != "off" && filepath.IsAbs(w) {
		return filepath.Dir(w)
	}
	mod := ""
	for dir := wd; ; {
		if getenv("GOWORK") != "off" && exists(filepath.Join(dir, "go.work")) {
			return dir
		}
		if mod == "" && exists(filepath.Join(dir, "go.mod")) {
			mod = dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if mod != "" {
		return mod
	}
	return wd
}

// InModule reports whether the build has a main module or workspace: module
// mode is on and a go.mod or go.work is found from the current directory
// up (or GOWORK names one).
func InModule(getenv func(string) string) bool {
	if getenv("GO111MODULE") == "off" {
		return false
	}
	if w := getenv("GOWORK"); w != "" && w != "off" && filepath.IsAbs(w) {
		return true
	}
	root := ModuleRoot(getenv)
	return exists(filepath.Join(root, "go.mod")) || (getenv("GOWORK") != "off" && exists(filepath.Join(root, "go.work")))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
