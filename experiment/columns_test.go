package experiment

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// writeFullTrace writes a synthetic trace of the default model that also
// carries router logits and router inputs (random values), as `record
// --logits --router-inputs` would.
func writeFullTrace(t *testing.T) string {
	t.Helper()
	m, err := devices.LookupModel(DefaultModel, "")
	if err != nil {
		t.Fatal(err)
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.LookaheadDepth, o.Seed = 24, 4, 1, 5
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	meta.HasLogits, meta.HasRouterInputs = true, true
	rng := rand.New(rand.NewPCG(5, 6))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	path := filepath.Join(t.TempDir(), "full.parquet")
	w, err := traces.Create(path, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		for l := range steps[i].Layers {
			steps[i].Layers[l].Logits, steps[i].Layers[l].RouterInput = vec(m.Experts), vec(m.Hidden)
		}
		if err := w.Write(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestColumnsSameResults runs every policy on a trace with logits, router
// inputs and lookahead, once reading every column and once reading only the
// columns the policy needs: the outcomes are identical, and the projected
// load holds no logits, router inputs or (but for les) lookahead.
func TestColumnsSameResults(t *testing.T) {
	path := writeFullTrace(t)
	for _, pol := range []string{"lru", "les", "oracle", "lfu", "ondemand", "pinned-hot"} {
		s, err := FromOptions(map[string]string{"trace": path, "policy": pol, "cache": "2GiB"})
		if err != nil {
			t.Fatal(err)
		}
		var outs [2][]byte
		var plans [2]*Plan
		for i, in := range []*Inputs{{ReadTrace: ReadTraceFile}, {}} {
			p, err := in.Resolve(s)
			if err != nil {
				t.Fatal(err)
			}
			o, err := p.Run()
			if err != nil {
				t.Fatal(err)
			}
			if outs[i], err = json.Marshal(o); err != nil {
				t.Fatal(err)
			}
			plans[i] = p
		}
		if string(outs[0]) != string(outs[1]) {
			t.Errorf("%s: outcome differs with column projection:\n%s\n%s", pol, outs[0], outs[1])
		}
		full, proj := &plans[0].Steps[3].Layers[2], &plans[1].Steps[3].Layers[2]
		if full.Logits == nil || full.RouterInput == nil || full.Lookahead == nil {
			t.Fatalf("%s: the full read lacks vectors", pol)
		}
		if proj.Logits != nil || proj.RouterInput != nil {
			t.Errorf("%s: the projected read holds logits or router inputs", pol)
		}
		if (proj.Lookahead != nil) != (pol == "les") {
			t.Errorf("%s: projected lookahead present = %v", pol, proj.Lookahead != nil)
		}
	}
}

// TestColumnsShared: a trace loaded with lookahead (for les) serves a later
// lru run, which needs fewer columns; not the other way round.
func TestColumnsShared(t *testing.T) {
	path := writeTrace(t, 20, 0, 1, nil)
	var in Inputs
	var plans []*Plan
	for _, pol := range []string{"les", "lru", "les"} {
		s, err := FromOptions(map[string]string{"trace": path, "policy": pol, "cache": "2GiB"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := in.Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p)
	}
	if len(in.entries) != 1 || &plans[0].Steps[0].Layers[0].Experts[0] != &plans[1].Steps[0].Layers[0].Experts[0] {
		t.Errorf("%d traces loaded; want one shared", len(in.entries))
	}
	var in2 Inputs
	for _, pol := range []string{"lru", "les"} {
		s, err := FromOptions(map[string]string{"trace": path, "policy": pol, "cache": "2GiB"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := in2.Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Steps[0].Layers[0].Lookahead != nil; got != (pol == "les") {
			t.Errorf("%s after lru: lookahead loaded = %v", pol, got)
		}
	}
}
