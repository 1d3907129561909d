package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/experiment"
)

// defaultModel and defaultDevice are the embedded defaults.
const (
	defaultModel  = experiment.DefaultModel
	defaultDevice = experiment.DefaultDevice
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/golden")

// goldenDir is absolute: tests that write files change directory.
var goldenDir = func() string {
	d, err := filepath.Abs(filepath.Join("testdata", "golden"))
	if err != nil {
		panic(err)
	}
	return d
}()

// runCLI runs one command line in dir and returns stdout, with any error as a
// last "lessim: ..." line (as main prints it) (what a user sees on stderr).
func runCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	var out, errb bytes.Buffer
	err := run(args, &out, &errb)
	s := out.String()
	if err != nil {
		s += "lessim: " + err.Error() + "\n"
	}
	return s
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name+".txt")
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from %s (go test -rewrite, then read the diff)\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// TestGolden pins each command's output; errors are part of the output.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"devices-list", []string{"devices", "list"}},
		{"devices-show", []string{"devices", "show", "iphone-17-pro-max"}},
		{"models-list", []string{"models", "list"}},
		{"models-show", []string{"models", "show", "minicpm-v-4.7-35b-a3b", "--variant", "mixed-q3k-experts"}},
		{"models-show", []string{"models", "show", "minicpm-v-4.7-35b-a3b:mixed-q3k-experts"}}, // the agent's --model form, same output
		{"err-models-show-variant-twice", []string{"models", "show", "minicpm-v-4.7-35b-a3b:mixed-q3k-experts", "--variant", "q4_k_m"}},
		{"policies-list", []string{"policies", "list"}},
		{"simulate-default", []string{"simulate", "--tokens", "300"}},
		{"simulate-stock", []string{"simulate", "--tokens", "300", "--policy", "ondemand", "--layout", "gguf-mmap", "--cached-first=false", "--cache", "3GiB"}},
		{"simulate-page-cache", []string{"simulate", "--tokens", "300", "--policy", "lru", "--layout", "gguf-mmap", "--cached-first=false", "--page-cache", "free-ram", "--mmap-neighbours"}},
		{"err-page-cache", []string{"simulate", "--tokens", "10", "--page-cache", "free-ram", "--mmap-neighbours"}},
		{"simulate-json", []string{"simulate", "--tokens", "200", "--device", "ipad-pro-m4", "--policy", "lru", "--cache", "40%", "--format", "json"}},
		{"simulate-spec", []string{"simulate", "--tokens", "300", "--variant", "mixed-q3k-experts", "--spec-block", "4", "--spec-accept", "0.7", "--drafter", "mtp"}},
		{"simulate-expert-quant", []string{"simulate", "--tokens", "300", "--expert-quant", "Q3_K", "--policy", "lru", "--cache", "3GiB"}},
		{"err-expert-quant", []string{"simulate", "--expert-quant", "q9"}},
		{"err-expert-quant-unchanged", []string{"simulate", "--tokens", "10", "--variant", "mixed-q3k-experts", "--expert-quant", "Q3_K"}},
		{"err-unknown-policy", []string{"simulate", "--policy", "nope"}},
		{"err-unknown-device", []string{"simulate", "--device", "pixel"}},
		{"err-unknown-model", []string{"simulate", "--model", "gpt-5"}},
		{"err-unknown-variant", []string{"simulate", "--variant", "q2"}},
		{"err-cache-too-small", []string{"simulate", "--tokens", "10", "--cache", "10MiB"}},
		{"err-cache-garbage", []string{"simulate", "--tokens", "10", "--cache", "lots"}},
		{"err-layout", []string{"simulate", "--layout", "zip"}},
		{"err-missing-trace", []string{"simulate", "--trace", "nope.parquet"}},
		{"err-format", []string{"simulate", "--format", "xml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, runCLI(t, "", tc.args...))
		})
	}
}

// TestTraceRoundTrip writes a synthetic trace, measures it and simulates it.
func TestTraceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out := runCLI(t, dir, "trace", "synth", "--tokens", "300", "--seed", "7", "--out", "synth.parquet")
	golden(t, "trace-synth", out)
	golden(t, "trace-stats", runCLI(t, dir, "trace", "stats", "synth.parquet"))
	fromFile := runCLI(t, dir, "simulate", "--trace", "synth.parquet", "--policy", "les", "--cache", "3GiB")
	inMemory := runCLI(t, dir, "simulate", "--tokens", "300", "--seed", "7", "--policy", "les", "--cache", "3GiB")
	// Same trace, same result: only the trace line differs.
	strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "trace") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if strip(fromFile) != strip(inMemory) {
		t.Errorf("simulating the written trace differs from the in-memory one:\n%s\n---\n%s", fromFile, inMemory)
	}
	bad := filepath.Join(dir, "bad.parquet")
	data, err := os.ReadFile(filepath.Join(dir, "synth.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runCLI(t, dir, "trace", "stats", "bad.parquet"); !strings.Contains(got, "lessim: ") || !strings.Contains(got, "bad.parquet") {
		t.Errorf("truncated trace: want an error naming the file, got %q", got)
	}
}

