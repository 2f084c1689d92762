package idalloc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matrixgo/matrix/internal/uuidv4"
)

// Environment of helper processes started by tests (see TestHelperProcess).
const (
	envHelper = "IDALLOC_TEST_HELPER" // "alloc" or "partial"
	envMap    = "IDALLOC_TEST_MAP"
	envOut    = "IDALLOC_TEST_OUT"
	envProc   = "IDALLOC_TEST_PROC"
	envStart  = "IDALLOC_TEST_START"
	envReady  = "IDALLOC_TEST_READY"
)

// funcsFor returns the functions j in [from, to) of a test package, in the
// name forms the compiler wrapper produces.
func funcsFor(from, to int) []Func {
	var fs []Func
	for j := from; j < to; j++ {
		var f Func
		switch j % 5 {
		case 0:
			f = Func{Name: fmt.Sprintf("F%d", j), Kind: KindFunc}
		case 1:
			f = Func{Name: fmt.Sprintf("(*T%d).Method", j), Kind: KindMethod}
		case 2:
			f = Func{Name: fmt.Sprintf("(*List%d[...]).Push", j), Kind: KindMethod}
		case 3:
			f = Func{Name: fmt.Sprintf("F%d.func1", j), Kind: KindClosure}
		case 4:
			f = Func{Name: fmt.Sprintf("init.%d", j), Kind: KindInit}
		}
		f.Pos = fmt.Sprintf("/src/my project/file%d.go:%d", j%7, j+1)
		fs = append(fs, f)
	}
	return fs
}

func mustAllocate(t testing.TB, m *Map, pkg string, funcs []Func) []uint32 {
	t.Helper()
	ids, err := m.Allocate(pkg, funcs)
	if err != nil {
		t.Fatalf("Allocate(%s): %v", pkg, err)
	}
	if len(ids) != len(funcs) {
		t.Fatalf("Allocate(%s): %d ids for %d funcs", pkg, len(ids), len(funcs))
	}
	return ids
}

func mustOpen(t testing.TB, path string) *Map {
	t.Helper()
	m, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return m
}

