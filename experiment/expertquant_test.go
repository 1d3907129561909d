package experiment

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// writeModelTrace writes a synthetic trace of model name in variant to a
// temporary file and returns its path and steps.
func writeModelTrace(t *testing.T, name, variant string, tokens int) (string, []traces.Step) {
	t.Helper()
	m, err := devices.LookupModel(name, variant)
	if err != nil {
		t.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.Seed = tokens, 11
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	return path, steps
}

// runOptions runs the spec of opts and fails the test on an error.
func runOptions(t *testing.T, opts map[string]string) *Outcome {
	t.Helper()
	s, err := FromOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestExpertQuantExactRatio: on a trace file whose experts are all Q3_K
// (110 B per 256 weights), expert_quant Q2_K (84 B) makes every expert
// 84/110 of its size; with lru and a cache of a fixed share of the expert
// bytes, the same experts fit, so the same reads happen and the flash bytes
// shrink in exactly that ratio.
func TestExpertQuantExactRatio(t *testing.T) {
	path, _ := writeModelTrace(t, devices.MiniCPMV47, "mixed-q3k-experts", 80)
	opts := map[string]string{"trace": path, "policy": "lru", "cache": "25%", "device": "ipad-pro-m4"}
	base := runOptions(t, opts)
	opts["expert-quant"] = "Q2_K"
	q := runOptions(t, opts)
	if q.Spec.ExpertQuant != "Q2_K" || q.Hash == base.Hash {
		t.Fatalf("spec expert_quant %q; hashes %s %s", q.Spec.ExpertQuant, q.Hash, base.Hash)
	}
	// Q2_K by hand: gate and up 512 rows × 8 blocks × 84 B, down 2048 rows × 2 blocks × 84 B.
	if got, want := q.Model.Layers[7].ExpertBytes, int64(2*512*8*84+2048*2*84); got != want {
		t.Errorf("expert bytes %d, want %d", got, want)
	}
	b, r := base.Result, q.Result
	if b.Hits != r.Hits || b.Misses != r.Misses || b.FlashReads != r.FlashReads || b.FlashBytes == 0 {
		t.Fatalf("hits %d/%d, misses %d/%d, reads %d/%d: want the same cache behaviour", b.Hits, r.Hits, b.Misses, r.Misses, b.FlashReads, r.FlashReads)
	}
	if r.FlashBytes*110 != b.FlashBytes*84 {
		t.Errorf("flash bytes %d with Q2_K, %d with Q3_K: not in the ratio 84/110", r.FlashBytes, b.FlashBytes)
	}
	if r.FlashBytesPerToken >= b.FlashBytesPerToken || r.Tokens != b.Tokens {
		t.Errorf("flash bytes per token %v with Q2_K, %v with Q3_K", r.FlashBytesPerToken, b.FlashBytesPerToken)
	}
}

// TestExpertQuantColdMisses: on a Q4_K_M trace (Q6_K down projections on
// some layers) with a cache that holds every expert, each expert used is read
// once, so the flash bytes are each layer's distinct experts times its expert
// bytes: the trace's own, or 1,351,680 in Q3_K on every layer.
func TestExpertQuantColdMisses(t *testing.T) {
	path, steps := writeModelTrace(t, devices.MiniCPMV47, "q4_k_m", 60)
	m, _ := devices.LookupModel(devices.MiniCPMV47, "q4_k_m")
	distinct := make([]map[int32]bool, len(m.Layers))
	for i := range distinct {
		distinct[i] = map[int32]bool{}
	}
	for _, st := range steps {
		for l, ls := range st.Layers {
			for _, e := range ls.Experts {
				distinct[l][e] = true
			}
		}
	}
	var want, wantQ3 int64
	for l, d := range distinct {
		want += int64(len(d)) * m.Layers[l].ExpertBytes
		wantQ3 += int64(len(d)) * 1_351_680
	}
	opts := map[string]string{"trace": path, "policy": "lru", "cache": "100%", "device": "ipad-pro-m4"}
	if got := runOptions(t, opts).Result.FlashBytes; got != want {
		t.Errorf("Q4_K_M: flash bytes %d, want %d", got, want)
	}
	opts["expert-quant"] = "Q3_K"
	o := runOptions(t, opts)
	if got := o.Result.FlashBytes; got != wantQ3 {
		t.Errorf("Q3_K: flash bytes %d, want %d", got, wantQ3)
	}
	if o.Model.Variant != "q4_k_m, experts Q3_K" {
		t.Errorf("model variant %q", o.Model.Variant)
	}
}

// TestExpertQuantMatchesMixedVariant: the built-in Q4_K_M with expert_quant
// Q3_K runs to the mixed-q3k-experts variant's result, byte for byte.
func TestExpertQuantMatchesMixedVariant(t *testing.T) {
	for _, opts := range []map[string]string{
		{"tokens": "60", "cache": "3GiB"},
		{"tokens": "60", "cache": "auto", "spec-block": "3", "drafter": "mtp", "context-cost": "true"},
	} {
		opts["expert-quant"] = "Q3_K"
		a := runOptions(t, opts)
		delete(opts, "expert-quant")
		opts["variant"] = "mixed-q3k-experts"
		b := runOptions(t, opts)
		ja, _ := json.Marshal(a.Result)
		jb, _ := json.Marshal(b.Result)
		if string(ja) != string(jb) {
			t.Errorf("%v: expert_quant Q3_K gives\n%s\nthe mixed variant\n%s", opts, ja, jb)
		}
	}
}

// TestExpertQuantRefused: a type the experts already have changes nothing
// and is refused, as an ExpertQuantError wrapping
// devices.ErrExpertQuantUnchanged.
func TestExpertQuantRefused(t *testing.T) {
	s, err := FromOptions(map[string]string{"tokens": "20", "variant": "mixed-q3k-experts", "expert-quant": "q3_k"})
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	_, err = in.Resolve(s)
	var qe *ExpertQuantError
	if !errors.As(err, &qe) || !errors.Is(err, devices.ErrExpertQuantUnchanged) || qe.Quant != "Q3_K" {
		t.Errorf("error %v", err)
	}
}
