//go:build llamacpp && linux

package live

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// scoreTap is a policy that notes every lookahead score it is shown, by
// (token position, MoE layer, depth), and otherwise defers to its policy.
type scoreTap struct {
	sim.Policy
	seen map[[3]int64][]float32
}

func (p *scoreTap) Prefetch(la *sim.Lookahead, view sim.CacheView, dst []sim.Key) []sim.Key {
	for t, tok := range la.Scores {
		for d, s := range tok {
			p.seen[[3]int64{la.Steps[t], int64(la.Layer), int64(d)}] = slices.Clone(s)
		}
	}
	return p.Policy.Prefetch(la, view, dst)
}

// TestLookaheadMatchesRecord: live --policy les runs a gpt-oss-style model,
// whose routers have biases, and the lookahead scores it shows the policy
// are record's, bit for bit, for the same model and prompt (both decode
// greedily on one thread, so they see the same router inputs).
func TestLookaheadMatchesRecord(t *testing.T) {
	dir := diskDir(t)
	o := gguf.SynthOptions{Arch: "gpt-oss", Layers: 4, Experts: 16, TopK: 4, Hidden: 256, ExpertFFN: 128,
		Heads: 4, HeadsKV: 2, HeadDim: 64, Context: 256, Quant: "q8_0", RouterCorrelation: 0.8, Seed: 3}
	path := filepath.Join(dir, "gptoss.gguf")
	if err := gguf.SynthMoE(path, o); err != nil {
		t.Fatal(err)
	}
	const tokens = 6

	ro := record.DefaultOptions()
	ro.ModelPath, ro.Prompts, ro.Tokens, ro.Temperature = path, []string{DefaultPrompt}, tokens, 0
	ro.Out = filepath.Join(dir, "trace.parquet")
	if _, err := record.Record(context.Background(), ro); err != nil {
		t.Fatal(err)
	}
	want := map[[3]int64][]float32{}
	r, err := traces.Open(ro.Out)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		s := r.Step()
		for l, ls := range s.Layers {
			for d, sc := range ls.Lookahead {
				if sc != nil {
					want[[3]int64{int64(s.Pos), int64(l), int64(d)}] = slices.Clone(sc)
				}
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()

	opt := DefaultOptions()
	opt.Model, opt.Cache, opt.Tokens = path, cacheFraction(t, path, 0.5), tokens
	d, err := prepare(opt)
	if err != nil {
		t.Fatal(err) // before the shared router reader: "routers with a bias are not supported yet"
	}
	tap := &scoreTap{Policy: d.pol, seen: map[[3]int64][]float32{}}
	d.pol = tap
	defer d.close()
	if err := d.open(); err != nil {
		t.Fatal(err)
	}
	res, _, err := d.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != tokens || res.Uses == 0 {
		t.Fatalf("live result %+v: want %d tokens with uses", res, tokens)
	}
	compared := 0
	for k, got := range tap.seen {
		w, ok := want[k]
		if !ok {
			continue // prefill rows record drops at the last layer
		}
		compared++
		if !slices.Equal(got, w) {
			t.Fatalf("position %d, layer %d, depth %d: live scores %v, record's %v", k[0], k[1], k[2]+1, got, w)
		}
	}
	// Every decode token's lookahead from each layer but the last.
	if min := tokens * (o.Layers - 1); compared < min {
		t.Fatalf("compared %d score vectors (live showed %d, record wrote %d), want at least %d", compared, len(tap.seen), len(want), min)
	}
	t.Logf("%d score vectors equal", compared)
}
