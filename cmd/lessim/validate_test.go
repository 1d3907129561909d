//go:build llamacpp && linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/sim"
)

// validateDir is a folder on a real disk (live's residency control needs
// one) holding a tiny synthetic model and a device profile file.
func validateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lessim-validate-cmd-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// A calibrated profile needs a model of at least a few MiB (calibrate's
	// read sizes); any valid profile file exercises the same path here.
	prof, err := os.ReadFile(filepath.Join(testRoot(t), "devices", "profiles", "ipad-pro-m4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := runCLI(t, dir, "model", "synth", "--layers", "4", "--experts", "16", "--top-k", "4", "--hidden", "128",
		"--expert-ffn", "128", "--heads", "4", "--heads-kv", "2", "--head-dim", "32", "--quant", "q8_0",
		"--router-correlation", "0.7", "--seed", "1", "--out", "tiny.gguf")
	if !strings.HasPrefix(out, "wrote tiny.gguf") {
		t.Fatalf("model synth: %s", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "host.yaml"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testRoot is the repository root (the test runs in cmd/lessim).
func testRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// TestValidateEndToEnd: 2 policies × 2 caches × 6 tokens × 1 repeat: the
// table is printed, every file is written and the results rows read back
// with one simulated and one measured row per point.
func TestValidateEndToEnd(t *testing.T) {
	dir := validateDir(t)
	out := runCLI(t, dir, "validate", "--model", "tiny.gguf", "--device-file", "host.yaml", "--policies", "lru,les",
		"--caches", "25%,40%", "--tokens", "6", "--repeats", "1", "--quiet", "--out", "val")
	for _, want := range []string{"trace val/trace/trace.parquet, 6 decode tokens, 1 live repeat(s)", "predicted tok/s", "MAPE (tokens/s):",
		"over 4 points", "ranking at cache 25%: predicted", "ranking at cache 40%: predicted", "ranking preserved at every cache size:",
		"wrote val/results.parquet (8 rows)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "MAPE") > strings.Index(out, "predicted-vs-measured.png") {
		t.Errorf("the table must come before the plot is reported:\n%s", out)
	}
	for _, f := range []string{"trace/trace.parquet", "results.parquet", "table.txt", "predicted-vs-measured.png", "predicted-vs-measured.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "val", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
	tab, err := reports.ReadTables(filepath.Join(dir, "val", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Len() != 8 {
		t.Fatalf("%d rows, want 4 simulated + 4 measured", tab.Len())
	}
	count := map[string]int{}
	for i := range tab.Len() {
		count[tab.Str("source", i)]++
		if v, ok := tab.Num("tokens_per_sec", i); !ok || !(v > 0) {
			t.Errorf("row %d: tokens/s %v", i, v)
		}
		if tab.Str("point_id", i) == "" {
			t.Errorf("row %d: no point_id", i)
		}
	}
	if count[sim.SourceSimulated] != 4 || count[sim.SourceMeasured] != 4 {
		t.Errorf("sources %v", count)
	}
	// lessim report on the folder reads the results rows only (not the trace).
	rep := runCLI(t, dir, "report", "val", "--out", "rep")
	if !strings.Contains(rep, "read     8 rows from 1 file in val (4 simulated, 0 failed, 4 measured)") || !strings.Contains(rep, "predicted-vs-measured") {
		t.Errorf("report: %s", rep)
	}
	// Reusing the trace skips recording and gives the same predictions.
	again := runCLI(t, dir, "validate", "--model", "tiny.gguf", "--device-file", "host.yaml", "--trace", "val/trace/trace.parquet",
		"--policies", "lru,les", "--caches", "25%,40%", "--tokens", "6", "--repeats", "1", "--quiet", "--out", "val2")
	if !strings.Contains(again, "trace val/trace/trace.parquet") {
		t.Errorf("--trace: %s", again)
	}
	if _, err := os.Stat(filepath.Join(dir, "val2", "trace")); err == nil {
		t.Errorf("--trace given, yet a trace was recorded")
	}
	// --fit: separate live runs of the fit points, the profile fitted to
	// them and written, the points simulated with it, the held-out MAPE.
	fitOut := runCLI(t, dir, "validate", "--model", "tiny.gguf", "--device-file", "host.yaml", "--trace", "val/trace/trace.parquet",
		"--policies", "lru,les", "--caches", "25%,40%", "--tokens", "6", "--repeats", "1", "--fit", "lru:25%,les:40%", "--quiet", "--out", "valfit")
	for _, want := range []string{"profile valfit/fit/fitted.yaml fitted to separate live runs of lru at 25% and les at 40% (12 tokens): memory.efficiency",
		"MAPE over the 2 other points (held out):"} {
		if !strings.Contains(fitOut, want) {
			t.Errorf("--fit output lacks %q:\n%s", want, fitOut)
		}
	}
	for _, f := range []string{"fit/fitted.yaml", "fit/lru-25pct-r1.parquet", "fit/les-40pct-r1.parquet"} {
		if st, err := os.Stat(filepath.Join(dir, "valfit", f)); err != nil || st.Size() == 0 {
			t.Errorf("--fit: %s missing or empty (%v)", f, err)
		}
	}
	// A trace of another token count is refused.
	bad := runCLI(t, dir, "validate", "--model", "tiny.gguf", "--device-file", "host.yaml", "--trace", "val/trace/trace.parquet",
		"--policies", "lru", "--caches", "40%", "--tokens", "5", "--repeats", "1", "--quiet", "--out", "val3")
	if !strings.Contains(bad, "has 6 decode tokens, the live runs decode 5") {
		t.Errorf("trace of other length: %s", bad)
	}
}

// TestValidateBadInput: each bad input is one clear error before any work.
func TestValidateBadInput(t *testing.T) {
	dir := validateDir(t)
	dense := filepath.Join(dir, "dense.gguf")
	w := gguf.NewWriter()
	if err := w.AddKV("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("blk.0.ffn_up.weight", gguf.TypeF32, []int64{8, 8}, make([]byte, 256)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(dense); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blocker"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policies", "lru,fifo"}, `unknown policy "fifo"`},
		{[]string{"--caches", "25%,1KiB"}, "smaller than one layer's top-4"},
		{[]string{"--model", "dense.gguf"}, "no MoE layers"},
		{[]string{"--out", "blocker/val"}, "out: "},
		{[]string{"--device-file", "missing.yaml"}, "device file: "},
		{[]string{"--repeats", "0"}, "repeats 0"},
		{[]string{"--fit", "lru"}, `fit "lru": want POLICY:CACHE`},
		{[]string{"--fit", "fifo:25%"}, `unknown policy "fifo"`},
		{[]string{"--fit", "lru:1KiB"}, "smaller than one layer's top-4"},
		{[]string{"--lanes", "-1"}, "lanes -1: want 1..256"},
		{[]string{"--caches", "auto"}, "cache auto: a live run takes a size (256MiB) or a percentage"},
		{[]string{"--caches", "25%,"}, `--caches "25%,": an empty entry`},
		{[]string{"--prompt", ""}, "--prompt is empty"},
	} {
		args := append([]string{"validate", "--model", "tiny.gguf", "--device-file", "host.yaml", "--policies", "lru",
			"--caches", "25%", "--tokens", "4", "--quiet", "--out", "val"}, tc.args...)
		got := runCLI(t, dir, args...)
		if !strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, tc.want) {
			t.Errorf("%v: want an error containing %q, got %q", tc.args, tc.want, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "val", "trace")); err == nil {
			t.Fatalf("%v: bad input, yet a trace was recorded", tc.args)
		}
		if _, err := os.Stat(filepath.Join(dir, "val")); err == nil {
			t.Fatalf("%v: bad input, yet --out was created", tc.args)
		}
	}
}
