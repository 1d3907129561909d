package policies

import (
	"slices"
	"testing"

	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// steps builds a trace from per-step, per-layer expert lists.
func steps(sel ...[][]int32) []traces.Step {
	out := make([]traces.Step, len(sel))
	for s, layers := range sel {
		out[s].Pos, out[s].Phase, out[s].Pass = int32(s), traces.Decode, int32(s)
		for _, es := range layers {
			out[s].Layers = append(out[s].Layers, traces.LayerStep{Experts: es})
		}
	}
	return out
}

func TestOracleBeladyVictims(t *testing.T) {
	// Keys: layer 0 = 0..3, layer 1 = 4..7; room for two experts.
	m := testModel(4, 1, 100, 100)
	tr := steps(
		[][]int32{{0}, {0}},
		[][]int32{{1}, {1}},
		[][]int32{{2}, {0}},
		[][]int32{{0}, {1}},
	)
	rp := newReplayer(m, 200, mustPolicy(t, "oracle", Params{Model: m, Trace: tr}), false)
	if _, err := rp.run(tr); err != nil {
		t.Fatal(err)
	}
	// s1 L0 needs 1: 0 (next at s3) vs 4 (next at s2) → 0.
	// s1 L1 needs 5: 4 (s2) vs 1 (never) → 1.
	// s2 L0 needs 2: 4 (s2 L1) vs 5 (s3 L1) → 5.
	// s3 L0 needs 0: 4 and 2 never used again → lower key 2.
	// s3 L1 needs 5: 4 and 0 never used again → lower key 0.
	if want := []sim.Key{0, 1, 5, 2, 0}; !slices.Equal(rp.victims, want) {
		t.Errorf("victims %v, want %v", rp.victims, want)
	}
}

func TestOraclePrefetchAndAdmission(t *testing.T) {
	// Keys: layer 0 = 0..3, layer 1 = 4..7; top-2.
	m := testModel(4, 2, 100, 100)
	tr := steps(
		[][]int32{{0}, {0}},
		[][]int32{{0}, {1, 0}},
		[][]int32{{3}, {3}},
	)
	o, err := NewOracle(Params{Model: m, Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	v := newFixtureView(m, 300)
	obs := func(kind sim.EventKind, k sim.Key, step int64, pre bool) {
		if kind == sim.Evicted {
			v.set(k, sim.Absent)
		} else if kind == sim.Admitted {
			v.set(k, sim.Resident)
		}
		o.Observe(sim.Event{Kind: kind, Key: k, Layer: int(k) / 4, Step: step, Prefetch: pre})
	}
	la := func(layer int, st ...int64) []sim.Key {
		return o.Prefetch(&sim.Lookahead{Layer: layer, Steps: st}, v, nil)
	}
	pass := func(first int64) {
		o.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Step: first, Tokens: 1})
	}
	pass(0)
	if got := la(0, 0); !slices.Equal(got, []sim.Key{4}) {
		t.Fatalf("step 0 layer 0 prefetch %v, want [4]", got)
	}
	obs(sim.Admitted, 4, 0, true)
	obs(sim.Admitted, 0, 0, false)
	obs(sim.Used, 0, 0, false)
	if got := la(1, 0); !slices.Equal(got, []sim.Key{0}) {
		t.Fatalf("last layer prefetch %v, want [0] (step 1 layer 0 is key 0: named though resident)", got)
	}
	obs(sim.Used, 4, 0, false)
	// Step 1, moment 1 of layer 0: wants 5 and 4 (4 resident, named anyway). Fill the cache
	// with 2 (never used again) and check the victim is 2; then without 2
	// the candidates 0 (needed at s1 L0) and 4 (s1 L1, same time as 5) are
	// both needed no later than 5: decline.
	pass(1)
	if got := la(0, 1); !slices.Equal(got, []sim.Key{5, 4}) {
		t.Fatalf("step 1 layer 0 prefetch %v, want [5 4]", got)
	}
	obs(sim.Admitted, 2, 1, false)
	if k, ok := o.Victim(v, 100, true); !ok || k != 2 {
		t.Fatalf("victim with a dead key cached = %d,%v, want 2", k, ok)
	}
	obs(sim.Evicted, 2, 1, false)
	if k, ok := o.Victim(v, 100, true); ok {
		t.Fatalf("victim %d for a prefetch whose use comes no sooner, want decline", k)
	}
	if k, ok := o.Victim(v, 100, false); !ok || k != 4 {
		t.Fatalf("demand victim = %d,%v, want 4 (next use s1 L1 after 0's s1 L0)", k, ok)
	}
	// At the last layer of step 1 it asks for layer 0 of step 2.
	if got := la(1, 1); !slices.Equal(got, []sim.Key{3}) {
		t.Fatalf("last layer prefetch %v, want [3] (step 2 layer 0)", got)
	}
	// A step outside the trace is ignored.
	if got := la(0, 99); len(got) != 0 {
		t.Fatalf("prefetch for a step outside the trace: %v", got)
	}
}

// TestOracleReverify: with speculative decoding a pass can start at a step
// the previous pass covered; those uses are in the future again.
func TestOracleReverify(t *testing.T) {
	m := testModel(4, 1, 100, 100)
	tr := steps(
		[][]int32{{0}, {0}},
		[][]int32{{1}, {1}},
		[][]int32{{1}, {2}},
	)
	o, err := NewOracle(Params{Model: m, Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	v := newFixtureView(m, 1000)
	k1 := sim.Key(1) // layer 0 expert 1: used at steps 1 and 2
	o.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Step: 0, Tokens: 2})
	o.Prefetch(&sim.Lookahead{Layer: 0, Steps: []int64{0, 1}}, v, nil)
	o.Observe(sim.Event{Kind: sim.Admitted, Key: k1, Step: 0})
	o.Observe(sim.Event{Kind: sim.Used, Key: k1, Step: 0})
	if got := o.next(k1); got != 2*2 {
		t.Fatalf("after pass [0,1]: next use of key 1 at %d, want 4 (step 2)", got)
	}
	o.Prefetch(&sim.Lookahead{Layer: 1, Steps: []int64{0, 1}}, v, nil)
	o.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Step: 1, Tokens: 2}) // step 1 re-verified
	o.Prefetch(&sim.Lookahead{Layer: 0, Steps: []int64{1, 2}}, v, nil)
	if got := o.next(k1); got != 1*2 {
		t.Fatalf("after re-verifying from step 1: next use of key 1 at %d, want 2 (step 1)", got)
	}
}