func mustLoad(t testing.TB, path string) (map[uint32]Entry, string) {
	t.Helper()
	entries, id, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return entries, id
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkWellFormed checks the file line by line independently of parseMap:
// header, trailing newline, 5 fields, strictly increasing ids, unique keys.
// It returns the record ids in file order.
func checkWellFormed(t testing.TB, path string) []uint32 {
	t.Helper()
	data := readFile(t, path)
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "# matrix method mapping v1 id=") {
		t.Fatalf("bad header %q", lines[0])
	}
	var ids []uint32
	keys := map[string]bool{}
	for i, l := range lines[1:] {
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.SplitN(l, " ", 5)
		if len(f) != 5 {
			t.Fatalf("line %d: %q: want 5 fields", i+2, l)
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 || id > MaxID {
			t.Fatalf("line %d: bad id %q", i+2, f[0])
		}
		if len(ids) > 0 && uint32(id) <= ids[len(ids)-1] {
			t.Fatalf("line %d: id %d not increasing", i+2, id)
		}
		if k := f[2] + " " + f[3]; keys[k] {
			t.Fatalf("line %d: duplicate key %s", i+2, k)
		} else {
			keys[k] = true
		}
		ids = append(ids, uint32(id))
	}
	return ids
}

func TestStability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "methodMapping.txt")
	m := mustOpen(t, path)
	if !uuidv4.Canonical(m.Identity()) {
		t.Fatalf("Identity %q is not a UUID", m.Identity())
	}
	if m.Path() != path {
		t.Fatalf("Path = %q, want %q", m.Path(), path)
	}
	a := funcsFor(0, 10)
	ids1 := mustAllocate(t, m, "example.com/a", a)
	for i, id := range ids1 {
		if id != uint32(i+1) {
			t.Fatalf("first allocation: ids %v, want 1..10", ids1)
		}
	}
	// Same keys again on the same map, in another order, with another
	// position (the function moved): same ids.
	rev := append([]Func(nil), a...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	rev[0].Pos = "moved.go:99"
	ids2 := mustAllocate(t, m, "example.com/a", rev)
	for i := range rev {
		if ids2[i] != ids1[len(a)-1-i] {
			t.Fatalf("reallocation changed ids: %v vs %v", ids2, ids1)
		}
	}

	// Reopen: same identity, same ids; new keys get new, larger ids.
	m2 := mustOpen(t, path)
	if m2.Identity() != m.Identity() {
		t.Fatalf("identity changed on reopen: %s vs %s", m2.Identity(), m.Identity())
	}
	ids3 := mustAllocate(t, m2, "example.com/a", funcsFor(5, 15))
	for i := 0; i < 5; i++ {
		if ids3[i] != ids1[5+i] {
			t.Fatalf("reopened map changed id of %s: %d vs %d", a[5+i].Name, ids3[i], ids1[5+i])
		}
	}
	for i := 5; i < 10; i++ {
		if ids3[i] != uint32(11+i-5) {
			t.Fatalf("new keys: got ids %v, want 11..15 at the end", ids3)
		}
	}
	// Same function name in another package is another key.
	idsB := mustAllocate(t, m2, "example.com/b", funcsFor(0, 2))
	if idsB[0] != 16 || idsB[1] != 17 {
		t.Fatalf("package b: ids %v, want [16 17]", idsB)
	}
	// A name listed twice in one call gets one id.
	dup := mustAllocate(t, m2, "example.com/c", []Func{{"G", KindFunc, "g.go:1"}, {"G", KindFunc, "g.go:1"}, {"H", KindFunc, ""}})
	if dup[0] != 18 || dup[1] != 18 || dup[2] != 19 {
		t.Fatalf("duplicate names in one call: ids %v, want [18 18 19]", dup)
	}
	// The old Map still sees what m2 appended.
	if got := mustAllocate(t, m, "example.com/b", funcsFor(1, 2)); got[0] != 17 {
		t.Fatalf("first Map sees id %d for b.(*T1).Method, want 17", got[0])
	}

	ids := checkWellFormed(t, path)
	if len(ids) != 19 {
		t.Fatalf("file has %d records, want 19", len(ids))
	}
	entries, identity := mustLoad(t, path)
	if identity != m.Identity() || len(entries) != 19 {
		t.Fatalf("Load: identity %s, %d entries", identity, len(entries))
	}
	want := Entry{ID: 2, Kind: KindMethod, Pkg: "example.com/a", Func: "(*T1).Method", Pos: "/src/my project/file1.go:2"}
	if entries[2] != want {
		t.Fatalf("entry 2 = %+v, want %+v", entries[2], want)
	}
	if entries[19].Pos != "-" {
		t.Fatalf("empty position recorded as %q, want -", entries[19].Pos)
	}
}

func TestAllocateNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	before := readFile(t, path)
	ids, err := m.Allocate("p", nil)
	if err != nil || len(ids) != 0 {
		t.Fatalf("Allocate(nil) = %v, %v", ids, err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("empty Allocate changed the file")
	}
}

func TestInvalidInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	before := readFile(t, path)
	for _, tc := range []struct {
		pkg string
		f   Func
	}{
		{"", Func{"F", KindFunc, "f.go:1"}},
		{"a b", Func{"F", KindFunc, "f.go:1"}},
		{"p", Func{"", KindFunc, "f.go:1"}},
		{"p", Func{"(*List[int, string]).Push", KindMethod, "f.go:1"}},
		{"p", Func{"F", "lambda", "f.go:1"}},
		{"p", Func{"F", KindFunc, "f.go:1\n2 func p G x"}},
	} {
		if _, err := m.Allocate(tc.pkg, []Func{tc.f}); err == nil || !strings.HasPrefix(err.Error(), "idalloc: ") {
			t.Errorf("Allocate(%q, %+v): err = %v, want an idalloc error", tc.pkg, tc.f, err)
		}
	}
	if err := m.RecordSkipped("p", []Skip{{"F", "two words", "f.go:1"}}); err == nil {
		t.Error("RecordSkipped with a multi-word reason succeeded")
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("invalid input changed the map")
	}
}

