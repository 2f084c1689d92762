package idalloc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

const (
	benchPkgs  = 2000
	benchFuncs = 50 // benchPkgs*benchFuncs = 100k records
)

func benchPkg(p int) string { return fmt.Sprintf("github.com/example/project/internal/pkg%04d", p) }

// writeBenchMap writes a 100k-record map of 2000 packages × 50 functions.
func writeBenchMap(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "methodMapping.txt")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(testHeader)
	w.WriteString(columnsLine)
	id := 0
	for p := 0; p < benchPkgs; p++ {
		pkg := benchPkg(p)
		for _, fn := range funcsFor(0, benchFuncs) {
			id++
			fmt.Fprintf(w, "%d %s %s %s /home/user/src/project/internal/pkg%04d/%s\n", id, fn.Kind, pkg, fn.Name, p, fn.Pos[len("/src/my project/"):])
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.Logf("map: %d records, %.1f MB", benchPkgs*benchFuncs, float64(st.Size())/1e6)
	return path
}

// BenchmarkAllocateExisting measures Allocate of a package whose 50
// functions are all in a 100k-record map (the common, incremental case).
func BenchmarkAllocateExisting(b *testing.B) {
	path := writeBenchMap(b)
	m := mustOpen(b, path)
	funcs := funcsFor(0, benchFuncs)
	pkg := benchPkg(benchPkgs / 2)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ids := mustAllocate(b, m, pkg, funcs)
		if ids[0] != benchPkgs/2*benchFuncs+1 {
			b.Fatalf("id %d", ids[0])
		}
	}
}

// BenchmarkOpen measures opening (fully validating) a 100k-record map.
func BenchmarkOpen(b *testing.B) {
	path := writeBenchMap(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustOpen(b, path)
	}
}

// BenchmarkOpenAllocateExisting is what one compile process pays: Open plus
// one Allocate of an already mapped package.
func BenchmarkOpenAllocateExisting(b *testing.B) {
	path := writeBenchMap(b)
	funcs := funcsFor(0, benchFuncs)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustAllocate(b, mustOpen(b, path), benchPkg(i%benchPkgs), funcs)
	}
}

// BenchmarkLoad measures Load of a 100k-record map.
func BenchmarkLoad(b *testing.B) {
	path := writeBenchMap(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordSkippedExisting measures RecordSkipped of 20 already listed
// functions against a 100k-line skipped file.
func BenchmarkRecordSkippedExisting(b *testing.B) {
	path := filepath.Join(b.TempDir(), "methodMapping.txt")
	m := mustOpen(b, path)
	f, err := os.Create(path + ".skipped")
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(skippedHeader)
	for p := 0; p < benchPkgs; p++ {
		for j := 0; j < benchFuncs; j++ {
			fmt.Fprintf(w, "%s F%d trivial /home/user/src/project/internal/pkg%04d/file.go:%d\n", benchPkg(p), j, p, j)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	var skips []Skip
	for j := 0; j < 20; j++ {
		skips = append(skips, Skip{Name: fmt.Sprintf("F%d", j), Reason: "trivial", Pos: "file.go:1"})
	}
	before, _ := os.Stat(path + ".skipped")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.RecordSkipped(benchPkg(i%benchPkgs), skips); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if after, _ := os.Stat(path + ".skipped"); after.Size() != before.Size() {
		b.Fatal("RecordSkipped of listed entries appended")
	}
}
