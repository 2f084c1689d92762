package idalloc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Owner is what a map was created for, recorded on line 2 of the mapping
// file: the main module of the build that created it, or the modules of the
// go.work workspace that created it. The zero Owner is unknown: a map
// written before owners were recorded, or by a build outside any module.
type Owner struct {
	// Workspace is true when Modules are the modules a go.work file uses.
	Workspace bool
	// Modules are module paths, sorted and without duplicates (one for a
	// module build). Use [NewOwner] to build an Owner.
	Modules []string
}

// The owner lines of the mapping file.
const (
	ownerModule    = "# module "
	ownerWorkspace = "# workspace "
)

// NewOwner returns the owner for the given module paths: the main module
// of a build (workspace false, one path) or the modules a go.work
// workspace uses. The paths are sorted and deduplicated; empty ones are
// dropped.
func NewOwner(workspace bool, modules ...string) Owner {
	var mods []string
	for _, m := range modules {
		if m != "" {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	mods = slices.Compact(mods)
	if len(mods) == 0 {
		return Owner{}
	}
	return Owner{Workspace: workspace, Modules: mods}
}

// IsZero reports whether o is unknown.
func (o Owner) IsZero() bool { return len(o.Modules) == 0 }

// String renders o for messages: "module example.com/app" or "the
// workspace of example.com/a, example.com/b".
func (o Owner) String() string {
	switch {
	case o.IsZero():
		return "no module"
	case o.Workspace:
		return "the workspace of " + strings.Join(o.Modules, ", ")
	}
	return "module " + strings.Join(o.Modules, ", ")
}

// Shares reports whether o and p have a module in common. A workspace map
// therefore stays valid when modules are added to or removed from the
// workspace, and a module's map stays valid when a go.work that uses the
// module is added next to it.
func (o Owner) Shares(p Owner) bool {
	for _, m := range o.Modules {
		if _, ok := slices.BinarySearch(p.Modules, m); ok {
			return true
		}
	}
	return false
}

// line renders o as its line in the mapping file, or "" for the zero Owner.
func (o Owner) line() string {
	switch {
	case o.IsZero():
		return ""
	case o.Workspace:
		return ownerWorkspace + strings.Join(o.Modules, " ") + "\n"
	}
	return ownerModule + o.Modules[0] + "\n"
}

// check reports what makes o unfit for the mapping file, or nil.
func (o Owner) check() error {
	if !o.Workspace && len(o.Modules) > 1 {
		return fmt.Errorf("idalloc: owner has %d main modules, want one (or a workspace)", len(o.Modules))
	}
	for _, m := range o.Modules {
		if err := checkToken("module path", m); err != nil {
			return err
		}
	}
	return nil
}

// parseOwner parses line 2 of a mapping file. ok is false when the line is
// not an owner line at all (as in maps written before owners were
// recorded); msg says what is wrong with a malformed owner line.
func parseOwner(line string) (o Owner, ok bool, msg string) {
	var rest string
	switch {
	case strings.HasPrefix(line, ownerModule):
		rest = line[len(ownerModule):]
	case strings.HasPrefix(line, ownerWorkspace):
		rest, o.Workspace = line[len(ownerWorkspace):], true
	default:
		return Owner{}, false, ""
	}
	mods := strings.Split(rest, " ")
	for _, m := range mods {
		if m == "" || strings.ContainsFunc(m, isSpace) {
			return Owner{}, true, fmt.Sprintf("malformed owner line %q: want %q or %q", line, ownerModule+"<module path>", ownerWorkspace+"<module path>...")
		}
	}
	if !o.Workspace && len(mods) != 1 {
		return Owner{}, true, fmt.Sprintf("owner line %q names %d modules, want one", line, len(mods))
	}
	if !slices.IsSorted(mods) || len(slices.Compact(slices.Clone(mods))) != len(mods) {
		return Owner{}, true, fmt.Sprintf("owner line %q: module paths are not sorted and unique", line)
	}
	o.Modules = mods
	return o, true, ""
}

// ForeignMapError is returned by [OpenWith] with CheckOwner for a map that
// was created for other modules than the build's.
type ForeignMapError struct {
	// Path is the map file.
	Path string
	// Recorded is the owner recorded in the map.
	Recorded Owner
	// Build is the owner the build asked for.
	Build Owner
}

// Error implements error.
func (e *ForeignMapError) Error() string {
	return fmt.Sprintf("idalloc: map %s was created for %s, but this build is for %s; ids of different modules must not mix: delete the file to start a new map for %s, or use a map made for it",
		e.Path, e.Recorded, e.Build, strings.Join(e.Build.Modules, ", "))
}

// ModuleOwner returns the owner of a map created by a build whose main
// module is defined by the go.mod file gomod.
func ModuleOwner(gomod string) (Owner, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return Owner{}, fmt.Errorf("idalloc: module owner: %w", err)
	}
	path := modulePath(data)
	if path == "" {
		return Owner{}, fmt.Errorf("idalloc: module owner: %s has no module directive", gomod)
	}
	return NewOwner(false, path), nil
}

// WorkspaceOwner returns the owner of a map created by a build in the
// workspace defined by the go.work file gowork: the paths of the modules of
// its use directives. A used directory without a readable go.mod is left
// out (cmd/go reports it).
func WorkspaceOwner(gowork string) (Owner, error) {
	data, err := os.ReadFile(gowork)
	if err != nil {
		return Owner{}, fmt.Errorf("idalloc: workspace owner: %w", err)
	}
	var mods []string
	for _, dir := range workUses(data) {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(gowork), filepath.FromSlash(dir))
		}
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			mods = append(mods, modulePath(mod))
		}
	}
	o := NewOwner(true, mods...)
	if o.IsZero() {
		return Owner{}, fmt.Errorf("idalloc: workspace owner: %s uses no module with a go.mod", gowork)
	}
	return o, nil
}

// modulePath returns the path of the module directive of go.mod data, or
// "".
func modulePath(data []byte) string {
	for _, f := range modLines(data) {
		if len(f) == 2 && f[0] == "module" {
			return f[1]
		}
	}
	return ""
}

// workUses returns the directories of the use directives of go.work data,
// single-line ("use ./a") and in blocks ("use (", "./a", ")").
func workUses(data []byte) []string {
	var dirs []string
	block := false
	for _, f := range modLines(data) {
		switch {
		case block && len(f) == 1 && f[0] == ")":
			block = false
		case block && len(f) == 1:
			dirs = append(dirs, f[0])
		case len(f) == 2 && f[0] == "use" && f[1] == "(":
			block = true
		case len(f) == 2 && f[0] == "use":
			dirs = append(dirs, f[1])
		}
	}
	return dirs
}

// modLines splits go.mod or go.work data into the tokens of each line,
// without comments; quoted tokens ("a b" or `a b`) are unquoted.
func modLines(data []byte) [][]string {
	var out [][]string
	for _, line := range strings.Split(string(data), "\n") {
		var f []string
		for s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "//"); s = strings.TrimSpace(s) {
			n := strings.IndexFunc(s, isSpace)
			switch s[0] {
			case '"':
				n = quotedLen(s)
			case '`':
				n = strings.IndexByte(s[1:], '`') + 2
			}
			if n <= 0 || n > len(s) {
				n = len(s)
			}
			tok := s[:n]
			if u, err := strconv.Unquote(tok); err == nil {
				tok = u
			}
			f = append(f, tok)
			s = s[n:]
		}
		if len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// quotedLen returns the length of the double-quoted string at the start of
// s, or 0 if it is not terminated.
func quotedLen(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return 0
}
