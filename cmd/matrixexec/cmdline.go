package main

import (
	"os"
	"slices"
)

// toolCmd is one run of the compiler or the linker as cmd/go asks for it,
// its response files expanded: the tool's path, its flags, and its
// operands (a compile's Go files, which cmd/go puts after every flag; a
// link's main archive). It is parsed once; what matrixexec changes goes
// through its fields and methods, and args renders it.
type toolCmd struct {
	tool     string
	flags    []string
	operands []string
}

// parseCompile parses the arguments of a compile.
func parseCompile(args []string) (*toolCmd, error) {
	args, err := expandArgs(args)
	if err != nil {
		return nil, err
	}
	first := goFiles(args)
	return &toolCmd{tool: args[0], flags: args[1:first], operands: args[first:]}, nil
}

// parseLink parses the arguments of a link: the last one is the main
// package's archive.
func parseLink(args []string) (*toolCmd, error) {
	args, err := expandArgs(args)
	if err != nil {
		return nil, err
	}
	last := max(len(args)-1, 1)
	return &toolCmd{tool: args[0], flags: args[1:last], operands: args[last:]}, nil
}

// mainArchive returns a link's main package archive, or "" if it has none.
func (c *toolCmd) mainArchive() string {
	if len(c.operands) == 0 {
		return ""
	}
	return c.operands[len(c.operands)-1]
}

// flag returns the value of the flag -name.
func (c *toolCmd) flag(name string) (string, bool) { return flagValue(c.flags, name) }

// has reports whether the boolean flag -name is set.
func (c *toolCmd) has(name string) bool { return hasFlag(c.flags, name) }

// set changes the value of the flag -name, wherever it is given.
func (c *toolCmd) set(name, value string) { setFlag(c.flags, name, value) }

// importPath returns the import path of the package a compile builds:
// -p, except for commands, whose -p is "main" and whose import path only
// TOOLEXEC_IMPORTPATH tells; without the " [test]"-like suffix of a test
// variant.
func (c *toolCmd) importPath() string {
	pkg, _ := c.flag("p")
	if ip := os.Getenv("TOOLEXEC_IMPORTPATH"); ip != "" {
		pkg = ip
	}
	return pkgKey(pkg)
}

// args renders the command.
func (c *toolCmd) args() []string {
	return slices.Concat([]string{c.tool}, c.flags, c.operands)
}
