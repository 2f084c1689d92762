package auto

import "testing"

func TestReportTargetIgnoredInSecureMode(t *testing.T) {
	env := map[string]string{EnvReport: "/tmp/report.jsonl"}
	getenv := func(k string) string { return env[k] }
	if got := reportTarget(getenv, func() bool { return false }); got != "/tmp/report.jsonl" {
		t.Errorf("reportTarget = %q, want MATRIX_REPORT", got)
	}
	if got := reportTarget(getenv, func() bool { return true }); got != "" {
		t.Errorf("reportTarget in secure mode = %q, want it ignored", got)
	}
	env = nil
	if got := reportTarget(getenv, func() bool { return false }); got != "" {
		t.Errorf("reportTarget without MATRIX_REPORT = %q", got)
	}
}
