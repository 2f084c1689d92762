package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link and image of the repository's
// documentation: README.md, BENCHMARKS.md and docs/*.md.
func TestDocLinks(t *testing.T) {
	root := moduleRoot(t)
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found only %d documentation files under %s: %v", len(files), root, files)
	}
	c := newChecker(root)
	for _, f := range files {
		for _, e := range c.check(f) {
			t.Error(e)
		}
	}
}

// TestCheckerFindsBrokenLinks keeps the checker honest: each kind of broken
// link is reported, and the good ones are not.
func TestCheckerFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/x\n")
	write("pkg/a.go", "package pkg\n")
	write("docs/other.md", "# Other\n\n## Where the time went: waits, and `goroutines`\n\n## Same\n\n## Same\n")
	write("README.md", strings.Join([]string{
		"# Title",
		"",
		"## Use it (now)",
		"",
		"Good: [a](pkg/a.go), [dir](pkg), [dir/](pkg/), ![img](docs/other.md),",
		"[self](#use-it-now), [other](docs/other.md#where-the-time-went-waits-and-goroutines),",
		"[dup](docs/other.md#same-1), [web](https://example.com/x#y), [mail](mailto:a@b.c),",
		"[line](pkg/a.go#L1), [titled](pkg/a.go \"a title\"), [angle](<pkg/a.go>).",
		"`[not a link](nowhere.md)` in code is not checked, ``nor [this](x.md) with ` inside``.",
		"",
		"```",
		"[also not](nowhere.md) inside a fence, nor # a heading",
		"```",
		"",
		"Bad: [missing](nothere.md), [anchor](#no-such-heading),",
		"[far anchor](docs/other.md#nope), [dup2](docs/other.md#same-2),",
		"[outside](../escape.md), ![image](docs/missing.png), [empty]().",
		"",
		"[ref]: docs/gone.md",
	}, "\n"))
	got := newChecker(root).check(filepath.Join(root, "README.md"))
	want := []string{
		"nothere.md", "#no-such-heading", "docs/other.md#nope", "docs/other.md#same-2",
		"../escape.md", "docs/missing.png", `""`, "docs/gone.md",
	}
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.Contains(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no error for %s in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"OTLP: traces in Jaeger, Tempo or any APM", "otlp-traces-in-jaeger-tempo-or-any-apm"},
		{"What can go wrong", "what-can-go-wrong"},
		{"1. Per instrumented call", "1-per-instrumented-call"},
		{"`matrixexec show` and `top`", "matrixexec-show-and-top"},
		{"snake_case and kebab-case", "snake_case-and-kebab-case"},
		{"Viewing reports: top, pprof & html", "viewing-reports-top-pprof--html"},
		{"A [link](x.md) in a heading", "a-link-in-a-heading"},
		{"Größe ×2", "größe-2"},
	} {
		if got := slug(c.in); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// docFiles lists the documentation to check.
func docFiles(root string) ([]string, error) {
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md"), filepath.Join(root, "CONTRIBUTING.md")}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
	}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(more)
	return append(files, more...), nil
}

// A doc is a parsed markdown file: its heading anchors and its links.
type doc struct {
	anchors map[string]bool
	links   []link
}

type link struct {
	line   int
	target string
}

type checker struct {
	root string
	docs map[string]*doc // by absolute path
}

func newChecker(root string) *checker {
	return &checker{root: root, docs: map[string]*doc{}}
}

