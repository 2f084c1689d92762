// Package toolcmd is the typed form of the compiles and links cmd/go hands
// to a -toolexec program: a command is parsed once, response files
// expanded, into the tool, its flags and its operands; what matrixexec
// changes goes through its methods; and Argv renders it, in a response file
// again when it is long.
package toolcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/matrixgo/matrix/internal/importcfg"
)

// A Cmd is one run of the compiler or the linker as cmd/go asks for it,
// its response files expanded.
type Cmd struct {
	// Tool is the tool's path.
	Tool string
	// Flags are the tool's flags, in order.
	Flags []string
	// Operands are a compile's Go files, which cmd/go puts after every
	// flag, or a link's main archive.
	Operands []string

	// importcfg is the parsed -importcfg file, read from importcfgPath
	// when first asked for.
	importcfg     *importcfg.Config
	importcfgPath string
}

// ParseCompile parses the arguments of a compile.
func ParseCompile(args []string) (*Cmd, error) {
	args, err := ExpandArgs(args)
	if err != nil {
		return nil, err
	}
	// cmd/go puts the Go files after every flag.
	first := len(args)
	for first > 1 && strings.HasSuffix(args[first-1], ".go") && !strings.HasPrefix(args[first-1], "-") {
		first--
	}
	// Flags are capped so that flags added later never overwrite the
	// operands that follow them in args.
	return &Cmd{Tool: args[0], Flags: args[1:first:first], Operands: args[first:]}, nil
}

// ParseLink parses the arguments of a link: the last one is the main
// package's archive.
func ParseLink(args []string) (*Cmd, error) {
	args, err := ExpandArgs(args)
	if err != nil {
		return nil, err
	}
	last := max(len(args)-1, 1)
	return &Cmd{Tool: args[0], Flags: args[1:last:last], Operands: args[last:]}, nil
}

// MainArchive returns a link's main package archive, or "" if it has none.
func (c *Cmd) MainArchive() string {
	if len(c.Operands) == 0 {
		return ""
	}
	return c.Operands[len(c.Operands)-1]
}

