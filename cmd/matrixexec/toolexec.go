package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/gocmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/statcache"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/toolcmd"
	"github.com/matrixgo/matrix/cmd/matrixexec/internal/zerocode"
	"github.com/matrixgo/matrix/internal/modversion"
	"github.com/matrixgo/matrix/internal/self"
)

// toolexec runs the tool cmd/go asked for, instrumenting compiles.
func toolexec(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	tool := strings.TrimSuffix(filepath.Base(args[0]), ".exe")
	if len(args) == 2 && args[1] == "-V=full" {
		switch tool {
		case "compile", "link":
			return toolVersion(cfg, args, stdout, stderr)
		}
		// The other tools (asm, cgo, vet) are run as they are: their
		// line is their own, and kept like the compiler's, so that a build
		// with nothing to compile starts none of them.
		line, err := cachedToolLine(args, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, line)
		return nil
	}
	switch tool {
	case "compile", "link":
		minor, err := unsupportedTarget(args[0])
		if err != nil {
			// A target or Go release the recorder does not support is
			// built as a plain build builds it: the program works, without
			// instrumentation, and each link says so. Strict, the runtime's
			// compile and each link fail instead.
			if tool == "link" {
				if cfg.strict {
					return err
				}
				fmt.Fprintf(stderr, "matrixexec: warning: this program is built without instrumentation: %v (MATRIX_STRICT=1 fails the build instead)\n", err)
			} else if cfg.strict && isRuntimeCompile(args) {
				return err
			}
			return runTool(args, stdin, stdout, stderr)
		}
		if tool == "link" {
			return link(cfg, args, stdin, stdout, stderr)
		}
		cfg.goMinor = minor
		return compile(cfg, args, stdin, stdout, stderr)
	}
	return runTool(args, stdin, stdout, stderr)
}

// isRuntimeCompile reports whether args compile package runtime.
func isRuntimeCompile(args []string) bool {
	c, err := toolcmd.ParseCompile(args)
	return err == nil && c.ImportPath() == "runtime"
}

// link adds the packages of the zero-code tracer to the link of a main
// package that imports it (see zerocode.PrepareLink), then runs the linker.
func link(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := toolcmd.ParseLink(args)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "matrixexec-link-")
	if err != nil {
		return fmt.Errorf("link: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := zerocode.PrepareLink(cfg.zeroCodeConfig(), c, tmp); err != nil {
		return err
	}
	argv, err := c.Argv(tmp)
	if err != nil {
		return err
	}
	return runTool(argv, stdin, stdout, stderr)
}

// runTool runs a tool with our stdio and returns its exit status as an
// exitError, so matrixexec exits exactly as the tool did.
func runTool(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitError(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", filepath.Base(args[0]), err)
	}
	return nil
}

