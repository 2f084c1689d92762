package corpus

import (
	"reflect"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	plain := map[string]string{
		"p TestA":                "pass",
		"p TestB":                "pass",
		"p TestB/sub":            "pass",
		"p TestC":                "fail",
		"p TestD":                "fail",
		"p TestE":                "pass",
		"p TestE/0xc000010000":   "pass", // run-dependent names
		"p TestE/0xc000010008":   "pass",
		"p TestF":                "pass",
		"p TestF/at_09:24:16.95": "pass",
		"p TestF/at_09:24:16.96": "pass",
		"q TestGone":             "pass", // the package did not build instrumented
		"p TestSkip":             "skip",
	}
	instr := map[string]string{
		"p TestA":                "pass",
		"p TestB":                "fail",
		"p TestB/sub":            "fail",
		"p TestC":                "fail",
		"p TestD":                "pass",
		"p TestE":                "pass",
		"p TestE/0xc000020000":   "pass",
		"p TestE/0xc000020008":   "pass",
		"p TestF":                "pass",
		"p TestF/at_09:24:36.95": "pass",
		"p TestF/at_09:24:36.96": "fail",
		"p TestSkip":             "pass",
		"p TestNew":              "pass",
	}
	d := compare(plain, instr)
	check := func(name string, got []string, want ...string) {
		t.Helper()
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, strings.Join(got, ", "), strings.Join(want, ", "))
		}
	}
	check("lost", d.lost, "p TestB", "p TestB/sub", "p TestF", "q TestGone")
	check("onlyInstr", d.onlyInstr, "p TestD", "p TestNew", "p TestSkip")
	check("failedBoth", d.failedBoth, "p TestC")
	check("unstable", d.unstable, "p TestE: 2 subtests pass plain, 2 instrumented", "p TestF: 2 subtests pass plain, 1 instrumented")
}