// Flag returns the value of the flag -name (given as -name value or
// -name=value).
func (c *Cmd) Flag(name string) (string, bool) {
	for i, a := range c.Flags {
		if a == "-"+name && i+1 < len(c.Flags) {
			return c.Flags[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// Has reports whether the boolean flag -name is set.
func (c *Cmd) Has(name string) bool {
	for _, a := range c.Flags {
		if a == "-"+name || a == "-"+name+"=true" {
			return true
		}
	}
	return false
}

// Set changes the value of the flag -name, wherever it is given; it adds
// nothing when the flag is not given.
func (c *Cmd) Set(name, value string) {
	for i, a := range c.Flags {
		if a == "-"+name && i+1 < len(c.Flags) {
			c.Flags[i+1] = value
		} else if strings.HasPrefix(a, "-"+name+"=") {
			c.Flags[i] = "-" + name + "=" + value
		}
	}
}

// SymbolPkg returns the package path a compile gives the package's symbols
// (its -p flag): the import path, except for the main package of a program
// or a test binary, whose symbols are main's.
func (c *Cmd) SymbolPkg() string {
	pkg, _ := c.Flag("p")
	return pkg
}

// IsMain reports whether a compile builds the main package of a program or
// of a test binary.
func (c *Cmd) IsMain() bool {
	return c.SymbolPkg() == "main"
}

// Importcfg returns the parsed -importcfg file of the command, read the
// first time it is asked for (and again after the flag changes), or nil
// when the command has none. The Config is shared: Clone it to change it.
func (c *Cmd) Importcfg() (*importcfg.Config, error) {
	path, ok := c.Flag("importcfg")
	if !ok {
		return nil, nil
	}
	if c.importcfg == nil || c.importcfgPath != path {
		cfg, err := importcfg.Read(path)
		if err != nil {
			return nil, err
		}
		c.importcfg, c.importcfgPath = cfg, path
	}
	return c.importcfg, nil
}

// SetImportcfg writes cfg to path and makes the command use it: the
// -importcfg flag is changed (it adds nothing when the command has none).
func (c *Cmd) SetImportcfg(cfg *importcfg.Config, path string) error {
	if err := cfg.Write(path); err != nil {
		return err
	}
	c.Set("importcfg", path)
	c.importcfg, c.importcfgPath = cfg, path
	return nil
}

// ImportPath returns the import path of the package a compile builds:
// -p, except for commands, whose -p is "main" and whose import path only
// TOOLEXEC_IMPORTPATH tells; without the " [test]"-like suffix of a test
// variant.
func (c *Cmd) ImportPath() string {
	pkg := c.SymbolPkg()
	if ip := os.Getenv("TOOLEXEC_IMPORTPATH"); ip != "" {
		pkg = ip
	}
	return PkgKey(pkg)
}

// PkgKey returns the package path of a compile's package without the
// " [p.test]"-like suffix of a test variant: the path under which functions
// are recorded in the map, so that test variants share the ids of their
// package.
func PkgKey(pkg string) string {
	if i := strings.Index(pkg, " ["); i >= 0 {
		return pkg[:i]
	}
	return pkg
}

// TrimDir makes the compiler trim dir, where matrixexec writes the files it
// rewrites, from file names, as cmd/go trims the $WORK directory where
// cmd/cover writes its files: the rule goes first in -trimpath. Untrimmed,
// the random directory name would be in the export data, whose hash
// identifies the package: separate compiles of one package would differ,
// and plugin.Open would refuse a plugin ("built with a different version of
// package runtime").
func (c *Cmd) TrimDir(dir string) {
	rule := dir + "=>"
	if v, ok := c.Flag("trimpath"); ok {
		c.Set("trimpath", rule+";"+v)
		return
	}
	c.AddFlag("-trimpath", rule)
}

// AddFlag adds a flag, and its value if separate, after the command's
// other flags.
func (c *Cmd) AddFlag(args ...string) {
	c.Flags = append(c.Flags, args...)
}

// Args renders the command.
func (c *Cmd) Args() []string {
	return slices.Concat([]string{c.Tool}, c.Flags, c.Operands)
}

// ExpandArgs replaces @responsefile arguments by their content, decoded as
// cmd/internal/objabi does.
func ExpandArgs(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		if !strings.HasPrefix(s, "@") {
			out = append(out, s)
			continue
		}
		data, err := os.ReadFile(s[1:])
		if err != nil {
			return nil, fmt.Errorf("read response file: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(data), "\r", "")), "\n")
		for i, l := range lines {
			lines[i] = decodeArg(l)
		}
		sub, err := ExpandArgs(lines)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

func decodeArg(arg string) string {
	if !strings.ContainsAny(arg, "\\") {
		return arg
	}
	var b strings.Builder
	for i := 0; i < len(arg); i++ {
		if arg[i] == '\\' && i+1 < len(arg) {
			switch arg[i+1] {
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			}
		}
		b.WriteByte(arg[i])
	}
	return b.String()
}

func encodeArg(arg string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(arg)
}

// responseFileThreshold is the argument length above which we hand the
// compiler a response file again, well below every OS limit.
const responseFileThreshold = 30000

// Argv returns the command line to run, moving the arguments into a
// response file in dir when they are long.
func (c *Cmd) Argv(dir string) ([]string, error) {
	args := c.Args()
	n := 0
	for _, a := range args {
		n += len(a) + 1
	}
	if n < responseFileThreshold {
		return args, nil
	}
	var b strings.Builder
	for _, a := range args[1:] {
		b.WriteString(encodeArg(a))
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "args")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("write response file: %w", err)
	}
	return []string{args[0], "@" + path}, nil
}