// toolVersion answers -V=full. cmd/go uses the line as the tool id in every
// cache key, so we append our version and a hash of every input that
// changes our output: instrumented and plain builds then never share cache
// entries, and a configuration change rebuilds. The suffix is glued to the
// last field so the line stays parseable (for devel toolchains the last
// field must still start with "buildID=").
//
// It is also where a map that cannot be used fails the build: cmd/go asks
// for the tool ids before it runs anything.
func toolVersion(cfg *config, args []string, stdout, stderr io.Writer) error {
	line, err := cachedToolLine(args, stderr)
	if err != nil {
		return err
	}
	h, err := configHash(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s:matrixexec@%s;%s\n", line, version(), h)
	return nil
}

// cachedToolLine returns the tool's own -V=full line. Running the tool is
// the larger part of answering -V=full, which cmd/go asks on every build,
// even one with nothing to do: the line is kept in the user's cache
// directory, keyed by the tool's path, size and modification time, as
// cmd/go keys its own file hashes. Without a usable cache directory the
// tool is run every time.
func cachedToolLine(args []string, stderr io.Writer) (string, error) {
	cache, b := statcache.Lookup(statcache.NewKey("toolid").File(args[0]))
	if len(b) > 0 {
		return string(b), nil
	}
	var out bytes.Buffer
	if err := runTool(args, nil, &out, stderr); err != nil {
		return "", err
	}
	line := strings.TrimRight(out.String(), "\n")
	statcache.Write(cache, []byte(line))
	return line, nil
}

// ccQueryEnv lists the environment variables that can change a C
// compiler driver's answer to "-###": the language of its messages (cmd/go
// sets LC_ALL=C) and where it looks for the programs it would run.
var ccQueryEnv = []string{"LC_ALL", "LC_MESSAGES", "LANG", "GCC_EXEC_PREFIX", "COMPILER_PATH"}

// ccQuery answers cmd/go's question to the C compiler ("gcc -### -x c -c
// -"), which it asks through the -toolexec command on every build with a
// cgo package. The answer is the compiler's own, kept in the user's cache
// directory like the Go tools' lines: keyed by the compiler's resolved
// path, size and modification time, the arguments and ccQueryEnv. A
// compiler that fails, or that cannot be found, is run every time, so
// that its error reaches cmd/go.
func ccQuery(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	path, err := exec.LookPath(args[0])
	if err != nil {
		return runTool(args, stdin, stdout, stderr)
	}
	key := statcache.NewKey("ccquery").File(path).String(strings.Join(args[1:], "\x00"))
	for _, v := range ccQueryEnv {
		key.String(v + "=" + os.Getenv(v))
	}
	cache, b := statcache.Lookup(key)
	out, errOut, ok := splitCCAnswer(b)
	if !ok {
		var o, e bytes.Buffer
		if err := runTool(args, stdin, &o, &e); err != nil {
			stdout.Write(o.Bytes())
			stderr.Write(e.Bytes())
			return err
		}
		out, errOut = o.String(), e.String()
		statcache.Write(cache, joinCCAnswer(out, errOut))
	}
	if _, err := io.WriteString(stdout, out); err != nil {
		return err
	}
	_, err = io.WriteString(stderr, errOut)
	return err
}

// joinCCAnswer encodes a compiler's two outputs as one cache entry: the
// length of the standard output on the first line, then both.
func joinCCAnswer(stdout, stderr string) []byte {
	return []byte(strconv.Itoa(len(stdout)) + "\n" + stdout + stderr)
}

// splitCCAnswer decodes an entry of joinCCAnswer.
func splitCCAnswer(b []byte) (stdout, stderr string, ok bool) {
	head, rest, found := strings.Cut(string(b), "\n")
	n, err := strconv.Atoi(head)
	if !found || err != nil || n < 0 || n > len(rest) {
		return "", "", false
	}
	return rest[:n], rest[n:], true
}

// configHash hashes what the rewritten output depends on besides the
// package's own files: this executable (and so the rewriter and the
// runtime patch it embeds), the blacklist, the filter settings and the
// identity of the id map.
func configHash(cfg *config) (string, error) {
	h := sha256.New()
	exe, err := selfHash()
	if err != nil {
		return "", err
	}
	h.Write(exe)
	rules, err := loadRules(cfg)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "blacklist:%s\ninline:%d\nexits:%v\ncopy:%d\nbounded-hooked:%v\nzerocode:%s\notlp:%v\ndebug:%v\n", rules, cfg.inlineBudget, cfg.returnExits, cfg.copyBudget, cfg.hookBounded, cfg.zeroCode, cfg.otlp, cfg.debugHooks)

	id, err := cfg.mapIdentity()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "map:%s\n", id)
	if cfg.zeroCode != zerocode.Off && zerocode.MentionsSelf() {
		// Main packages are compiled against the zero-code tracer, which
		// cmd/go does not know they depend on: its sources are part of
		// the configuration.
		src, err := zerocode.TracerSourceHash(gocmd.ToolGo(cfg.toolPath))
		if err != nil {
			cfg.log.Warn("zero-code tracer sources not hashed", "error", err)
		}
		fmt.Fprintf(h, "tracer:%s\n", src)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// selfHash hashes this executable, which embeds the rewriter and the
// runtime patch. The hash is kept in the user's cache directory like the
// tool's line (see cachedToolLine): reading and hashing the whole
// executable on every -V=full would cost more than the rest of the answer.
var selfHash = sync.OnceValues(func() ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate matrixexec: %w", err)
	}
	cache, b := statcache.Lookup(statcache.NewKey("self").File(exe))
	if len(b) == sha256.Size {
		return b, nil
	}
	sum, err := hashFile(exe)
	if err != nil {
		return nil, err
	}
	statcache.Write(cache, sum)
	return sum, nil
})

func hashFile(exe string) ([]byte, error) {
	f, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("hash matrixexec: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("hash matrixexec: %w", err)
	}
	return h.Sum(nil), nil
}

func loadRules(cfg *config) (*blacklist.Rules, error) {
	return blacklist.Load(cfg.blacklistFile(), !cfg.blacklistSet)
}

// version returns the version of the matrix module this binary was built
// from (installed with go install, or a tool of another module), or "dev"
// (never "devel": cmd/go would take the compiler for a development
// toolchain).
func version() string {
	if v := modversion.Running(self.Module); v != "" {
		return v
	}
	return "dev"
}
