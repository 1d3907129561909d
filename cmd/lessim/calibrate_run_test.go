package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	refRouteCSV   = "../../../shared/reference/traces/qwen.route.csv"
	refMetricsCSV = "../../../shared/reference/runs/qwen.metrics.csv"
)

// TestCalibrateFromRun fits the ufs4 profile to the reference phone run
// (BigMoeOnEdge, github.com/Helldez/BigMoeOnEdge, Apache-2.0): the profile is
// written and validates, the plot is drawn, the output is pinned.
func TestCalibrateFromRun(t *testing.T) {
	route, _ := filepath.Abs(refRouteCSV)
	metrics, _ := filepath.Abs(refMetricsCSV)
	for _, p := range []string{route, metrics} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("reference data absent: %v", err)
		}
	}
	dir := t.TempDir()
	runCLI(t, dir, "trace", "import", route, "--out", "qwen.parquet", "--quiet")
	got := runCLI(t, dir, "calibrate", "--from-run", metrics, "--trace", "qwen.parquet", "--device", "ufs4-phone-12gb", "--out", "my-phone.yaml")
	golden(t, "calibrate-from-run", got)
	for _, f := range []string{"my-phone.yaml", "my-phone-fit.png", "my-phone-fit.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	sim := runCLI(t, dir, "simulate", "--trace", "qwen.parquet", "--device-file", "my-phone.yaml", "--policy", "lru", "--cache", "4000MiB", "--prefill")
	if !strings.Contains(sim, "throughput") {
		t.Errorf("the fitted profile does not simulate:\n%s", sim)
	}
}

func TestCalibrateFromRunBadInput(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.csv"), []byte("step,wall_ms\n1,2\n2,NaN\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate"}, "calibrate needs --out"},
		{[]string{"calibrate", "--out", "o.yaml"}, "calibrate needs --model (measure this machine) or --from-run"},
		{[]string{"calibrate", "--from-run", "run.csv", "--device", "ufs4-phone-12gb", "--out", "o.yaml"}, "needs --trace (the run's routing)"},
		{[]string{"calibrate", "--from-run", "run.csv", "--model", "m.gguf", "--out", "o.yaml"}, "--model does not apply with --from-run"},
		{[]string{"calibrate", "--model", "m.gguf", "--trace", "t.parquet", "--out", "o.yaml"}, "--trace does not apply without --from-run"},
		{[]string{"calibrate", "--from-run", "run.csv", "--trace", "t.parquet", "--device", "ufs4-phone-12gb", "--out", "run.csv"}, "run.csv"},
		{[]string{"calibrate", "--from-run", "run.csv", "--run-format", "nope", "--trace", "t.parquet", "--device", "ufs4-phone-12gb", "--out", "o.yaml"}, `unknown run format "nope" (valid: bmoe-metrics-csv, lessim-live-series)`},
		{[]string{"calibrate", "--from-run", "run.csv", "--trace", "t.parquet", "--device", "ufs4-phone-12gb", "--out", "o.yaml"}, "run.csv:3: column wall_ms"},
		{[]string{"calibrate", "--from-run", "missing.csv", "--trace", "t.parquet", "--device", "ufs4-phone-12gb", "--out", "o.yaml"}, "missing.csv"},
	} {
		got := runCLI(t, dir, c.args...)
		if !strings.Contains(got, "lessim: ") || !strings.Contains(got, c.want) {
			t.Errorf("%v: got %q, want an error with %q", c.args, got, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.yaml")); err == nil {
		t.Error("a failed calibration wrote its output")
	}
}
