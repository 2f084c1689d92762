package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixgo/matrix/beat"
	"github.com/matrixgo/matrix/tracer/analysis"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"matrixreport": func() { os.Exit(run(os.Args[1:], os.Getenv, "")) },
		// matrixreport as go install …@v1.4.0 builds it.
		"matrixreport-v1.4.0": func() { os.Exit(run(os.Args[1:], os.Getenv, "v1.4.0")) },
	})
}

// TestScripts runs the command-line scripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"mkdump": cmdMkdump,
	}})
}

// mkdump FILE EVENT... writes a raw buffer dump of events "i:ID:MS" or
// "o:ID:MS" (ID may be D) with beat.WriteDump.
func cmdMkdump(ts *testscript.TestScript, neg bool, args []string) {
	var recs []uint64
	for _, ev := range args[1:] {
		f := strings.Split(ev, ":")
		id := uint64(analysis.Dispatch)
		if f[1] != "D" {
			n, err := strconv.ParseUint(f[1], 10, 32)
			ts.Check(err)
			id = n
		}
		ms, err := strconv.ParseUint(f[2], 10, 64)
		ts.Check(err)
		recs = append(recs, uint64(analysis.MakeRecord(f[0] == "i", uint32(id), ms)))
	}
	var b bytes.Buffer
	ts.Check(beat.WriteDump(&b, recs))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b.Bytes(), 0o644))
}
