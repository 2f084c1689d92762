package rewrite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scopeStmts are the statements FuzzScopes composes function bodies of: the
// constructs whose meaning depends on the block they are in, or that a
// moved body could get wrong. %[1]d is the statement's number, %[2]d a
// constant from the input. The bodies belong to
//
//	func (r *recv) fN(x int, y int64, s string) (n int, err error)
//
// or the same function without the receiver; every variable a statement
// declares is used, and every statement leaves a trace in the results.
var scopeStmts = []string{
	// a top-level := that reuses the named result err (the shape of
	// ugorji/go/codec's reader)
	"v%[1]d, err := g(x + %[2]d); n += v%[1]d",
	// reuses the parameter x, with untyped constants
	"x, v%[1]d := x+%[2]d, %[2]d; n += v%[1]d",
	// reuses y, whose type is not the constant's default type
	"y, v%[1]d := %[2]d, len(s); n += int(y) + v%[1]d",
	// reuses s
	"s, v%[1]d := fmt.Sprint(s, %[2]d), len(s); n += v%[1]d",
	// reuses n and err at once, from one call
	"n, err, v%[1]d := h(n, %[2]d); n += v%[1]d",
	// reuses err with a value of a type that is not error: err becomes a
	// non-nil interface holding a nil pointer
	"v%[1]d, err := x+%[2]d, (*myErr)(nil); n += v%[1]d",
	// a bare return
	"if x > %[2]d { return }",
	// an explicit return
	"if x == %[2]d { return n * 2, fmt.Errorf(\"e%[2]d\") }",
	// err and n declared again in blocks
	"if x%%3 == %[2]d%%3 { err := fmt.Errorf(\"shadow %%d\", x); n += len(err.Error()) }",
	"{ n := n + %[2]d; x += n }",
	// a labelled := reusing x, and a goto back to it
	"L%[1]d: x, v%[1]d := x+1, len(fmt.Sprint(x)); if x < %[2]d { n += v%[1]d; goto L%[1]d }",
	// a package-level name used, then declared again at the top level
	"n += p0 + len(fmt.Sprint(%[2]d)); p0 := %[2]d; n += p0",
	// the receiver (in methods) or a new variable (in functions)
	"RECV",
	// a range loop and a switch that reuse nothing
	"for i := range %[2]d { n += i + len(s) }; switch v%[1]d := x; { case v%[1]d > %[2]d: n++ }",
	// assignments, not declarations
	"n, err = g(n + %[2]d)",
}

// scopeRecvStmt replaces RECV in methods: the receiver reused.
const scopeRecvStmt = "r, v%[1]d := &recv{k: r.k + %[2]d}, r.k; n += v%[1]d + r.k"

// scopeFuncStmt replaces RECV in functions.
const scopeFuncStmt = "v%[1]d := fmt.Sprint(%[2]d); n += len(v%[1]d)"

// scopeModes are the rewrite modes of FuzzScopes, chosen by the input's
// first byte: hook-free copies of every body, exits at the returns only,
// one exit site after the body (many returns), and the default budget.
var scopeModes = []struct {
	name       string
	copyBudget int
	many       bool
}{
	{"copy", 1 << 20, false},
	{"returns", 0, false},
	{"one exit site", 0, true},
	{"default", DefaultCopyBudget, false},
}

// scopeProgram renders the program an input describes: its first byte
// chooses the mode; then, for each function, one byte (the number of its
// statements) and a pair per statement (which one and its constant).
func scopeProgram(data []byte) (src string, mode int) {
	mode = int(data[0]) % len(scopeModes)
	var b strings.Builder
	b.WriteString(`package main

import (
	"fmt"
	"strconv"
)

var p0 = 7

type recv struct{ k int }

type myErr struct{}

func (e *myErr) Error() string { return "myErr" }

func g(x int) (int, error) {
	if x%4 == 0 {
		return 0, fmt.Errorf("g%d", x)
	}
	return strconv.Atoi(fmt.Sprint(x * 3))
}

func h(n, c int) (int, error, int) { return n + c, nil, len(fmt.Sprint(n)) }

func g2(x, c int) error {
	if x == c {
		return fmt.Errorf("g2 %d", c)
	}
	return nil
}

`)
	var calls []string
	data = data[1:]
	for fn := 0; len(data) > 0 && fn < 8; fn++ {
		count := int(data[0])%6 + 1
		data = data[1:]
		method := fn%2 == 0
		if method {
			fmt.Fprintf(&b, "func (r *recv) f%d(x int, y int64, s string) (n int, err error) {\n", fn)
		} else {
			fmt.Fprintf(&b, "func f%d(x int, y int64, s string) (n int, err error) {\n", fn)
		}
		for k := 0; k < count && len(data) >= 2; k++ {
			stmt := scopeStmts[int(data[0])%len(scopeStmts)]
			if stmt == "RECV" {
				stmt = scopeFuncStmt
				if method {
					stmt = scopeRecvStmt
				}
			}
			fmt.Fprintf(&b, "\t"+stmt+"\n", k, int(data[1])%8)
			data = data[2:]
		}
		if scopeModes[mode].many {
			b.WriteString("\tswitch x + n {\n" + strings.ReplaceAll(manyCases(MaxExitReturns+1), "return len(fmt.Sprint(x, ", "return n, g2(x, (") + "\t}\n")
		}
		recvUse := ""
		if method {
			recvUse = " + r.k"
		}
		fmt.Fprintf(&b, "\tn += x + int(y) + len(s)%s\n\treturn\n}\n\n", recvUse)
		call := fmt.Sprintf("f%d", fn)
		if method {
			call = "(&recv{k: 2})." + call
		}
		calls = append(calls, fmt.Sprintf("\tfor x := 0; x < 6; x++ { n, err := %s(x, int64(x), \"ab\"); fmt.Println(%d, x, n, err, err != nil) }\n", call, fn))
	}
	b.WriteString("func main() {\n" + strings.Join(calls, "") + "}\n")
	return b.String(), mode
}