// TestHelperProcess is not a real test: it is the body of the helper
// processes that the other tests start by re-executing the test binary.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("helper process for other tests")
	}
	var err error
	switch mode {
	case "alloc":
		err = helperAlloc()
	case "partial":
		err = helperPartial()
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

const (
	concProcs    = 8
	concPkgs     = 20
	concFuncs    = 50
	concUniverse = 100 // distinct functions per package across processes
)

// concPlan says which functions process proc allocates for package p.
func concPlan(proc, p int) (from, to int) {
	from = (proc*13 + p*7) % (concUniverse - concFuncs + 1)
	return from, from + concFuncs
}

// helperAlloc waits for the start signal, opens the (maybe not yet existing)
// map and allocates for every package, writing "identity <uuid>" and then
// "<pkg> <func> <id>" lines to the output file.
func helperAlloc() error {
	proc, err := strconv.Atoi(os.Getenv(envProc))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(os.Getenv(envStart)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("no start signal")
		}
		time.Sleep(time.Millisecond)
	}
	m, err := Open(os.Getenv(envMap))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "identity %s\n", m.Identity())
	rng := rand.New(rand.NewSource(int64(proc)))
	for k := 0; k < concPkgs; k++ {
		p := (k + proc*3) % concPkgs
		pkg := fmt.Sprintf("example.com/mod/p%02d", p)
		funcs := funcsFor(concPlan(proc, p))
		rng.Shuffle(len(funcs), func(i, j int) { funcs[i], funcs[j] = funcs[j], funcs[i] })
		ids, err := m.Allocate(pkg, funcs)
		if err != nil {
			return err
		}
		for i, f := range funcs {
			fmt.Fprintf(&out, "%s %s %d\n", pkg, f.Name, ids[i])
		}
		skips := []Skip{{funcs[0].Name, "trivial", funcs[0].Pos}, {"helper", "no-calls", "h.go:1"}}
		if err := m.RecordSkipped(pkg, skips); err != nil {
			return err
		}
	}
	return os.WriteFile(os.Getenv(envOut), out.Bytes(), 0o666)
}

func helperCmd(t *testing.T, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = new(bytes.Buffer)
	return cmd
}

func TestConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "map", "methodMapping.txt") // created by the helpers
	start := filepath.Join(dir, "start")
	var cmds []*exec.Cmd
	for proc := 0; proc < concProcs; proc++ {
		cmd := helperCmd(t,
			envHelper+"=alloc",
			envMap+"="+path,
			envProc+"="+strconv.Itoa(proc),
			envStart+"="+start,
			envOut+"="+filepath.Join(dir, fmt.Sprintf("out%d", proc)),
		)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	if err := os.WriteFile(start, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, cmd.Stderr)
		}
	}

	ids := checkWellFormed(t, path)
	entries, identity := mustLoad(t, path)

	// Expected keys: the union of all plans.
	want := map[string]bool{}
	for proc := 0; proc < concProcs; proc++ {
		for p := 0; p < concPkgs; p++ {
			for _, f := range funcsFor(concPlan(proc, p)) {
				want[fmt.Sprintf("example.com/mod/p%02d %s", p, f.Name)] = true
			}
		}
	}
	n := len(want)
	if n <= concFuncs*concPkgs || n >= concProcs*concPkgs*concFuncs {
		t.Fatalf("test plan does not overlap as intended: %d keys", n)
	}
	// No lost id: exactly 1..N, in order.
	if len(ids) != n || len(entries) != n {
		t.Fatalf("map has %d records (%d loaded), want %d", len(ids), len(entries), n)
	}
	for i, id := range ids {
		if id != uint32(i+1) {
			t.Fatalf("record %d has id %d: ids are not 1..%d", i, id, n)
		}
	}
	// No key with two ids, no unexpected key.
	byKey := map[string]uint32{}
	for id, e := range entries {
		k := e.Pkg + " " + e.Func
		if !want[k] {
			t.Fatalf("unexpected key %s", k)
		}
		if prev, ok := byKey[k]; ok {
			t.Fatalf("key %s has ids %d and %d", k, prev, id)
		}
		byKey[k] = id
	}
	// Every process saw the map's id for every key, and the same identity.
	for proc := 0; proc < concProcs; proc++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("out%d", proc)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan()
		if got := sc.Text(); got != "identity "+identity {
			t.Fatalf("process %d: %q, want identity %s", proc, got, identity)
		}
		lines := 0
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			k := fields[0] + " " + fields[1]
			if fields[2] != strconv.Itoa(int(byKey[k])) {
				t.Fatalf("process %d saw id %s for %s, map has %d", proc, fields[2], k, byKey[k])
			}
			lines++
		}
		f.Close()
		if lines != concPkgs*concFuncs {
			t.Fatalf("process %d reported %d ids", proc, lines)
		}
	}

	// Skipped file: no (pkg, func, reason) twice.
	seen := map[string]bool{}
	for i, l := range strings.Split(strings.TrimSuffix(string(readFile(t, path+".skipped")), "\n"), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.SplitN(l, " ", 4)
		if len(f) != 4 {
			t.Fatalf("skipped line %d: %q", i+1, l)
		}
		k := f[0] + " " + f[1] + " " + f[2]
		if seen[k] {
			t.Fatalf("skipped line %d duplicates %s", i+1, k)
		}
		seen[k] = true
	}
}

