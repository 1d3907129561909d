package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lessim/lessim/traces"
)

// draftSteps builds decode steps of one layer from selections.
func draftSteps(sel ...[]int32) []traces.Step {
	steps := make([]traces.Step, len(sel))
	for i, s := range sel {
		steps[i] = traces.Step{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: s}}}
	}
	return steps
}

// The draws follow the layer's empirical distribution: expert 0 was selected
// three times as often as expert 1, experts 2-3 never; prefill is not counted.
func TestDraftRouterFollowsEmpiricalDistribution(t *testing.T) {
	steps := draftSteps([]int32{0}, []int32{0}, []int32{0}, []int32{1})
	steps = append(steps, traces.Step{Phase: traces.Prefill, Layers: []traces.LayerStep{{Experts: []int32{3}}}})
	d := newDraftRouter(DraftStatsOf(steps, 1, 4), 1, 7, true)
	var n [4]int
	const draws = 8000
	for range draws {
		n[d.draw(0, nil, nil)[0]]++
	}
	if n[2] != 0 || n[3] != 0 {
		t.Fatalf("drew experts the decode steps never selected: %v", n)
	}
	if f := float64(n[0]) / draws; f < 0.73 || f > 0.77 {
		t.Fatalf("expert 0 drawn %.3f of the time, want about 0.75 (%v)", f, n)
	}
}

// A draft takes top-k distinct experts, at most as many as the layer ever
// selected; the same seed gives the same draws.
func TestDraftRouterDistinctAndDeterministic(t *testing.T) {
	steps := draftSteps([]int32{5, 1}, []int32{1, 2}, []int32{5, 1})
	a, b := newDraftRouter(DraftStatsOf(steps, 1, 8), 4, 3, true), newDraftRouter(DraftStatsOf(steps, 1, 8), 4, 3, true)
	for range 100 {
		x, y := a.draw(0, nil, nil), b.draw(0, nil, nil)
		if !slices.Equal(x, y) {
			t.Fatalf("same seed, different draws: %v vs %v", x, y)
		}
		slices.Sort(x)
		if !slices.Equal(x, []int32{1, 2, 5}) {
			t.Fatalf("draw %v, want the layer's whole support {1, 2, 5}", x)
		}
	}
	if got := a.heaviestExcept(0, []int32{1}); got != 5 {
		t.Fatalf("heaviest except 1 = %d, want 5", got)
	}
}

// block keeps the accepted tokens as traced and replaces the rest, keeping
// their positions.
func TestDraftBlock(t *testing.T) {
	steps := draftSteps([]int32{0}, []int32{1}, []int32{2}, []int32{3})
	for i := range steps {
		steps[i].Pos = int32(10 + i)
	}
	d := newDraftRouter(DraftStatsOf(steps, 1, 4), 1, 1, true)
	blk := d.block(ptrs(steps), 2, nil)
	if len(blk) != 4 || blk[0].Layers[0].Experts[0] != 0 || blk[1].Layers[0].Experts[0] != 1 {
		t.Fatalf("accepted tokens changed: %+v", blk)
	}
	for i, s := range blk[2:] {
		if s.Pos != int32(12+i) || s.Pass != -1 || s.Layers[0].Lookahead != nil || len(s.Layers[0].Experts) != 1 {
			t.Fatalf("rejected draft %d: %+v", i, s)
		}
	}
}

// By hand: two decode tokens, 2 layers, depth-1 scores at layer 0 over 4
// experts. Token 1's true layer-1 experts {0, 1} are its top-2 scores (2
// hits); token 2's {2, 3} have one in its top 2 (1 hit): recall 3/4. A rejected
// draft then gets depth-1 scores at layer 0 and none at the last layer; in a
// run that reads no scores it gets none, and the same experts.
func TestDraftLookahead(t *testing.T) {
	steps := []traces.Step{
		{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: []int32{0, 1}, Lookahead: [][]float32{{4, 3, 1, 0}}}, {Experts: []int32{0, 1}}}},
		{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: []int32{2, 3}, Lookahead: [][]float32{{4, 0, 3, 1}}}, {Experts: []int32{2, 3}}}},
	}
	if r := lookaheadRecall(steps); len(r) != 1 || r[0] != 0.75 {
		t.Fatalf("recall %v, want [0.75]", r)
	}
	d := newDraftRouter(DraftStatsOf(steps, 2, 4), 2, 1, true)
	blk := d.block(ptrs(steps), 1, nil)
	if la := blk[1].Layers[0].Lookahead; len(la) != 1 || len(la[0]) != 4 || blk[1].Layers[1].Lookahead != nil {
		t.Fatalf("draft lookahead %v / %v", la, blk[1].Layers[1].Lookahead)
	}
	bare := newDraftRouter(DraftStatsOf(steps, 2, 4), 2, 1, false).block(ptrs(steps), 1, nil)
	for l := range bare[1].Layers {
		if la := bare[1].Layers[l].Lookahead; la != nil {
			t.Fatalf("a run reading no scores: draft layer %d got lookahead %v", l, la)
		}
		if x, y := bare[1].Layers[l].Experts, blk[1].Layers[l].Experts; !slices.Equal(x, y) {
			t.Fatalf("layer %d: the draft's experts %v without scores, %v with", l, x, y)
		}
	}
	if lookaheadRecall(draftSteps([]int32{1})) != nil {
		t.Fatal("recall measured on a trace without scores")
	}
}

