package sim

import (
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
	d := newDraftRouter(steps, 1, 4, 1, 7)
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
	a, b := newDraftRouter(steps, 1, 8, 4, 3), newDraftRouter(steps, 1, 8, 4, 3)
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
	d := newDraftRouter(steps, 1, 4, 1, 1)
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
// draft then gets depth-1 scores at layer 0 and none at the last layer.
func TestDraftLookahead(t *testing.T) {
	steps := []traces.Step{
		{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: []int32{0, 1}, Lookahead: [][]float32{{4, 3, 1, 0}}}, {Experts: []int32{0, 1}}}},
		{Phase: traces.Decode, Layers: []traces.LayerStep{{Experts: []int32{2, 3}, Lookahead: [][]float32{{4, 0, 3, 1}}}, {Experts: []int32{2, 3}}}},
	}
	if r := lookaheadRecall(steps); len(r) != 1 || r[0] != 0.75 {
		t.Fatalf("recall %v, want [0.75]", r)
	}
	d := newDraftRouter(steps, 2, 4, 2, 1)
	blk := d.block(ptrs(steps), 1, nil)
	if la := blk[1].Layers[0].Lookahead; len(la) != 1 || len(la[0]) != 4 || blk[1].Layers[1].Lookahead != nil {
		t.Fatalf("draft lookahead %v / %v", la, blk[1].Layers[1].Lookahead)
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
	d := newDraftRouter(steps, 1, 8, 2, 5)
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

// ptrs points at every step, as the engine's window hands a pass's steps.
func ptrs(steps []traces.Step) []*traces.Step {
	out := make([]*traces.Step, len(steps))
	for i := range steps {
		out[i] = &steps[i]
	}
	return out
}
