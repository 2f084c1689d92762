package importcfg

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const src = `# import config
packagefile fmt=/c/fmt.a
  importmap   vendored=example.com/vendor/vendored  
packagefile example.com/vendor/vendored=/c/v.a

modinfo "x"
packagefile fmt=/c/fmt2.a
`
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := c.File("fmt"); !ok || f != "/c/fmt2.a" {
		t.Errorf("File(fmt) = %q, %v; a later line wins", f, ok)
	}
	if pkg, f, ok := c.Lookup("vendored"); !ok || pkg != "example.com/vendor/vendored" || f != "/c/v.a" {
		t.Errorf("Lookup(vendored) = %q, %q, %v", pkg, f, ok)
	}
	if _, _, ok := c.Lookup("missing"); ok {
		t.Errorf("Lookup(missing) found")
	}
	if _, ok := c.File("vendored"); ok {
		t.Errorf("File maps an import path")
	}
	if got, want := c.Files(), []string{"fmt", "example.com/vendor/vendored"}; !slices.Equal(got, want) {
		t.Errorf("Files() = %q, want %q", got, want)
	}
	c.SetFile("example.com/auto", "/c/auto.a")
	want := "# import config\npackagefile fmt=/c/fmt2.a\nimportmap   vendored=example.com/vendor/vendored\npackagefile example.com/vendor/vendored=/c/v.a\nmodinfo \"x\"\npackagefile example.com/auto=/c/auto.a\n"
	if got := string(c.Render()); got != want {
		t.Errorf("Render()\n%s\nwant\n%s", got, want)
	}
	// The rendered file parses to the same entries.
	d, err := Parse(c.Render())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Files(), c.Files()) || string(d.Render()) != want {
		t.Errorf("the rendered file parses to\n%s", d.Render())
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"packagefile fmt", "packagefile =/c/fmt.a", "importmap a=", "x\nimportmap"} {
		if _, err := Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), "importcfg line") {
			t.Errorf("Parse(%q): error %v", src, err)
		}
	}
}
