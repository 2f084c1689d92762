package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/blacklist"
	"github.com/matrixgo/matrix/internal/self"
)

// replacedVersion is the version a go.mod requires of a module that only a
// replace directive provides (here, this checkout).
const replacedVersion = "v0.0.0-00010101000000-000000000000"

// goModule is a module as go list describes it: go list -m -json, or the
// Module of a package in go list -json.
type goModule struct {
	Path    string
	Version string
	Main    bool
	Replace *goModule
	Error   *struct{ Err string }
}

func (m *goModule) String() string {
	s := m.Path
	if m.Version != "" {
		s += "@" + m.Version
	}
	if m.Replace != nil {
		s += " => " + m.Replace.String()
	}
	return s
}

// sameSource reports whether two module graphs take a (non-main) module
// from the same source: the same version, replaced the same way.
func sameSource(a, b *goModule) bool {
	if a.Version != b.Version || (a.Replace == nil) != (b.Replace == nil) {
		return false
	}
	return a.Replace == nil || a.Replace.Path == b.Replace.Path && a.Replace.Version == b.Replace.Version
}

// graphConflicts compares the modules the zero-code tracer links, as this
// checkout resolves them (tracer), with the same modules in a corpus
// module's graph (graph, from go list -m -e: an entry with an Error is not
// in that graph). A recording build of the corpus module with the tracer
// built in this checkout (MATRIX_ZEROCODE_MODULE) would link two builds of
// a package of each module it returns, which zero-code mode refuses: the
// module under test itself (its packages are compiled from its copy, the
// tracer's from the module cache), or another version of a module.
func graphConflicts(tracer, graph []*goModule) []string {
	byPath := map[string]*goModule{}
	for _, m := range tracer {
		byPath[m.Path] = m
	}
	var out []string
	for _, g := range graph {
		tm := byPath[g.Path]
		switch {
		case tm == nil || g.Error != nil:
		case g.Main:
			out = append(out, fmt.Sprintf("the tracer links packages of %s, the module under test", g.Path))
		case !sameSource(tm, g):
			out = append(out, fmt.Sprintf("the tracer links %s, the module's graph has %s", tm, g))
		}
	}
	slices.Sort(out)
	return out
}

// goCmd returns a go command run in dir with the environment of the
// module runs, without matrixexec.
func (r *runner) goCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = r.env("")
	return cmd
}

// goJSON runs a go command that prints a stream of JSON values and
// decodes each with add.
func (r *runner) goJSON(dir string, args []string, add func(*json.Decoder) error) error {
	cmd := r.goCmd(dir, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		if err := add(dec); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
		}
	}
}

// tracerModules returns the modules, other than this one, whose packages
// the zero-code tracer links with the defaults (no OTLP sink), as this
// checkout resolves them.
func (r *runner) tracerModules() ([]*goModule, error) {
	if r.tracerMods != nil {
		return r.tracerMods, nil
	}
	mods := []*goModule{}
	err := r.goJSON(r.root, []string{"list", "-deps", "-json=Module", blacklist.LocalTracerPkg}, func(dec *json.Decoder) error {
		var p struct{ Module *goModule }
		if err := dec.Decode(&p); err != nil {
			return err
		}
		if m := p.Module; m != nil && !m.Main && !slices.ContainsFunc(mods, func(o *goModule) bool { return o.Path == m.Path }) {
			mods = append(mods, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.tracerMods = mods
	return mods, nil
}

// ownGraph decides where a recording run of the module copy in dir builds
// the tracer. If this checkout's build of it would conflict with the
// module's graph (graphConflicts), the copy's go.mod is made to require
// this module, replaced by this checkout, as a user's module that adds
// the tracer does, and the tracer is built in the module's own graph; the
// reasons are returned. Otherwise nothing changes and it returns nil: the
// tracer is built in this checkout (MATRIX_ZEROCODE_MODULE).
func (r *runner) ownGraph(dir string) ([]string, error) {
	tracer, err := r.tracerModules()
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-m", "-e", "-json"}
	for _, m := range tracer {
		args = append(args, m.Path)
	}
	var graph []*goModule
	err = r.goJSON(dir, args, func(dec *json.Decoder) error {
		var m goModule
		if err := dec.Decode(&m); err != nil {
			return err
		}
		graph = append(graph, &m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	why := graphConflicts(tracer, graph)
	if len(why) == 0 {
		return nil, nil
	}
	for _, args := range [][]string{
		{"mod", "edit", "-replace=" + self.Module + "=" + r.root},
		{"get", self.Module + "@" + replacedVersion},
	} {
		if out, err := r.goCmd(dir, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
	}
	return why, nil
}

func TestGraphConflicts(t *testing.T) {
	tracer := []*goModule{
		{Path: "example.com/log", Version: "v1.2.0"},
		{Path: "example.com/sys", Version: "v0.3.0"},
		{Path: "example.com/wire", Version: "v1.36.0"},
		{Path: "example.com/fork", Version: "v1.0.0", Replace: &goModule{Path: "example.com/fork2", Version: "v1.0.1"}},
	}
	missing := &struct{ Err string }{"not a known dependency"}
	for _, tc := range []struct {
		name  string
		graph []*goModule
		want  []string
	}{
		{"unrelated", []*goModule{
			{Path: "example.com/log", Error: missing}, {Path: "example.com/sys", Error: missing},
			{Path: "example.com/wire", Error: missing}, {Path: "example.com/fork", Error: missing},
		}, nil},
		{"same versions", []*goModule{
			{Path: "example.com/log", Version: "v1.2.0"}, {Path: "example.com/sys", Version: "v0.3.0"},
			{Path: "example.com/fork", Version: "v1.0.0", Replace: &goModule{Path: "example.com/fork2", Version: "v1.0.1"}},
		}, nil},
		{"module under test", []*goModule{{Path: "example.com/wire", Main: true}}, []string{
			"the tracer links packages of example.com/wire, the module under test",
		}},
		{"other versions", []*goModule{
			{Path: "example.com/sys", Version: "v0.2.0"},
			{Path: "example.com/log", Version: "v1.2.0", Replace: &goModule{Path: "../log"}},
			{Path: "example.com/fork", Version: "v1.0.0"},
		}, []string{
			"the tracer links example.com/fork@v1.0.0 => example.com/fork2@v1.0.1, the module's graph has example.com/fork@v1.0.0",
			"the tracer links example.com/log@v1.2.0, the module's graph has example.com/log@v1.2.0 => ../log",
			"the tracer links example.com/sys@v0.3.0, the module's graph has example.com/sys@v0.2.0",
		}},
	} {
		if got := graphConflicts(tracer, tc.graph); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
