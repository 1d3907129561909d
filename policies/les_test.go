package policies

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lessim/lessim/sim"
)

// logs turns probabilities into scores whose softmax gives them back.
func logs(ps ...float64) []float32 {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(math.Log(p))
	}
	return out
}

func TestLESCandidates(t *testing.T) {
	m := testModel(8, 2, 100, 100, 100)
	k := func(layer, e int) sim.Key { return sim.MakeKey(layer, e, 8) }
	probs := logs(0.5, 0.3, 0.1, 0.04, 0.03, 0.01, 0.01, 0.01)
	cases := []struct {
		name     string
		p        Params
		layer    int
		scores   [][][]float32 // token → depth → experts
		resident []sim.Key
		loading  []sim.Key
		want     []sim.Key
	}{
		{"top-n, depth 1 before 2, best first",
			Params{Depth: 2, Prefetch: true}, 0,
			[][][]float32{{{0.1, 5, 3, -1, 4, 0, 0, 0}, {9, 8, 0, 0, 0, 0, 0, 0}}},
			nil, nil, []sim.Key{k(1, 1), k(1, 4), k(2, 0), k(2, 1)}},
		{"depth limited by Depth",
			Params{Depth: 1, Prefetch: true}, 0,
			[][][]float32{{{0.1, 5, 3, -1, 4, 0, 0, 0}, {9, 8, 0, 0, 0, 0, 0, 0}}},
			nil, nil, []sim.Key{k(1, 1), k(1, 4)}},
		{"depth limited by the model's last layer",
			Params{Depth: 2, Prefetch: true}, 1,
			[][][]float32{{{0, 0, 0, 0, 0, 0, 7, 6}, {9, 8, 0, 0, 0, 0, 0, 0}}},
			nil, nil, []sim.Key{k(2, 6), k(2, 7)}},
		{"union over the pass ranks by best score",
			Params{Depth: 1, Prefetch: true}, 0,
			[][][]float32{{{0, 5, 0, 0, 4, 0, 0, 0}}, {{0, 0, 4.5, 0, 6, 0, 0, 0}}},
			nil, nil, []sim.Key{k(1, 4), k(1, 1), k(1, 2)}},
		{"ties go to the lower expert",
			Params{Depth: 1, TopN: 3, Prefetch: true}, 0,
			[][][]float32{{{1, 1, 1, 1, 1, 1, 1, 1}}},
			nil, nil, []sim.Key{k(1, 0), k(1, 1), k(1, 2)}},
		{"NaN never chosen",
			Params{Depth: 1, TopN: 2, Prefetch: true}, 0,
			[][][]float32{{{float32(math.NaN()), 1, 0, 0, 0, 0, 0, 2}}},
			nil, nil, []sim.Key{k(1, 7), k(1, 1)}},
		{"threshold 0.75 needs two",
			Params{Depth: 1, Threshold: 0.75, Prefetch: true}, 0,
			[][][]float32{{probs}}, nil, nil, []sim.Key{k(1, 0), k(1, 1)}},
		{"threshold 0.85 needs three",
			Params{Depth: 1, Threshold: 0.85, Prefetch: true}, 0,
			[][][]float32{{probs}}, nil, nil, []sim.Key{k(1, 0), k(1, 1), k(1, 2)}},
		{"threshold capped by MaxCandidates",
			Params{Depth: 1, Threshold: 0.999, MaxCandidates: 4, Prefetch: true}, 0,
			[][][]float32{{probs}}, nil, nil, []sim.Key{k(1, 0), k(1, 1), k(1, 2), k(1, 3)}},
		{"threshold default cap is twice top-k",
			Params{Depth: 1, Threshold: 0.999, Prefetch: true}, 0,
			[][][]float32{{probs}}, nil, nil, []sim.Key{k(1, 0), k(1, 1), k(1, 2), k(1, 3)}},
		{"resident and loading keys named too (the engine skips them)",
			Params{Depth: 1, TopN: 3, Prefetch: true}, 0,
			[][][]float32{{{0, 5, 3, 0, 4, 0, 0, 0}}}, []sim.Key{k(1, 1)}, []sim.Key{k(1, 4)}, []sim.Key{k(1, 1), k(1, 4), k(1, 2)}},
		{"byte cap stops adding",
			Params{Depth: 2, TopN: 2, MaxInflightBytes: 250, Prefetch: true}, 0,
			[][][]float32{{{0, 5, 3, 0, 4, 0, 0, 0}, {9, 8, 0, 0, 0, 0, 0, 0}}},
			nil, nil, []sim.Key{k(1, 1), k(1, 4)}},
		{"byte cap counts loading bytes",
			Params{Depth: 1, TopN: 2, MaxInflightBytes: 250, Prefetch: true}, 0,
			[][][]float32{{{0, 5, 3, 0, 4, 0, 0, 0}}},
			nil, []sim.Key{k(2, 7)}, []sim.Key{k(1, 1)}},
		{"byte cap ignores resident keys",
			Params{Depth: 1, TopN: 3, MaxInflightBytes: 200, Prefetch: true}, 0,
			[][][]float32{{{0, 5, 3, 0, 4, 0, 0, 0}}},
			[]sim.Key{k(1, 1)}, nil, []sim.Key{k(1, 1), k(1, 4), k(1, 2)}},
		{"no scores", Params{Depth: 1, Prefetch: true}, 0, nil, nil, nil, nil},
		{"prefetch off", Params{Depth: 1, Prefetch: false}, 0,
			[][][]float32{{{0, 5, 3, 0, 4, 0, 0, 0}}}, nil, nil, nil},
		{"depth 0", Params{Depth: 0, Prefetch: true}, 0,
			[][][]float32{{{0, 5, 3, 0, 4, 0, 0, 0}}}, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Model = m
			pol := mustPolicy(t, "les", tc.p)
			v := newFixtureView(m, 10000)
			for _, r := range tc.resident {
				v.set(r, sim.Resident)
			}
			for _, r := range tc.loading {
				v.set(r, sim.Loading)
			}
			steps := make([]int64, max(1, len(tc.scores)))
			got := pol.Prefetch(&sim.Lookahead{Layer: tc.layer, Steps: steps, Scores: tc.scores}, v, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Prefetch = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLESVictim(t *testing.T) {
	// Keys: layer 0 = 0..7, layer 1 = 8..15, layer 2 = 16..23.
	m := testModel(8, 1, 100, 100, 100)
	const pass1 = "s0 m0 a0 u0 m1 a8 u8 m2 a16 u16 "
	cases := []victimCase{
		{"demand is plain lru", pass1 + "s0 m0 p9", false, 0},
		{"prefetch room takes an older pass's key", pass1 + "s0 m0 p9", true, 0},
		{"guarded prefetch skipped for prefetch room", pass1 + "s0 m0 p9 e0 e8 e16", true, -1},
		{"guarded prefetch still evictable on demand", pass1 + "s0 m0 p9 e0 e8 e16", false, 9},
		{"guard lifts once its layer is computed", pass1 + "s0 m0 p9 e0 e8 e16 a1 u1 m1 a10 u10", true, 9},
		{"guard lasts one pass", pass1 + "s0 m0 p17 e0 e8 e16 a1 u1 m1 a10 u10 m2 u17 s0 m0", true, 1},
		{"declines at a key used this pass", pass1 + "s0 m0 e0 e8 e16 a1 u1", true, -1},
		{"current pass key ok on demand", pass1 + "s0 m0 e0 e8 e16 a1 u1", false, 1},
		{"older keys before this pass's", pass1 + "s0 m0 a1 u1 m1 p17", true, 0},
		{"a PassStart starts a pass", "a8 u8 s0 a0 u0", true, 8},
		{"no pass without PassStart", "a8 u8 a0 u0", true, -1},
		{"loading and in-use skipped", pass1 + "s0 m0 i0 e8 l9", true, 16},
	}
	checkVictims(t, func() sim.Policy {
		return mustPolicy(t, "les", Params{Model: m, Depth: 1, Prefetch: true})
	}, m, 10000, cases)
}

// TestLESDisabledEqualsOnDemand replays random traces with prefetch admission
// on: les without prefetch (three ways) must name the same victims and see the
// same hits as ondemand.
func TestLESDisabledEqualsOnDemand(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x1e5))
		m := randomModel(r)
		capacity := randomCapacity(r, m)
		withScores := randomTrace(r, m, 80, 2)
		noScores := randomTrace(rand.New(rand.NewPCG(seed, 0x1e5)), m, 80, 0)
		base := newReplayer(m, capacity, mustPolicy(t, "ondemand", Params{Model: m}), true)
		want, err := base.run(withScores)
		if err != nil {
			t.Fatal(err)
		}
		variants := []struct {
			name string
			p    Params
		}{
			{"prefetch=false", Params{Model: m, Depth: 2}},
			{"depth=0", Params{Model: m, Prefetch: true}},
		}
		for _, vr := range variants {
			rp := newReplayer(m, capacity, mustPolicy(t, "les", vr.p), true)
			got, err := rp.run(withScores)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || !slices.Equal(rp.victims, base.victims) {
				t.Fatalf("seed %d: les %s differs from ondemand", seed, vr.name)
			}
		}
		base2 := newReplayer(m, capacity, mustPolicy(t, "ondemand", Params{Model: m}), true)
		want2, err := base2.run(noScores)
		if err != nil {
			t.Fatal(err)
		}
		rp := newReplayer(m, capacity, mustPolicy(t, "les", DefaultParams(m)), true)
		got, err := rp.run(noScores)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want2) || !slices.Equal(rp.victims, base2.victims) {
			t.Fatalf("seed %d: les without scores differs from ondemand", seed)
		}
	}
}

