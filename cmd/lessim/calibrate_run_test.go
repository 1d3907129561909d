package main

import (
	"os"
	"path/filepath"
	"slices"
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
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "r.csv"), []byte("step,wall_ms\n1,2\n2,0\n"), 0o644)
	from := []string{"calibrate", "--from-run", "run.csv", "--trace", "t.parquet", "--device", "ufs4-phone-12gb"}
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
		{[]string{"calibrate", "--from-run", "sub/r.csv", "--trace", "t.parquet", "--device", "ufs4-phone-12gb", "--out", "o.yaml"}, "lessim: sub/r.csv:3: column wall_ms: 0 is not a positive time"},
		{slices.Concat(from, []string{"--out", "o.png", "--plot", "o"}), "--out o.png and the plot o.png (--plot o) are the same file"},
		{slices.Concat(from, []string{"--out", "o.svg", "--plot", "o.png"}), "--out o.svg and the plot o.svg (--plot o) are the same file"},
		{[]string{"calibrate", "--from-run", "run.csv", "--trace", "t.png", "--device", "ufs4-phone-12gb", "--out", "o.yaml", "--plot", "t"}, "output t.png is the input t.png"},
		{slices.Concat(from, []string{"--out", "o.yaml", "--layout", "gguf-mmap"}), "--layout gguf-mmap: a bmoe-metrics-csv run is BigMoeOnEdge's"},
	} {
		got := runCLI(t, dir, c.args...)
		if !strings.Contains(got, "lessim: ") || !strings.Contains(got, c.want) {
			t.Errorf("%v: got %q, want an error with %q", c.args, got, c.want)
		}
	}
	for _, f := range []string{"o.yaml", "o.png", "o.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a failed calibration wrote %s", f)
		}
	}
}

// TestCalibrateFromRunRefusesReference: the QA repros on the reference run
// (BigMoeOnEdge, github.com/Helldez/BigMoeOnEdge, Apache-2.0) are refused
// with their reason, and nothing is written: another model's trace, a
// metrics file edited or cut short, an unknown policy (said once).
func TestCalibrateFromRunRefusesReference(t *testing.T) {
	route, _ := filepath.Abs(refRouteCSV)
	gemma, _ := filepath.Abs(filepath.Join(filepath.Dir(refRouteCSV), "gemma.route.csv"))
	metrics, _ := filepath.Abs(refMetricsCSV)
	for _, p := range []string{route, gemma, metrics} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("reference data absent: %v", err)
		}
	}
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") // header, 128 rows, summary
	sum := len(lines) - 1
	dir := t.TempDir()
	edit := func(name string, ls ...string) string {
		os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(ls, "\n")+"\n"), 0o644)
		return name
	}
	zeroRow := strings.Split(lines[6], ",")
	zeroRow[2] = "0" // wall_ms of line 7, as awk -F, 'NR==7{$3="0"}1' does
	zero := edit("zero.csv", slices.Concat(lines[:6], []string{strings.Join(zeroRow, ",")}, lines[7:])...)
	half := edit("half.csv", slices.Concat(lines[:65], lines[sum:])...) // head -n 65; tail -1
	halfNoSummary := edit("half-nosum.csv", lines[:65]...)
	dup := edit("dup.csv", slices.Concat(lines[:sum], []string{lines[sum] + " cache_budget_MiB=100"})...)
	runCLI(t, dir, "trace", "import", route, "--out", "qwen.parquet", "--quiet")
	runCLI(t, dir, "trace", "import", gemma, "--out", "gemma.parquet", "--quiet")
	for _, c := range []struct {
		run, trace string
		extra      []string
		want       string
	}{
		{metrics, "gemma.parquet", nil, "simulated bytes within 1% of measured on 0 of 128 tokens (median difference -18.3%), and a fit needs more than 50% of them"},
		{zero, "qwen.parquet", nil, "lessim: zero.csv:7: column wall_ms: 0 is not a positive time"},
		{half, "qwen.parquet", nil, "lessim: half.csv:66: summary tokens=128, but the file has 64 token rows"},
		{halfNoSummary, "qwen.parquet", []string{"--cache", "4000MiB"}, "lessim: fit: the trace decodes 128 tokens, the run half-nosum.csv measured 64"},
		{dup, "qwen.parquet", nil, "lessim: dup.csv:130: summary key cache_budget_MiB appears twice (cache_budget_MiB=4000.0 and cache_budget_MiB=100)"},
		{metrics, "qwen.parquet", []string{"--policy", "nope"}, `lessim: unknown policy "nope" (valid: belady, les, lfu, lru, ondemand, oracle, pinned-hot)` + "\n"},
	} {
		got := runCLI(t, dir, slices.Concat([]string{"calibrate", "--from-run", c.run, "--trace", c.trace, "--device", "ufs4-phone-12gb", "--out", "f.yaml"}, c.extra)...)
		if !strings.Contains(got, c.want) || strings.Count(got, "lessim: ") != 1 || strings.Count(got, "unknown policy") > 1 {
			t.Errorf("%s %s %v: got %q, want one error with %q", filepath.Base(c.run), c.trace, c.extra, got, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "f.yaml")); err == nil {
			t.Fatalf("%s %s: a refused calibration wrote f.yaml", c.run, c.trace)
		}
	}
}