// By hand: consecutive tokens {0,1} → {1,2} → {2,3} repeat one of two experts
// each time: reuse 1/2. A draft after a token that selected {6, 7} repeats
// about half its slots from it.
func TestDraftReuse(t *testing.T) {
	steps := draftSteps([]int32{0, 1}, []int32{1, 2}, []int32{2, 3})
	if r := reuseRate(steps, 1); r[0] != 0.5 {
		t.Fatalf("reuse %v, want [0.5]", r)
	}
	d := newDraftRouter(DraftStatsOf(steps, 1, 8), 2, 5, true)
	from := 0
	const draws = 4000
	for range draws {
		for _, x := range d.draw(0, []int32{6, 7}, nil) {
			if x >= 6 {
				from++
			}
		}
	}
	if f := float64(from) / (2 * draws); f < 0.47 || f > 0.53 {
		t.Fatalf("%.3f of slots repeat the previous token, want about 0.5", f)
	}
	if r := reuseRate(draftSteps([]int32{1}), 1); r[0] != 0 {
		t.Fatalf("one token: reuse %v", r)
	}
}

// lookaheadRecall is the recall DraftStats measure over steps (of 2 layers of
// 4 experts at most, as these tests use).
func lookaheadRecall(steps []traces.Step) []float64 { return DraftStatsOf(steps, 2, 4).recall() }

// reuseRate is the reuse DraftStats measure over steps of nL layers.
func reuseRate(steps []traces.Step, nL int) []float64 { return DraftStatsOf(steps, nL, 8).reuse() }

// recallHits (the k-th largest score) counts what the definition counts: a
// true expert is a hit when fewer than k scores are above its own; on random
// vectors with repeated values, NaNs, signed zeros and short vectors.
func TestRecallHitsByDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []float32{-1, 0, float32(math.Copysign(0, -1)), 0.5, 2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	var top topK
	for trial := range 20_000 {
		n := 1 + rng.IntN(12)
		v := make([]float32, n)
		for i := range v {
			if rng.IntN(3) == 0 {
				v[i] = vals[rng.IntN(len(vals))]
			} else {
				v[i] = float32(rng.IntN(5))
			}
		}
		truth := make([]int32, rng.IntN(6))
		for i := range truth {
			truth[i] = int32(rng.IntN(n + 2)) // some beyond the vector
		}
		var want int64
		for _, e := range truth {
			if int(e) >= len(v) {
				continue
			}
			above := 0
			for _, x := range v {
				if x > v[e] {
					above++
				}
			}
			if above < len(truth) {
				want++
			}
		}
		if got := recallHits(v, truth, &top); got != want {
			t.Fatalf("trial %d: v %v truth %v: %d hits, want %d", trial, v, truth, got, want)
		}
	}
}

// A compact trace (empty vectors, candidate index) measures the recall its
// full vectors give: TestDraftLookahead's steps, indexed, then emptied.
func TestRecallFromCandidateIndex(t *testing.T) {
	steps := []traces.Step{
		{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: []int32{0, 1}, Lookahead: [][]float32{{4, 3, 1, 0}}}, {Experts: []int32{0, 1}}}},
		{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: []int32{2, 3}, Lookahead: [][]float32{{4, 0, 3, 1}}}, {Experts: []int32{2, 3}}}},
	}
	traces.IndexLookahead(steps, 2, false)
	for i := range steps {
		steps[i].Layers[0].Lookahead = [][]float32{{}}
	}
	if r := lookaheadRecall(steps); len(r) != 1 || r[0] != 0.75 {
		t.Fatalf("recall %v, want [0.75]", r)
	}
}

// ptrs points at every step, as the engine's window hands a pass's steps.
func ptrs(steps []traces.Step) []*traces.Step {
	out := make([]*traces.Step, len(steps))
	for i := range steps {
		out[i] = &steps[i]
	}
	return out
}