// TestConcurrentGoroutines checks Maps shared by goroutines and several Maps
// of one file in one process (run with -race).
func TestConcurrentGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	shared := mustOpen(t, path)
	var wg sync.WaitGroup
	results := make([][]uint32, 8)
	errs := make([]error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := shared
			if g%2 == 1 {
				var err error
				if m, err = Open(path); err != nil {
					errs[g] = err
					return
				}
			}
			results[g], errs[g] = m.Allocate("example.com/g", funcsFor(0, 30))
		}()
	}
	wg.Wait()
	for g := range results {
		if errs[g] != nil {
			t.Fatal(errs[g])
		}
		for i, id := range results[g] {
			if id != results[0][i] {
				t.Fatalf("goroutine %d got id %d for %d, goroutine 0 got %d", g, id, i, results[0][i])
			}
		}
	}
	if ids := checkWellFormed(t, path); len(ids) != 30 || ids[29] != 30 {
		t.Fatalf("map has ids %v, want 1..30", ids)
	}
}

// helperPartial allocates with a hook that writes one line and half of the
// next, signals, and blocks until killed.
func helperPartial() error {
	m, err := Open(os.Getenv(envMap))
	if err != nil {
		return err
	}
	testHookAppend = func(f *os.File, off int64, buf []byte) {
		first := bytes.IndexByte(buf, '\n') + 1
		second := bytes.IndexByte(buf[first:], '\n') + 1
		cut := first + second/2
		if _, err := f.WriteAt(buf[:cut], off); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		if err := os.WriteFile(os.Getenv(envReady), buf[:cut], 0o666); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		time.Sleep(time.Hour) // holding the lock, until SIGKILL
	}
	_, err = m.Allocate("example.com/b", funcsFor(0, 4))
	return fmt.Errorf("Allocate returned (%v) instead of blocking", err)
}

func TestKilledMidAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "methodMapping.txt")
	ready := filepath.Join(dir, "ready")
	m := mustOpen(t, path)
	idsA := mustAllocate(t, m, "example.com/a", funcsFor(0, 3))
	before := readFile(t, path)

	cmd := helperCmd(t, envHelper+"=partial", envMap+"="+path, envReady+"="+ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var written []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if written, err = os.ReadFile(ready); err == nil && len(written) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper never wrote: %s", cmd.Stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	_ = cmd.Wait()

	after := readFile(t, path)
	if !bytes.Equal(after, append(append([]byte(nil), before...), written...)) {
		t.Fatalf("unexpected file after the kill:\n%s", after)
	}
	if after[len(after)-1] == '\n' {
		t.Fatal("test setup: no partial last line")
	}
	completeLine := string(written[:bytes.IndexByte(written, '\n')+1])
	partial := string(written[len(completeLine):])

	// Readers ignore the partial line; the complete one counts.
	entries, _ := mustLoad(t, path)
	if len(entries) != 4 || entries[4].Func != "F0" || entries[4].Pkg != "example.com/b" {
		t.Fatalf("after kill: entries %v, want a..3 and b.F0 as 4", entries)
	}
	fresh := mustOpen(t, path)

	// The next writer (a Map opened before the kill) truncates the partial
	// line and appends after it.
	ids := mustAllocate(t, m, "example.com/b", funcsFor(0, 4))
	if want := []uint32{4, 5, 6, 7}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("ids after kill = %v, want %v", ids, want)
	}
	final := readFile(t, path)
	if strings.Contains(string(final), partial+"\n") || !strings.HasPrefix(string(final), string(before)+completeLine) {
		t.Fatalf("partial line not truncated:\n%s", final)
	}
	if got := checkWellFormed(t, path); len(got) != 7 || got[6] != 7 {
		t.Fatalf("final ids %v, want 1..7", got)
	}
	// A Map opened while the partial line was there agrees.
	if got := mustAllocate(t, fresh, "example.com/b", funcsFor(3, 5)); got[0] != 7 || got[1] != 8 {
		t.Fatalf("fresh map ids %v, want [7 8]", got)
	}
	if got := mustAllocate(t, fresh, "example.com/a", funcsFor(0, 3)); fmt.Sprint(got) != fmt.Sprint(idsA) {
		t.Fatalf("ids of a changed: %v vs %v", got, idsA)
	}
	checkWellFormed(t, path)
}

func TestPartialLineOnly(t *testing.T) {
	// A map whose only problem is an unterminated last line loads fine.
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	mustAllocate(t, m, "p", funcsFor(0, 2))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("3 func p gar")
	f.Close()
	if entries, _ := mustLoad(t, path); len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	mustOpen(t, path)
	// Nothing new to write: the file is left alone.
	before := readFile(t, path)
	mustAllocate(t, m, "p", funcsFor(0, 2))
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("Allocate of existing keys rewrote the file")
	}
}

const testHeader = "# matrix method mapping v1 id=0b6e5c9a-3f1d-4e2b-9c7a-1d2e3f405162\n"

func TestCorruption(t *testing.T) {
	good := "1 func p A a.go:1\n2 method p (*T).M a.go:2\n"
	for _, tc := range []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"garbled line", testHeader + good + "3 func p\n4 func p D a.go:4\n", 4, "want 5 fields"},
		{"double space", testHeader + good + "3 func  p D a.go:4\n", 4, "empty field"},
		{"bad id", testHeader + "# comment\n" + good + "x3 func p C a.go:3\n", 5, "bad id"},
		{"leading zero", testHeader + good + "03 func p C a.go:3\n", 4, "bad id"},
		{"reserved id", testHeader + good + "1048574 func p C a.go:3\n", 4, "DISPATCH"},
		{"id out of range", testHeader + good + "1048575 func p C a.go:3\n", 4, "out of range"},
		{"bad kind", testHeader + good + "3 lambda p C a.go:3\n", 4, "unknown kind"},
		{"non-increasing id", testHeader + good + "2 func p C a.go:3\n", 4, "not greater"},
		{"decreasing id", testHeader + "5 func p A a.go:1\n\n3 func p B a.go:2\n", 4, "not greater"},
		{"duplicate key", testHeader + good + "3 method p (*T).M b.go:9\n", 4, "duplicate key p (*T).M"},
		{"bad header", "# some other file\n" + good, 1, "bad header"},
		{"no header", good, 1, "bad header"},
		{"empty file", "", 1, "missing header"},
		{"partial header", "# matrix method mapping v1 id=0b6e", 1, "missing header"},
		{"missing identity", "# matrix method mapping v1\n" + good, 1, "no map identity"},
		{"garbled identity", "# matrix method mapping v1 id=0b6e5c9a-zzzz\n" + good, 1, "garbled map identity"},
		{"future version", "# matrix method mapping v2 id=0b6e5c9a-3f1d-4e2b-9c7a-1d2e3f405162\n" + good, 1, "unsupported map version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "methodMapping.txt")
			if err := os.WriteFile(path, []byte(tc.content), 0o666); err != nil {
				t.Fatal(err)
			}
			wantPrefix := fmt.Sprintf("idalloc: %s:%d: ", path, tc.line)
			check := func(what string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s succeeded on a corrupt map", what)
				}
				if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("%s error = %q, want prefix %q and %q", what, err, wantPrefix, tc.msg)
				}
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Path != path || ce.Line != tc.line {
					t.Fatalf("%s error %v is not a *CorruptError for line %d", what, err, tc.line)
				}
			}
			_, err := Open(path)
			check("Open", err)
			_, _, err = Load(path)
			check("Load", err)
			if got := readFile(t, path); string(got) != tc.content {
				t.Fatalf("corrupt map was modified:\n%s", got)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("Open created files next to a corrupt map: %v", ents)
			}
		})
	}
}

