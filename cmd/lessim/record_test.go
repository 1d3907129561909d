//go:build llamacpp

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/traces"
)

// TestRecordEndToEnd runs the flow on a tiny synthetic model: synth a
// GGUF, record a trace from llama.cpp, measure it and simulate it.
func TestRecordEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out := runCLI(t, dir, "model", "synth", "--layers", "4", "--experts", "16", "--top-k", "4", "--hidden", "128",
		"--expert-ffn", "64", "--heads", "4", "--heads-kv", "2", "--head-dim", "32", "--quant", "q8_0",
		"--router-correlation", "0.7", "--seed", "1", "--out", "tiny.gguf")
	if !strings.HasPrefix(out, "wrote tiny.gguf") {
		t.Fatalf("model synth: %s", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.txt"), []byte("# two prompts\nThe quick brown fox\n\nfunc main() {\n\tprintln(42)\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = runCLI(t, dir, "record", "--model", "tiny.gguf", "--prompts", "prompts.txt", "--tokens", "24", "--lookahead-depth", "2",
		"--router-inputs", "--quiet", "--out", "tiny.parquet")
	if !strings.Contains(out, "wrote tiny.parquet: 2 prompts") || !strings.Contains(out, "48 decode tokens × 4 MoE layers") {
		t.Fatalf("record: %s", out)
	}
	stats := runCLI(t, dir, "trace", "stats", "tiny.parquet")
	if !strings.Contains(stats, "lookahead recall") || !strings.Contains(stats, "decode 48") || strings.Contains(stats, "lessim: ") {
		t.Fatalf("trace stats: %s", stats)
	}
	sim := runCLI(t, dir, "simulate", "--trace", "tiny.parquet", "--device", "ipad-pro-m4", "--policy", "les", "--cache", "25%")
	if !strings.Contains(sim, "48 tokens in 48 passes") || !strings.Contains(sim, "prefetch    recall") {
		t.Fatalf("simulate: %s", sim)
	}
	// The recorded model states its layers' mixers (read from the GGUF's
	// attention heads), so the context cost applies to its trace.
	ctx := runCLI(t, dir, "simulate", "--trace", "tiny.parquet", "--device", "ipad-pro-m4", "--policy", "les", "--cache", "25%", "--context-cost")
	if !strings.Contains(ctx, "48 tokens in 48 passes") || !strings.Contains(ctx, "of compute on KV-cache reads, attention") {
		t.Fatalf("simulate --context-cost: %s", ctx)
	}
	// Recording twice gives the same routing (seeded sampling, 1 thread); only
	// the measured compute_ns timings may differ.
	runCLI(t, dir, "record", "--model", "tiny.gguf", "--prompts", "prompts.txt", "--tokens", "24", "--lookahead-depth", "2",
		"--router-inputs", "--quiet", "--out", "again.parquet")
	a, b := readSteps(t, filepath.Join(dir, "tiny.parquet")), readSteps(t, filepath.Join(dir, "again.parquet"))
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("two recordings: %d vs %d steps", len(a), len(b))
	}
	for i := range a {
		for l := range a[i].Layers {
			x, y := a[i].Layers[l], b[i].Layers[l]
			if !slices.Equal(x.Experts, y.Experts) || !slices.Equal(x.Weights, y.Weights) || !slices.Equal(x.Logits, y.Logits) {
				t.Fatalf("step %d layer %d differs between two recordings", i, l)
			}
		}
	}
}

