// Package importcfg reads and writes the importcfg files cmd/go hands the
// compiler and the linker (-importcfg): which export data or archive file
// holds each package (packagefile lines), and which import paths stand for
// other package paths (importmap lines, for vendored packages). Other lines
// (comments, modinfo, packageshlib, embedcfg) are kept as they are.
//
// matrixexec reads them to type-check a package against its imports, to
// find which packages a compile or a link is given, and to give a compile
// or a link more packages; the link record of zero-code mode is in the
// same format.
package importcfg

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// A Config is a parsed importcfg file.
type Config struct {
	// files maps a package path to its file (packagefile).
	files map[string]string
	// importMap maps an import path, as written in source, to the
	// package path it stands for (importmap).
	importMap map[string]string
	// lines are the file's lines, a packagefile line rewritten in place
	// when it is set again.
	lines []string
	// fileLine is the index in lines of each package's packagefile line.
	fileLine map[string]int
}

// New returns an empty Config.
func New() *Config {
	return &Config{files: map[string]string{}, importMap: map[string]string{}, fileLine: map[string]int{}}
}

// Clone returns a copy of c, to change without changing c.
func (c *Config) Clone() *Config {
	d := New()
	d.lines = append(d.lines, c.lines...)
	for k, v := range c.files {
		d.files[k] = v
	}
	for k, v := range c.importMap {
		d.importMap[k] = v
	}
	for k, v := range c.fileLine {
		d.fileLine[k] = v
	}
	return d
}

// Parse parses the content of an importcfg file as the compiler and the
// linker do: blank lines and lines beginning with # are comments, and a
// packagefile or importmap line must be "verb path=value". A later line for
// a path overrides an earlier one.
func Parse(data []byte) (*Config, error) {
	c := New()
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		verb, args, _ := strings.Cut(line, " ")
		key, value, _ := strings.Cut(strings.TrimSpace(args), "=")
		switch verb {
		case "packagefile", "importmap":
			if key == "" || value == "" {
				return nil, fmt.Errorf("importcfg line %d: want %s path=value", i+1, verb)
			}
		}
		switch verb {
		case "packagefile":
			c.SetFile(key, value)
		case "importmap":
			c.importMap[key] = value
			c.lines = append(c.lines, line)
		default:
			c.lines = append(c.lines, line)
		}
	}
	return c, nil
}

// Read reads and parses the importcfg file at path.
func Read(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read importcfg: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// File returns the file of the package with the given package path (its
// packagefile line), without mapping it.
func (c *Config) File(pkgPath string) (string, bool) {
	f, ok := c.files[pkgPath]
	return f, ok
}

// Lookup returns the package path and the file of an import path as
// written in source: the importmap maps it first.
func (c *Config) Lookup(importPath string) (pkgPath, file string, ok bool) {
	pkgPath = importPath
	if mapped, ok := c.importMap[importPath]; ok {
		pkgPath = mapped
	}
	file, ok = c.files[pkgPath]
	return pkgPath, file, ok
}

// Files returns the package paths of the packagefile lines, in the order
// of the file.
func (c *Config) Files() []string {
	paths := make([]string, 0, len(c.files))
	for _, line := range c.lines {
		if rest, ok := strings.CutPrefix(line, "packagefile "); ok {
			path, _, _ := strings.Cut(rest, "=")
			paths = append(paths, path)
		}
	}
	return paths
}

// SetFile gives the package with the given package path the file file: its
// packagefile line is rewritten in place, or added at the end.
func (c *Config) SetFile(pkgPath, file string) {
	line := "packagefile " + pkgPath + "=" + file
	if i, ok := c.fileLine[pkgPath]; ok {
		c.lines[i] = line
	} else {
		c.fileLine[pkgPath] = len(c.lines)
		c.lines = append(c.lines, line)
	}
	c.files[pkgPath] = file
}

// Render returns the content of the importcfg file, one line per entry.
func (c *Config) Render() []byte {
	var b bytes.Buffer
	for _, line := range c.lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Write writes the rendered file to path.
func (c *Config) Write(path string) error {
	if err := os.WriteFile(path, c.Render(), 0o600); err != nil {
		return fmt.Errorf("write importcfg: %w", err)
	}
	return nil
}