// FuzzScopes builds programs whose functions reuse their parameters,
// receiver and named results in top-level short variable declarations,
// return bare, declare results again in blocks, jump to labels and declare
// package-level names again, plain and rewritten with every function
// instrumented in one of the rewrite modes that move a body into a block
// (hook-free copies, one exit site) or not, and checks that the rewritten
// program type-checks, builds, and prints the same with the recorder on
// and off. The seeds cover every statement in every mode.
func FuzzScopes(f *testing.F) {
	if testing.Short() {
		f.Skip("builds programs: skipped with -short")
	}
	for _, seed := range scopeSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		src, mode := scopeProgram(data)
		if !typeChecks(map[string][]byte{"main.go": []byte(src)}) {
			return // a combination Go rejects (a label used twice, say)
		}
		compareRewritten(t, src, scopeModes[mode].name+": ", func(path string) []byte {
			p, out, ids := scopeRewrite(t, path, mode)
			if !typeChecks(map[string][]byte{"main.go": out, HooksFileName: p.HooksFile(ids)}) {
				t.Fatalf("%s: the rewritten program does not type-check\n%s", scopeModes[mode].name, out)
			}
			return out
		})
	})
}

// scopeRewrite rewrites the program at path in the given mode, with every
// function that has calls instrumented and main.main as id 1.
func scopeRewrite(t *testing.T, path string, mode int) (*Plan, []byte, []uint32) {
	t.Helper()
	p, err := NewPlan([]string{path}, Options{PkgPath: "main", InlineBudget: -1, ReturnExits: true, CopyBudget: scopeModes[mode].copyBudget})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint32, len(p.Funcs))
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	for i, fn := range p.Funcs {
		if fn.Name == "main" {
			ids[i], ids[0] = ids[0], ids[i] // main.main is id 1
		}
	}
	out, err := p.Apply(ids)
	if err != nil {
		t.Fatal(err)
	}
	return p, out[0].Src, ids
}

// scopeSeeds returns FuzzScopes's seeds: in each mode, functions of one to
// four statements that together use every statement, the first of each
// function first.
func scopeSeeds() [][]byte {
	var seeds [][]byte
	for mode := range scopeModes {
		seed := []byte{byte(mode)}
		for fn := 0; fn*4 < len(scopeStmts)+4 && fn < 8; fn++ {
			seed = append(seed, 3) // four statements
			for k := range 4 {
				i := (fn*4 + k) % len(scopeStmts)
				seed = append(seed, byte(i), byte(fn+k*3))
			}
		}
		seeds = append(seeds, seed)
	}
	return seeds
}

// TestScopeSeedsTypeCheck is FuzzScopes's type check alone, for -short: the
// seeds rewritten in every mode type-check, and the modes that should move
// bodies into blocks do.
func TestScopeSeedsTypeCheck(t *testing.T) {
	for _, seed := range scopeSeeds() {
		src, mode := scopeProgram(seed)
		if !typeChecks(map[string][]byte{"main.go": []byte(src)}) {
			t.Fatalf("seed %x: the program does not type-check\n%s", seed, src)
		}
		path := filepath.Join(t.TempDir(), "main.go")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		p, out, ids := scopeRewrite(t, path, mode)
		if !typeChecks(map[string][]byte{"main.go": out, HooksFileName: p.HooksFile(ids)}) {
			t.Fatalf("%s: the rewritten program does not type-check\n%s", scopeModes[mode].name, out)
		}
		text := string(out)
		switch scopeModes[mode].name {
		case "copy":
			copied := map[string]bool{}
			for _, name := range p.Copied {
				copied[name] = true
			}
			for _, fn := range p.Funcs {
				if strings.HasPrefix(fn.Name, "f") || strings.HasPrefix(fn.Name, "(*recv).f") {
					if !copied[fn.Name] {
						t.Errorf("copy mode: %s not copied", fn.Name)
					}
				}
			}
		case "one exit site":
			if !strings.Contains(text, "goto "+exitLabel) {
				t.Errorf("one exit site mode: no goto %s", exitLabel)
			}
		}
		if scopeModes[mode].copyBudget > DefaultCopyBudget || scopeModes[mode].many {
			if !strings.Contains(text, redeclPrefix+"0 := err;") {
				t.Errorf("%s: err's reuse is not kept\n%s", scopeModes[mode].name, text)
			}
		}
	}
}