// TestRecordBadInput: each bad input is one clear error, checked before llama.cpp runs.
func TestRecordBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "text.gguf"), []byte("hello, not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLI(t, dir, "model", "synth", "--layers", "2", "--experts", "4", "--top-k", "2", "--hidden", "64", "--expert-ffn", "32",
		"--heads", "2", "--heads-kv", "1", "--head-dim", "32", "--vocab", "300", "--out", "ok.gguf")
	data, err := os.ReadFile(filepath.Join(dir, "ok.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cut.gguf"), data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "missing.gguf"}, "missing.gguf: no such file"},
		{[]string{"--model", "text.gguf"}, "not a GGUF file"},
		{[]string{"--model", "cut.gguf"}, "truncated"},
		{[]string{"--model", "ok.gguf", "--tokens", "0"}, "tokens 0"},
		{[]string{"--model", "ok.gguf", "--prompt", "a", "--prompts", "p.txt"}, "not both"},
		{[]string{"--model", "ok.gguf", "--temperature", "NaN"}, `"NaN" for "--temperature" flag: "NaN" is not a finite number`},
		{[]string{"--model", "ok.gguf", "--temperature", "Inf"}, `"Inf" for "--temperature" flag: "Inf" is not a finite number`},
		{[]string{"--model", "ok.gguf", "--temperature", "1e30"}, "temperature 1e+30"},
		{[]string{"--model", "ok.gguf", "--threads", "100000"}, "--threads 100000: want 1..256 llama.cpp compute threads"},
		{[]string{"--model", "ok.gguf", "--threads", "0"}, "--threads 0: want 1..256 llama.cpp compute threads"},
		{[]string{"--model", "ok.gguf", "--prompt", ""}, "--prompt is empty"},
		{[]string{"--model", "ok.gguf", "--prompts", ""}, "--prompts is empty"},
		{[]string{"--model", "ok.gguf", "--lookahead-depth", "2"}, "lookahead depth 2: the model has 2 MoE layers, so lookahead reaches at most 1 layer(s) ahead"},
		{[]string{"--model", "ok.gguf", "--temperature", "0", "--sample-top-k", "5"}, "--sample-top-k does not apply at --temperature 0: decoding is greedy (the most likely token, no sampling)"},
		{[]string{"--model", "ok.gguf", "--temperature", "0", "--seed", "5"}, "--seed does not apply at --temperature 0"},
		{[]string{"--prompt", "hi"}, `required flag(s) "model" not set`},
		{[]string{"--model", "ok.gguf", "--out", "nonexist/x.parquet"}, "--out: cannot write nonexist/x.parquet: folder nonexist does not exist"},
		{[]string{"--model", "ok.gguf", "--out", "."}, "--out: output . exists and is a folder"},
		{[]string{"--model", ""}, "--model: empty value"},
	} {
		args := append([]string{"record", "--quiet", "--out", "x.parquet"}, tc.args...)
		got := runCLI(t, dir, args...)
		if !strings.HasPrefix(got, "lessim: ") || !strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 {
			t.Errorf("%v: want one error line containing %q, got %q", tc.args, tc.want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.parquet")); err == nil {
		t.Errorf("a failed record left its output file behind")
	}
	if got := runCLI(t, dir, "record", "--model", "ok.gguf"); got != "lessim: required flag(s) \"out\" not set\n" {
		t.Errorf("record without --out: %q", got)
	}
	if got := runCLI(t, dir, "record", "--model", "ok.gguf", "--temperature", "0", "--tokens", "2", "--quiet", "--out", "g.parquet"); !strings.HasPrefix(got, "wrote g.parquet") {
		t.Errorf("a greedy recording without sampler flags: %q", got)
	}
}

func readSteps(t *testing.T, path string) []traces.Step {
	t.Helper()
	r, err := traces.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	steps, err := traces.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

// The recorder is generic over MoE architectures: a synthetic olmoe records too.
func TestRecordOLMoE(t *testing.T) {
	dir := t.TempDir()
	out := runCLI(t, dir, "model", "synth", "--arch", "olmoe", "--layers", "3", "--experts", "8", "--top-k", "2", "--hidden", "64",
		"--expert-ffn", "32", "--heads", "2", "--heads-kv", "2", "--head-dim", "32", "--vocab", "300", "--out", "o.gguf")
	if !strings.HasPrefix(out, "wrote o.gguf: olmoe") {
		t.Fatalf("model synth: %s", out)
	}
	out = runCLI(t, dir, "record", "--model", "o.gguf", "--prompt", "Describe this receipt", "--tokens", "8", "--quiet", "--out", "o.parquet")
	if !strings.Contains(out, "8 decode tokens × 3 MoE layers") {
		t.Fatalf("record: %s", out)
	}
	steps := readSteps(t, filepath.Join(dir, "o.parquet"))
	for i, s := range steps {
		for l, ls := range s.Layers {
			if s.Phase == traces.Decode && (len(ls.Experts) != 2 || (l < 2 && len(ls.Lookahead) != 1)) {
				t.Fatalf("step %d layer %d: experts %v, %d lookahead vectors", i, l, ls.Experts, len(ls.Lookahead))
			}
		}
	}
}

// TestRecordSpace: with 1 MiB free, a recording whose trace cannot fit is
// refused before the model loads, with the estimate (traces.EstimateSize
// of record-shaped steps over the decode tokens and at least one token per
// prompt), the free space and the flags that make it smaller; an older file
// at --out stays as it was and no temporary is left. A recording that fits
// is written.
func TestRecordSpace(t *testing.T) {
	dir := t.TempDir()
	runCLI(t, dir, "model", "synth", "--layers", "2", "--experts", "4", "--top-k", "2", "--hidden", "64", "--expert-ffn", "32",
		"--heads", "2", "--heads-kv", "1", "--head-dim", "32", "--vocab", "300", "--out", "ok.gguf")
	fakeFree(t, 1<<20, true)
	out := runCLI(t, dir, "record", "--model", "ok.gguf", "--prompt", "hi", "--tokens", "4", "--quiet", "--out", "t.parquet")
	if !strings.HasPrefix(out, "wrote t.parquet") {
		t.Fatalf("record that fits: %s", out)
	}
	old := readFile(t, filepath.Join(dir, "t.parquet"))
	got := runCLI(t, dir, "record", "--model", "ok.gguf", "--prompt", "hi", "--tokens", "60000", "--router-inputs", "--quiet", "--out", "t.parquet")
	for _, want := range []string{
		"lessim: --out t.parquet: the trace needs about ",
		" MiB (60001 tokens: 60000 decode and at least 1 prompt × ",
		", measured on the first 256, plus 5%), more than the 1.00 MiB free in " + dir + ": record fewer or shorter prompts (--prompts, --prompt) or decode tokens (--tokens), no router inputs (without --router-inputs), no router logits (--logits=false), a smaller --lookahead-depth or write to another folder\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("record too large: got %q, want it to contain %q", got, want)
		}
	}
	sameFile(t, filepath.Join(dir, "t.parquet"), old)
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in the folder, want ok.gguf and t.parquet: %v", len(ents), ents)
	}

	// A prompt-heavy recording that passes the first check (at least one
	// token per 6 bytes, the vocabulary's longest token "<0x00>") but not
	// the exact one (one token per character) is refused once the prompt
	// is tokenized, before it decodes, naming the exact count.
	prompt := strings.Repeat("x", 30000)
	o := record.DefaultOptions()
	o.ModelPath, o.Prompts, o.Tokens, o.Out = filepath.Join(dir, "ok.gguf"), []string{prompt}, 2, filepath.Join(dir, "t.parquet")
	mc, err := record.CheckModel(o.ModelPath)
	if err != nil {
		t.Fatal(err)
	}
	ts := record.EstimateTraceSize(&o, mc)
	mc.File.Close()
	e, _, err := traces.EstimateSize(ts.Meta, ts.Sample(), ts.Steps())
	if err != nil {
		t.Fatal(err)
	}
	fakeFree(t, int64(float64(e.Bytes())*(1+traceSpaceMargin))+1, true)
	got = runCLI(t, dir, "record", "--model", "ok.gguf", "--prompt", prompt, "--tokens", "2", "--quiet", "--out", "t.parquet")
	// NB: the prompt tokenizes to 30000 characters and a few markers (BOS, "▁").
	if want := regexp.MustCompile(` \(300\d\d tokens: 2 decode and 300\d\d prompt × `); !strings.HasPrefix(got, "lessim: --out t.parquet: the trace needs about ") || !want.MatchString(got) {
		t.Errorf("prompt-heavy record: got %q, want the exact check's %q", got, want)
	}
	sameFile(t, filepath.Join(dir, "t.parquet"), old)
}
