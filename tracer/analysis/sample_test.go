package analysis

import (
	"reflect"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

// sampleRecs returns an ExtSample point at t with pcs.
func sampleRecs(t uint64, pcs ...uint64) []Record {
	out := []Record{Record(abi.Pack(true, abi.ExtID, t)), Record(abi.PackExt(abi.ExtSample, abi.SampleCPU, len(pcs)))}
	for _, pc := range pcs {
		out = append(out, Record(pc))
	}
	return append(out, Record(abi.Pack(false, abi.ExtID, t)))
}

func TestSamplesPlacedUnderTheirCall(t *testing.T) {
	// Function 7 (pcs 0x700..) calls function 8 (0x800..); samples are
	// taken in 8's callee without a hook (0x100), in 7 itself, in a
	// callee of 7 while the clock still reads 8 as open (it names 7: the
	// sample is 7's), and one with no instrumented function at all.
	funcOf := func(pc uint64) uint32 {
		switch pc &^ 0xff {
		case 0x700:
			return 7
		case 0x800:
			return 8
		}
		return 0
	}
	var rs []Record
	add := func(r ...Record) { rs = append(rs, r...) }
	add(Record(abi.Pack(true, abi.DispatchID, 0)), Record(abi.Pack(true, 7, 0)))
	add(sampleRecs(10, 0x701)...)
	add(Record(abi.Pack(true, 8, 20)))
	add(sampleRecs(30, 0x101, 0x102, 0x801, 0x702)...)
	add(sampleRecs(40, 0x201, 0x703)...)
	add(sampleRecs(50, 0x301)...)
	add(Record(abi.Pack(false, 8, 60)), Record(abi.Pack(false, 7, 100)), Record(abi.Pack(false, abi.DispatchID, 100)))

	res := AnalyzeFuncs(rs, Strict, 0, 100, funcOf)
	want := []Item{{0, Dispatch, 1, 100}, {1, 7, 1, 100}, {2, 8, 1, 40}}
	if !reflect.DeepEqual(res.Items, want) {
		t.Fatalf("items %v, want %v", res.Items, want)
	}
	if len(res.Samples) != 3 || res.Samples[0] != nil {
		t.Fatalf("samples %v", res.Samples)
	}
	s7, s8 := res.Samples[1], res.Samples[2]
	if want := [][]uint64{{}, {0x201}}; s7 == nil || !reflect.DeepEqual(s7.Stacks, want) {
		t.Errorf("7's samples %v, want %v", s7, want)
	}
	if want := [][]uint64{{0x101, 0x102}, {0x301}}; s8 == nil || !reflect.DeepEqual(s8.Stacks, want) {
		t.Errorf("8's samples %v, want %v", s8, want)
	}
	// Self times: 7's is 100-40; the sampling began a period before the
	// first sample (at 0): 7 ran from 0, so all its self time counts.
	if s7.Self != 60 || s7.Sampled != 60 || s8.Self != 40 || s8.Sampled != 40 {
		t.Errorf("self times 7: %d/%d, 8: %d/%d", s7.Sampled, s7.Self, s8.Sampled, s8.Self)
	}
	// Without a FuncOf a sample is the innermost open call's, whole.
	res = Analyze(rs, Strict, 0, 100)
	if got := res.Samples[2].Stacks[0]; !reflect.DeepEqual(got, []uint64{0x101, 0x102, 0x801, 0x702}) {
		t.Errorf("without funcOf: %v", got)
	}
}

func TestSamplesCoverOnlyTheSampledTime(t *testing.T) {
	// Function 7 runs from 0 to 100 ms, but the dispatch is sampled only
	// from 50 ms (a period before its first sample, at 60): half its self
	// time is what the samples stand for.
	rs := []Record{Record(abi.Pack(true, abi.DispatchID, 0)), Record(abi.Pack(true, 7, 0))}
	rs = append(rs, sampleRecs(50+abi.SamplePeriodMs, 0x101)...)
	rs = append(rs, Record(abi.Pack(false, 7, 100)), Record(abi.Pack(false, abi.DispatchID, 100)))
	res := Analyze(rs, Strict, 0, 100)
	s := res.Samples[1]
	if s == nil || s.Self != 100 || s.Sampled != 50 {
		t.Fatalf("samples %+v, want self 100 of which 50 sampled", s)
	}
}