// TestCorruptionAppendedLater: a Map opened on a good file finds a garbled
// line appended by someone else and refuses to write.
func TestCorruptionAppendedLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	mustAllocate(t, m, "p", funcsFor(0, 2))
	mustAllocate(t, m, "q", funcsFor(0, 2))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("5 func r A a.go:1\n6 func r\n")
	f.Close()
	before := readFile(t, path)
	wantPrefix := path + ":8: " // header, columns comment, 4 records, good line, bad line
	for _, pkg := range []string{"p", "r", "s"} {
		_, err := m.Allocate(pkg, funcsFor(0, 3))
		if err == nil || !strings.Contains(err.Error(), wantPrefix) {
			t.Fatalf("Allocate(%s) error = %v, want it to name %q", pkg, err, wantPrefix)
		}
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("map modified")
	}
}

// TestDuplicateAppendedLater: a key appended twice by a misbehaving writer is
// caught by the next Allocate of any package, without writing.
func TestDuplicateAppendedLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	mustAllocate(t, m, "p", funcsFor(0, 2)) // 1 p F0, 2 p (*T1).Method
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# a comment\n3 func q A a.go:1\n4 func p F0 a.go:1\n")
	f.Close()
	before := readFile(t, path)
	_, err = m.Allocate("s", funcsFor(0, 1))
	if err == nil || !strings.HasPrefix(err.Error(), "idalloc: "+path+":7: duplicate key p F0") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), path+":7:") {
		t.Fatalf("Open: err = %v", err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("map modified")
	}
}

func TestMapReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	mustAllocate(t, m, "p", funcsFor(0, 2))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	m2 := mustOpen(t, path)
	if m2.Identity() == m.Identity() {
		t.Fatal("new map has the old identity")
	}
	_, err := m.Allocate("p", funcsFor(0, 3))
	if err == nil || !strings.Contains(err.Error(), "replaced") || !strings.Contains(err.Error(), m2.Identity()) {
		t.Fatalf("Allocate on a replaced map: err = %v", err)
	}
	if ids := checkWellFormed(t, path); len(ids) != 0 {
		t.Fatalf("old Map wrote into the new map: %v", ids)
	}
	// Truncated under a Map's feet.
	mustAllocate(t, m2, "p", funcsFor(0, 3))
	data := readFile(t, path)
	if err := os.WriteFile(path, data[:len(data)-20], 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Allocate("p", funcsFor(0, 4)); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("Allocate on a truncated map: err = %v", err)
	}
	// Deleted under a Map's feet: no silent re-creation.
	os.Remove(path)
	if _, err := m2.Allocate("p", funcsFor(0, 4)); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Allocate on a deleted map: err = %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("Allocate recreated a deleted map")
	}
}