// TestLESPrefetchHelps: on traces whose lookahead is mostly right, les must
// beat ondemand's hit count at the same cache size.
func TestLESPrefetchHelps(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		m := testModel(32, 4, 100, 100, 100, 100)
		steps := randomTrace(r, m, 200, 1)
		capacity := int64(40 * 100)
		count := func(name string, p Params) int {
			out, err := newReplayer(m, capacity, mustPolicy(t, name, p), true).run(steps)
			if err != nil {
				t.Fatal(err)
			}
			hits := 0
			for _, o := range out {
				if o.Hit {
					hits++
				}
			}
			return hits
		}
		od, les := count("ondemand", Params{Model: m}), count("les", DefaultParams(m))
		if les <= od {
			t.Errorf("seed %d: les hits %d <= ondemand %d", seed, les, od)
		}
	}
}

// TestLESPrefetchNoAllocs pins the allocation-free selection over 256 scores.
func TestLESPrefetchNoAllocs(t *testing.T) {
	m := testModel(256, 8, 1000, 1000, 1000, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	scores := make([][][]float32, 1)
	for range 2 {
		sc := make([]float32, 256)
		for i := range sc {
			sc[i] = float32(r.NormFloat64())
		}
		scores[0] = append(scores[0], sc)
	}
	for _, p := range []Params{
		{Model: m, Depth: 2, Prefetch: true},
		{Model: m, Depth: 2, Threshold: 0.6, Prefetch: true},
	} {
		pol := mustPolicy(t, "les", p)
		v := newFixtureView(m, 1<<30)
		la := &sim.Lookahead{Layer: 0, Steps: []int64{0}, Scores: scores}
		dst := make([]sim.Key, 0, 64)
		pol.Prefetch(la, v, dst) // grow scratch buffers
		if a := testing.AllocsPerRun(50, func() { dst = pol.Prefetch(la, v, dst[:0]) }); a != 0 {
			t.Errorf("threshold %g: %v allocations per Prefetch, want 0", p.Threshold, a)
		}
		if len(dst) == 0 {
			t.Errorf("threshold %g: no candidates", p.Threshold)
		}
	}
}
