//go:build llamacpp

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lessim/lessim/experiment"
)

// TestLiveEndToEnd runs lessim live on a small synthetic model: the text
// result has simulate's shape, JSON decodes to a measured Result, --series
// writes a file, and bad input is one clear error.
func TestLiveEndToEnd(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "lessim-live-cmd-")
	if err != nil {
		t.Skipf("no folder on a real disk: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := runCLI(t, dir, "model", "synth", "--layers", "4", "--experts", "16", "--top-k", "4", "--hidden", "128",
		"--expert-ffn", "128", "--heads", "4", "--heads-kv", "2", "--head-dim", "32", "--quant", "q8_0",
		"--router-correlation", "0.7", "--seed", "1", "--out", "tiny.gguf")
	if !strings.HasPrefix(out, "wrote tiny.gguf") {
		t.Fatalf("model synth: %s", out)
	}
	txt := runCLI(t, dir, "live", "--model", "tiny.gguf", "--policy", "les", "--cache", "40%", "--tokens", "8")
	for _, want := range []string{"policy", "les", "this machine (live)", "throughput", "8 tokens in 8 passes", "hit rate", "prefetch    recall"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("live text output lacks %q:\n%s", want, txt)
		}
	}
	js := runCLI(t, dir, "live", "--model", "tiny.gguf", "--policy", "ondemand", "--cache", "40%", "--tokens", "8",
		"--format", "json", "--series", "tokens.parquet")
	var got liveOutput
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("live json: %v\n%s", err, js)
	}
	if got.Result == nil || got.Result.Tokens != 8 || got.Result.Uses != 8*4*4 || got.Result.TimeNS <= 0 {
		t.Fatalf("live json result: %+v", got.Result)
	}
	if st, err := os.Stat(filepath.Join(dir, "tokens.parquet")); err != nil || st.Size() == 0 {
		t.Fatalf("series file: %v", err)
	}
	if s := got.Spec; s.Policy.Name != "ondemand" || s.Trace.Synthetic == nil || s.Trace.Synthetic.Tokens != 8 || !s.Barrier || s.CachedFirst ||
		s.Host == nil || *s.Host != (experiment.Host{ModelFile: "tiny.gguf", Lanes: 2, Threads: 1}) {
		t.Fatalf("live json spec: %+v", s)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &top); err != nil || len(top) != 2 || top["spec"] == nil || top["result"] == nil {
		t.Fatalf("live json: want one spec and the result, got keys of %s", js)
	}
	// The spec it printed reruns the measured run, host group included (no
	// --model): same routing, so the same books (ondemand has no
	// timing-dependent prefetch).
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	var again liveOutput
	if err := json.Unmarshal([]byte(runCLI(t, dir, "live", "--spec", "run.json", "--format", "json")), &again); err != nil {
		t.Fatal(err)
	}
	if r, a := got.Result, again.Result; a == nil || a.Uses != r.Uses || a.Hits != r.Hits || a.Misses != r.Misses || a.CacheBytes != r.CacheBytes {
		t.Fatalf("live --spec of its own output: %+v, first run %+v", again.Result, got.Result)
	}
	if again.Spec.Hash() != got.Spec.Hash() {
		t.Errorf("live --spec of its own output printed another spec:\n%+v\n%+v", again.Spec, got.Spec)
	}
	// The host group reaches the engine: another prompt routes otherwise
	// (live once ran every local run with the default prompt, lanes and
	// threads).
	var other liveOutput
	if err := json.Unmarshal([]byte(runCLI(t, dir, "live", "--model", "tiny.gguf", "--policy", "ondemand", "--cache", "40%", "--tokens", "8",
		"--prompt", "Rivers carve canyons over millions of years", "--format", "json")), &other); err != nil {
		t.Fatal(err)
	}
	if r, o := got.Result, other.Result; o == nil || o.Misses == r.Misses && o.FlashBytes == r.FlashBytes && o.Hits == r.Hits {
		t.Errorf("live --prompt: the same books as the default prompt's (%+v): the prompt did not reach the engine", o)
	}
	// The model drafter, the target its own draft model: greedy drafts
	// the target confirms (all but near ties), and the spec states the
	// draft's cost and file.
	var spec liveOutput
	if err := json.Unmarshal([]byte(runCLI(t, dir, "live", "--model", "tiny.gguf", "--policy", "ondemand", "--cache", "40%", "--tokens", "8",
		"--spec-block", "4", "--drafter", "model", "--draft-model", "tiny.gguf", "--format", "json")), &spec); err != nil {
		t.Fatal(err)
	}
	if r, d := spec.Result, spec.Spec.Speculative; r == nil || r.Tokens != 8 || r.AcceptedPerPass < 2 || r.DraftNS <= 0 ||
		d == nil || d.Drafter.Kind != "model" || d.Drafter.Bytes <= 0 || d.Drafter.FLOPs <= 0 || spec.Spec.Host.DraftModel != "tiny.gguf" {
		t.Errorf("live --drafter model: result %+v, spec %+v", spec.Result, spec.Spec)
	}
	stock := runCLI(t, dir, "live", "--model", "tiny.gguf", "--policy", "ondemand", "--cache", "40%", "--tokens", "4", "--stock")
	if !strings.Contains(stock, "stock mmap") || !strings.Contains(stock, "4 tokens in 4 passes") {
		t.Fatalf("live --stock:\n%s", stock)
	}
	if stock := runCLI(t, dir, "live", "--model", "tiny.gguf", "--cache", "40%", "--tokens", "2", "--stock"); !strings.Contains(stock, "stock mmap") {
		t.Fatalf("live --stock without --policy (ondemand, the stock baseline's policy):\n%s", stock)
	}
	for _, tc := range []struct{ args, want string }{
		{"--policy nope", `unknown policy "nope"`},
		{"--cache 1KiB", "smaller than one layer's top-4"},
		{"--cache auto", "cache auto: a live run takes a size (256MiB) or a percentage"},
		{"--stock --policy les", "stock mode has no prefetch"},
		{"--spec run.json --policy lru", "--policy does not apply with --spec: the spec holds the run (edit it instead)\n--tokens does not apply"},
		{"--series tiny.gguf", "--series: output tiny.gguf is the input tiny.gguf"},
		{"--spec run.json --series run.json", "--series: output run.json is the input run.json"},
		{"--depth -1", "--depth -1: must be >= 1 (use --no-prefetch to turn prefetch off)"},
		{"--depth 0", "--depth 0: must be >= 1"},
		{"--depth 4", "depth 4: the model has 4 MoE layers, so lookahead reaches at most 3 layer(s) ahead"},
		{"--depth 2 --no-prefetch", "--depth does not apply: --no-prefetch is set"},
		{"--tokens 4294967297", "tokens 4294967297: exceeds the 65536-token context"},
		{"--threads 100000", "--threads 100000: want 1..256"},
		{"--threads 0", "--threads 0: want 1..256"},
		{"--stock --policy ondemand --lanes 4", "--lanes does not apply to the stock baseline"},
		{"--prompt=", "--prompt is empty"},
		{"--cache 0", "write e.g. 256MiB or 25%"},
		{"--spec-block 2 --drafter model", "--drafter model: give the draft model with --draft-model FILE"},
		{"--spec-block 2 --drafter ngram --draft-model tiny.gguf", "host.draft_model: a draft model runs with the model drafter only"},
		{"--draft-model tiny.gguf", "host.draft_model: a draft model runs with the model drafter only"},
	} {
		args := append([]string{"live", "--model", "tiny.gguf", "--tokens", "2"}, strings.Fields(tc.args)...)
		if out := runCLI(t, dir, args...); !strings.Contains(out, tc.want) {
			t.Errorf("live %s: %q, want %q", tc.args, out, tc.want)
		}
	}
	for _, f := range []string{"tiny.gguf", "run.json"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || strings.HasPrefix(string(b), "PAR1") {
			t.Errorf("%s was overwritten by a refused --series (%v)", f, err)
		}
	}
}