func TestImportAndReplay(t *testing.T) {
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("..", "..", "traces", "testdata", "bmoe-small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "trace-import", runCLI(t, dir, "trace", "import", "--format", "bmoe-route-csv", src, "--out", "small.parquet"))
	golden(t, "trace-import-stats", runCLI(t, dir, "trace", "stats", "small.parquet"))
	if got := runCLI(t, dir, "trace", "import", "--format", "csv", src, "--out", "x.parquet"); !strings.Contains(got, "valid: bmoe-route-csv") {
		t.Errorf("unknown import format: %q", got)
	}
	// A built-in model that is not the trace's is refused with the differences.
	golden(t, "trace-import-model-mismatch", runCLI(t, dir, "trace", "import", src, "--model", "qwen3-30b-a3b", "--out", "y.parquet"))
	if got := runCLI(t, dir, "trace", "import", src, "--variant", "q4_k_m", "--out", "y.parquet"); !strings.Contains(got, "--variant applies only with --model") {
		t.Errorf("--variant without --model: %q", got)
	}
}

// TestImportAdoptModelAblate: the published Qwen3-30B-A3B route trace,
// imported with --model qwen3-30b-a3b, runs every ablation step, including
// the re-quantized experts that its own spec cannot give.
func TestImportAdoptModelAblate(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "reference", "traces", "qwen.route.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Skip("reference trace absent")
	}
	dir := t.TempDir()
	if out := runCLI(t, dir, "trace", "import", src, "--model", "qwen3-30b-a3b", "--quiet", "--out", "q.parquet"); !strings.Contains(out, "of qwen3-30b-a3b (qwen3moe)") {
		t.Fatalf("import --model: %q", out)
	}
	out := runCLI(t, dir, "ablate", "--trace", "q.parquet", "--device", "ufs4-phone-12gb", "--cache", "4000MiB")
	if !strings.Contains(out, "(4) + mixed precision (Q3_K experts)") || strings.Contains(out, "skipped") {
		t.Errorf("ablate on the adopted trace:\n%s", out)
	}
}

func TestSimulateDeterministic(t *testing.T) {
	args := []string{"simulate", "--tokens", "300", "--spec-block", "3", "--drafter", "mtp", "--seed", "5", "--format", "json"}
	a, b := runCLI(t, "", args...), runCLI(t, "", args...)
	if a != b || !strings.HasPrefix(a, "{") {
		t.Fatalf("same inputs, different output:\n%s\n%s", a, b)
	}
}

func TestModelSynthInspect(t *testing.T) {
	dir := t.TempDir()
	out := runCLI(t, dir, "model", "synth", "--layers", "2", "--experts", "4", "--top-k", "2", "--hidden", "64",
		"--expert-ffn", "32", "--heads", "2", "--heads-kv", "1", "--head-dim", "32", "--vocab", "300", "--quant", "q8_0", "--out", "m.gguf")
	golden(t, "model-synth", out)
	golden(t, "model-inspect", runCLI(t, dir, "model", "inspect", "--max-experts", "2", "m.gguf"))
	if got := runCLI(t, dir, "model", "inspect", "--max-experts", "-1", "m.gguf"); got != "lessim: --max-experts -1: must be >= 0 (0 = all)\n" {
		t.Errorf("model inspect --max-experts -1: %q", got)
	}
	if got := runCLI(t, dir, "model", "inspect", "nothere.gguf"); !strings.Contains(got, "lessim: ") {
		t.Errorf("missing file: %q", got)
	}
}

func TestSimulatePlot(t *testing.T) {
	dir := t.TempDir()
	out := runCLI(t, dir, "simulate", "--tokens", "200", "--cache", "3GiB", "--plot", "run.png")
	if strings.Contains(out, "lessim: ") {
		t.Fatal(out)
	}
	for _, f := range []string{"run.png", "run.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
}

// TestTraceSynthInapplicable: options about the lookahead scores are refused
// with --depth 0, which writes none (each one given named), and a --lookahead-top past the model's
// experts is refused as the flag's; nothing is written.
func TestTraceSynthInapplicable(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--depth", "0", "--lookahead-recall", "0.3"}, "lessim: --lookahead-recall does not apply with --depth 0: the trace has no lookahead scores\n"},
		{[]string{"--depth", "0", "--lookahead-top", "4"}, "lessim: --lookahead-top does not apply with --depth 0: the trace has no lookahead scores\n"},
		// Every flag that does not apply is named, not only the first.
		{[]string{"--depth", "0", "--lookahead-recall", "0.3", "--lookahead-top", "4"}, "lessim: --lookahead-recall does not apply with --depth 0: the trace has no lookahead scores\n" +
			"--lookahead-top does not apply with --depth 0: the trace has no lookahead scores\n"},
		{[]string{"--lookahead-top", "257"}, "lessim: --lookahead-top 257: must be in [0, 256], the model's experts per layer (0 = full score vectors)\n"},
		{[]string{"--lookahead-top", "-1"}, "lessim: --lookahead-top -1: must be in [0, 256], the model's experts per layer (0 = full score vectors)\n"},
	} {
		args := append([]string{"trace", "synth", "--tokens", "5", "--out", "t.parquet"}, c.args...)
		if got := runCLI(t, dir, args...); got != c.want {
			t.Errorf("%v: got %q, want %q", c.args, got, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "t.parquet")); err == nil {
		t.Error("a refused synth wrote its output")
	}
	if got := runCLI(t, dir, "trace", "synth", "--tokens", "5", "--depth", "0", "--out", "t.parquet"); strings.Contains(got, "lessim: ") {
		t.Errorf("--depth 0 alone: %q", got)
	}
}