// load parses a markdown file once.
func (c *checker) load(path string) (*doc, error) {
	if d, ok := c.docs[path]; ok {
		return d, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := parse(string(b))
	c.docs[path] = d
	return d, nil
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// check returns one message per broken link of the file.
func (c *checker) check(path string) []string {
	rel, _ := filepath.Rel(c.root, path)
	d, err := c.load(path)
	if err != nil {
		return []string{err.Error()}
	}
	var errs []string
	bad := func(l link, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: link %q: %s", filepath.ToSlash(rel), l.line, l.target, fmt.Sprintf(format, args...)))
	}
	for _, l := range d.links {
		target := l.target
		if target == "" {
			bad(l, "empty target")
			continue
		}
		if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
			continue // absolute URL, mailto:, …
		}
		p, frag, _ := strings.Cut(target, "#")
		p, _, _ = strings.Cut(p, "?")
		if p == "" {
			if !d.anchors[frag] {
				bad(l, "no heading in this file has the anchor #%s", frag)
			}
			continue
		}
		up, err := url.PathUnescape(p)
		if err != nil {
			bad(l, "bad escape: %v", err)
			continue
		}
		var abs string
		if strings.HasPrefix(up, "/") {
			abs = filepath.Join(c.root, filepath.FromSlash(up))
		} else {
			abs = filepath.Join(filepath.Dir(path), filepath.FromSlash(up))
		}
		if r, err := filepath.Rel(c.root, abs); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			bad(l, "points outside the repository")
			continue
		}
		fi, err := os.Stat(abs)
		if err != nil {
			bad(l, "no such file or directory")
			continue
		}
		if frag == "" || fi.IsDir() || !strings.EqualFold(filepath.Ext(abs), ".md") {
			continue // line anchors of source files are GitHub's business
		}
		td, err := c.load(abs)
		if err != nil {
			bad(l, "%v", err)
			continue
		}
		if !td.anchors[frag] {
			bad(l, "no heading of %s has the anchor #%s", up, frag)
		}
	}
	return errs
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$`)
	closingSeq = regexp.MustCompile(`(?:^|[ \t]+)#+[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*\b(?:name|id)\s*=\s*"([^"]+)"`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	fence      = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
)

// parse collects a markdown file's heading anchors and its link targets,
// leaving out fenced code blocks and code spans.
func parse(src string) *doc {
	d := &doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	var open string // the fence that opened the current code block
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		line = strings.TrimRight(line, "\r")
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[strings.Index(line, m[1])+len(m[1]):]) == "":
				open = ""
				continue
			}
		}
		if open != "" {
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			text := closingSeq.ReplaceAllString(m[2], "")
			s := slug(text)
			if k := seen[s]; k > 0 {
				d.anchors[fmt.Sprintf("%s-%d", s, k)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			d.links = append(d.links, link{n, strings.Trim(m[1], "<>")})
			continue
		}
		d.links = append(d.links, inlineLinks(n, stripCodeSpans(line))...)
	}
	return d
}

// stripCodeSpans removes the code spans of a line: a run of backticks up
// to the next run of the same length.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			b.WriteString(line)
			return b.String()
		}
		b.WriteString(line[:i])
		n := i
		for n < len(line) && line[n] == '`' {
			n++
		}
		ticks := line[i:n]
		rest := line[n:]
		closed := false
		for j := 0; j < len(rest); {
			k := strings.Index(rest[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			e := k + len(ticks)
			if (k == 0 || rest[k-1] != '`') && (e == len(rest) || rest[e] != '`') {
				line = rest[e:]
				closed = true
				break
			}
			for e < len(rest) && rest[e] == '`' {
				e++
			}
			j = e
		}
		if !closed {
			// An unmatched run is literal text.
			b.WriteString(ticks)
			line = rest
		}
	}
}

// inlineLinks returns the targets of the [text](target) links and
// ![alt](target) images of one line.
func inlineLinks(n int, line string) []link {
	var out []link
	for off := 0; ; {
		i := strings.Index(line[off:], "](")
		if i < 0 {
			return out
		}
		start := off + i + 2
		off = start
		if !strings.Contains(line[:start], "[") {
			continue
		}
		rest := strings.TrimLeft(line[start:], " \t")
		var target string
		if strings.HasPrefix(rest, "<") {
			end := strings.Index(rest, ">")
			if end < 0 {
				continue
			}
			target = rest[1:end]
		} else {
			depth := 0
			end := len(rest)
		scan:
			for j, r := range rest {
				switch {
				case r == '(':
					depth++
				case r == ')':
					if depth == 0 {
						end = j
						break scan
					}
					depth--
				case r == ' ' || r == '\t':
					end = j
					break scan
				}
			}
			target = rest[:end]
		}
		out = append(out, link{n, target})
	}
}

var inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// slug is the anchor GitHub gives a heading: its text lowercased, with
// links reduced to their text, every character other than letters, digits,
// '-', '_' and spaces dropped, and each space made a '-'.
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
