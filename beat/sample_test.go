package beat

import (
	"reflect"
	"testing"

	"github.com/matrixgo/matrix/internal/abi"
)

func TestWithSamplesPlacesByTime(t *testing.T) {
	pt := func(t uint64, pc uint64) sample {
		return sample{t: t, recs: []uint64{abi.Pack(true, abi.ExtID, t), abi.PackExt(abi.ExtSample, abi.SampleCPU, 1), pc, abi.Pack(false, abi.ExtID, t)}}
	}
	goStart := []uint64{abi.Pack(true, abi.ExtID, 20), abi.PackExt(abi.ExtGo, 0, abi.ExtGoWords), 0x99, 1, abi.Pack(false, abi.ExtID, 20)}
	wait := []uint64{abi.Pack(true, abi.ExtID, 30), abi.PackExt(abi.ExtWait, 3, 1), 0x77}
	var recs []uint64
	recs = append(recs, abi.Pack(true, abi.DispatchID, 10), abi.Pack(true, 5, 10))
	recs = append(recs, goStart...)
	recs = append(recs, wait...)
	recs = append(recs, abi.Pack(false, abi.ExtID, 40), abi.Pack(false, 5, 50))

	// A sample at 20 goes after the goroutine's start and its end record,
	// one at 30 after the wait's payload, one at 60 at the end, and one
	// at 15 before the go statement.
	got := withSamples(recs, []sample{pt(15, 0xa), pt(20, 0xb), pt(30, 0xc), pt(60, 0xd)})
	var want []uint64
	want = append(want, recs[:2]...)
	want = append(want, pt(15, 0xa).recs...)
	want = append(want, goStart...)
	want = append(want, pt(20, 0xb).recs...)
	want = append(want, wait...)
	want = append(want, pt(30, 0xc).recs...)
	want = append(want, recs[len(recs)-2:]...)
	want = append(want, pt(60, 0xd).recs...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	if got := withSamples(recs, nil); !reflect.DeepEqual(got, recs) {
		t.Fatalf("without samples: %x", got)
	}
}