func TestExhaustion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	content := testHeader + "1 func p A a.go:1\n2 func p B a.go:2\n1048570 func p C a.go:3\n"
	if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	m := mustOpen(t, path)

	// Existing keys plus 5 new ones: only 3 ids remain.
	_, err := m.Allocate("q", funcsFor(0, 5))
	if err == nil {
		t.Fatal("Allocate of 5 new funcs succeeded with 3 ids left")
	}
	if !errors.Is(err, ErrExhausted) ||
		!strings.HasPrefix(err.Error(), "idalloc: id space exhausted: ") ||
		!strings.HasSuffix(err.Error(), ", split the build or blacklist packages") {
		t.Fatalf("error = %q", err)
	}
	if got := readFile(t, path); string(got) != content {
		t.Fatalf("failed allocation wrote to the map:\n%s", got)
	}

	// Known keys still resolve even when new ones do not fit.
	if ids := mustAllocate(t, m, "p", []Func{{"C", KindFunc, "a.go:3"}}); ids[0] != 1048570 {
		t.Fatalf("existing key got %d", ids[0])
	}
	ids := mustAllocate(t, m, "q", funcsFor(0, 3))
	if fmt.Sprint(ids) != "[1048571 1048572 1048573]" {
		t.Fatalf("ids = %v", ids)
	}
	if _, err := m.Allocate("q", funcsFor(3, 4)); !errors.Is(err, ErrExhausted) {
		t.Fatalf("Allocate past MaxID: err = %v", err)
	}
	entries, _ := mustLoad(t, path)
	if _, ok := entries[Dispatch]; ok || len(entries) != 6 {
		t.Fatalf("entries %v", entries)
	}
	checkWellFormed(t, path)
}

func TestSkippedDedupe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "methodMapping.txt")
	m := mustOpen(t, path)
	skipPath := path + ".skipped"
	if err := m.RecordSkipped("p", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(skipPath); err == nil {
		t.Fatal("RecordSkipped(nil) created the skipped file")
	}
	first := []Skip{
		{"F", "no-calls", "/src/my dir/f.go:1"},
		{"(*T).M", "pragma:go:nosplit", "f.go:5"},
		{"F", "no-calls", "/src/my dir/f.go:1"}, // listed twice in one call
		{"init.0", "trivial", ""},
	}
	if err := m.RecordSkipped("example.com/p", first); err != nil {
		t.Fatal(err)
	}
	// Again from another Map: old entries are not repeated; a known function
	// with a new reason and the same name in another package are new.
	m2 := mustOpen(t, path)
	second := []Skip{
		{"(*T).M", "pragma:go:nosplit", "f.go:6"},
		{"F", "inlinable", "/src/my dir/f.go:1"},
		{"F", "no-calls", "g.go:1"},
	}
	if err := m2.RecordSkipped("example.com/p", second); err != nil {
		t.Fatal(err)
	}
	if err := m2.RecordSkipped("example.com/q", second[:1]); err != nil {
		t.Fatal(err)
	}
	if err := m.RecordSkipped("example.com/p", first); err != nil {
		t.Fatal(err)
	}
	want := skippedHeader +
		"example.com/p F no-calls /src/my dir/f.go:1\n" +
		"example.com/p (*T).M pragma:go:nosplit f.go:5\n" +
		"example.com/p init.0 trivial -\n" +
		"example.com/p F inlinable /src/my dir/f.go:1\n" +
		"example.com/q (*T).M pragma:go:nosplit f.go:6\n"
	if got := string(readFile(t, skipPath)); got != want {
		t.Fatalf("skipped file:\n%s\nwant:\n%s", got, want)
	}

	// A partial last line is dropped by the next append.
	f, err := os.OpenFile(skipPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("example.com/r G cg")
	f.Close()
	if err := m.RecordSkipped("example.com/r", []Skip{{"G", "cgo", "g.go:1"}}); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, skipPath)); got != want+"example.com/r G cgo g.go:1\n" {
		t.Fatalf("after partial line:\n%s", got)
	}

	// A garbled complete line is an error naming file and line.
	f, _ = os.OpenFile(skipPath, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("garbage\n")
	f.Close()
	before := readFile(t, skipPath)
	err = m.RecordSkipped("example.com/s", []Skip{{"G", "cgo", "g.go:1"}})
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("idalloc: %s:8: ", skipPath)) {
		t.Fatalf("garbled skipped file: err = %v", err)
	}
	if !bytes.Equal(before, readFile(t, skipPath)) {
		t.Fatal("garbled skipped file was modified")
	}
	// The map itself is untouched by all this.
	if ids := checkWellFormed(t, path); len(ids) != 0 {
		t.Fatalf("map has records %v", ids)
	}
}

func TestConcurrentCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "m.txt")
	var wg sync.WaitGroup
	ids := make([]string, 16)
	errs := make([]error, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := Open(path)
			if err == nil {
				ids[i] = m.Identity()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("two identities: %s and %s", ids[0], ids[i])
		}
	}
	_, identity := mustLoad(t, path)
	if identity != ids[0] {
		t.Fatalf("file identity %s, Open said %s", identity, ids[0])
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestBadPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		filepath.Join(file, "methodMapping.txt"), // parent is a file
		dir,                                      // a directory
	} {
		_, err := Open(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.HasPrefix(err.Error(), "idalloc: ") {
			t.Errorf("Open(%s): err = %v, want an error naming the path", path, err)
		}
	}
	if _, err := Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	if _, _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Load(missing): err = %v", err)
	}
}

func TestPermissions(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions are not enforced")
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	path := filepath.Join(ro, "m.txt")
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open in a read-only directory: err = %v", err)
	}

	// An existing map in a directory that became read-only opens (for
	// reading), but allocation names the lock file it cannot create.
	rw := filepath.Join(dir, "rw")
	path = filepath.Join(rw, "m.txt")
	mustAllocate(t, mustOpen(t, path), "p", funcsFor(0, 1))
	os.Remove(path + ".lock")
	os.Chmod(rw, 0o555)
	t.Cleanup(func() { os.Chmod(rw, 0o755) })
	m := mustOpen(t, path)
	if _, err := m.Allocate("p", funcsFor(0, 2)); err == nil || !strings.Contains(err.Error(), path+".lock") {
		t.Fatalf("Allocate in a read-only directory: err = %v", err)
	}

	unreadable := filepath.Join(dir, "unreadable.txt")
	os.WriteFile(unreadable, []byte(testHeader), 0o000)
	if _, err := Open(unreadable); err == nil || !strings.Contains(err.Error(), unreadable) {
		t.Fatalf("Open of an unreadable map: err = %v", err)
	}
}

// TestTailBookkeeping checks that a long-lived Map keeps track of ids and
// line numbers across appends by others, comments and its own writes.
func TestTailBookkeeping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.txt")
	m := mustOpen(t, path)
	m2 := mustOpen(t, path)
	appendText := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	mustAllocate(t, m, "p", funcsFor(0, 2))  // ids 1, 2
	appendText("# hand-written comment\n\n") // ignored lines
	mustAllocate(t, m2, "q", funcsFor(0, 2)) // ids 3, 4
	appendText("# another\n")
	if got := mustAllocate(t, m, "q", funcsFor(1, 3)); fmt.Sprint(got) != "[4 5]" {
		t.Fatalf("ids %v, want [4 5]", got)
	}
	if got := mustAllocate(t, m2, "p", funcsFor(0, 3)); fmt.Sprint(got) != "[1 2 6]" {
		t.Fatalf("ids %v, want [1 2 6]", got)
	}
	appendText("garbage\n")
	lineOf := func(err error) int {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a *CorruptError", err)
		}
		return ce.Line
	}
	_, err1 := m.Allocate("r", funcsFor(0, 1))
	_, err2 := m2.Allocate("r", funcsFor(0, 1))
	_, err3 := Open(path)
	// header, columns, 2 records, comment, blank, 2 records, comment, 2 records
	if l1, l2, l3 := lineOf(err1), lineOf(err2), lineOf(err3); l1 != 12 || l2 != 12 || l3 != 12 {
		t.Fatalf("corrupt line reported as %d, %d, %d; want 12", l1, l2, l3)
	}
}
