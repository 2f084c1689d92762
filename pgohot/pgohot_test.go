package pgohot

import (
	"fmt"
	"strings"
	"testing"
)

func profile(edges ...string) string {
	var b strings.Builder
	b.WriteString(Header + "\n")
	for _, e := range edges {
		b.WriteString(e + "\n")
	}
	return b.String()
}

// TestHotCallees checks the compiler's rule: the heaviest edges that make
// up the top 99 % of the total weight are hot, the edge that crosses the
// threshold included.
func TestHotCallees(t *testing.T) {
	var edges []string
	// 900 + 80 + 15 + 5 = 1000: a and b make 98 %, c takes the total to
	// 99.5 %, crossing 99 %; d is left out.
	for _, e := range []struct {
		callee string
		weight int
	}{{"p.a", 900}, {"p.(*T).b", 80}, {"p.c", 15}, {"p.d", 5}} {
		edges = append(edges, "p.caller", e.callee, fmt.Sprintf("12 %d", e.weight))
	}
	p, err := Read(strings.NewReader(profile(edges...)))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"p.a": true, "p.(*T).b": true, "p.c": true, "p.d": false, "p.caller": false} {
		if got := p.Hot(name); got != want {
			t.Errorf("Hot(%q) = %v, want %v", name, got, want)
		}
	}
	if p.Len() != 3 {
		t.Errorf("Len = %d, want 3", p.Len())
	}
}

// TestOrderDoesNotMatter checks that an unsorted file gives the same set.
func TestOrderDoesNotMatter(t *testing.T) {
	p, err := Read(strings.NewReader(profile("x", "p.small", "1 1", "x", "p.big", "1 1000")))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Hot("p.big") || p.Hot("p.small") {
		t.Errorf("hot: big %v small %v, want true false", p.Hot("p.big"), p.Hot("p.small"))
	}
}

func TestMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"raw pprof":       "\x1f\x8b\x08",
		"no callee":       profile("p.caller"),
		"no weight":       profile("p.caller", "p.callee"),
		"one field":       profile("p.caller", "p.callee", "12"),
		"negative weight": profile("p.caller", "p.callee", "12 -3"),
	} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if IsPreprocessed([]byte("\x1f\x8b\x08")) || !IsPreprocessed([]byte(profile())) {
		t.Error("IsPreprocessed does not tell the formats apart")
	}
	var nilProfile *Profile
	if nilProfile.Hot("p.a") || nilProfile.Len() != 0 {
		t.Error("a nil profile has hot callees")
	}
}
