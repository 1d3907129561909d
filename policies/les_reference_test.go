package policies

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lessim/lessim/sim"
)

// refLESPrefetch is LES's moment-1 request computed the obvious way: a full
// sort per token and depth, a map for the union, a sort of the union.
func refLESPrefetch(p Params, la *sim.Lookahead, v *fixtureView) []sim.Key {
	p = p.withDefaults()
	m := p.Model
	if !p.Prefetch || p.Depth == 0 || la.Scores == nil {
		return nil
	}
	var out []sim.Key
	var asked int64
	for d := 1; d <= p.Depth && la.Layer+d < len(m.Layers); d++ {
		layer := la.Layer + d
		best := map[sim.Key]float32{}
		for _, tok := range la.Scores {
			if len(tok) < d {
				continue
			}
			sc := tok[d-1][:min(len(tok[d-1]), m.Experts)]
			n := p.TopN
			if p.Threshold > 0 {
				n = p.MaxCandidates
			}
			chosen := topByFullSort(sc, n)
			if p.Threshold > 0 && len(chosen) > 0 {
				clean := func(x float32) float64 {
					if x != x {
						return math.Inf(-1)
					}
					return float64(x)
				}
				top := clean(sc[chosen[0]])
				var sum, cum float64
				for _, x := range sc {
					if e := clean(x) - top; e == e {
						sum += math.Exp(e)
					}
				}
				for i, e := range chosen {
					cum += math.Exp(clean(sc[e])-top) / sum
					if cum >= p.Threshold {
						chosen = chosen[:i+1]
						break
					}
				}
			}
			for _, e := range chosen {
				k := sim.MakeKey(layer, int(e), m.Experts)
				if old, ok := best[k]; !ok || sc[e] > old {
					best[k] = sc[e]
				}
			}
		}
		keys := make([]sim.Key, 0, len(best))
		for k := range best {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b sim.Key) int {
			if c := cmp.Compare(best[b], best[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		for _, k := range keys {
			// Resident and loading keys are named but cost no bytes.
			if v.State(k) == sim.Absent {
				eb := m.Layers[layer].ExpertBytes
				if p.MaxInflightBytes > 0 && asked+eb > p.MaxInflightBytes-v.LoadingBytes() {
					return out
				}
				asked += eb
			}
			out = append(out, k)
		}
	}
	return out
}

// TestLESPrefetchAgainstReference compares LES's selection with the slow
// reference on random scores, parameters and cache states.
func TestLESPrefetchAgainstReference(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x1e55))
		m := randomModel(r)
		p := Params{Model: m, Prefetch: r.IntN(8) > 0, Depth: r.IntN(4), TopN: r.IntN(m.Experts + 1)}
		if r.IntN(2) == 0 {
			p.Threshold = []float64{0.3, 0.5, 0.8, 0.95, 1}[r.IntN(5)]
			p.MaxCandidates = r.IntN(m.Experts + 1)
		}
		v := newFixtureView(m, 1<<40)
		for k := range v.state {
			switch r.IntN(30) {
			case 0, 1, 2, 3, 4:
				v.set(sim.Key(k), sim.Resident)
			case 5:
				v.set(sim.Key(k), sim.Loading)
			}
		}
		if r.IntN(2) == 0 { // sizes are multiples of 50: the cap is often hit exactly
			p.MaxInflightBytes = v.LoadingBytes() + 50*int64(r.IntN(16))
		}
		la := &sim.Lookahead{Layer: r.IntN(len(m.Layers))}
		for t := range 1 + r.IntN(4) {
			la.Steps = append(la.Steps, int64(t))
			var tok [][]float32
			for range r.IntN(4) {
				sc := make([]float32, m.Experts)
				for e := range sc {
					sc[e] = float32(math.Round(r.NormFloat64()*4) / 2) // coarse: ties happen
					if r.IntN(40) == 0 {
						sc[e] = float32(math.NaN())
					}
				}
				tok = append(tok, sc)
			}
			la.Scores = append(la.Scores, tok)
		}
		pol, err := NewLES(p)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got := pol.Prefetch(la, v, nil)
		if want := refLESPrefetch(p, la, v); !slices.Equal(got, want) {
			t.Fatalf("seed %d (%+v, layer %d): got %v, reference %v", seed, p, la.Layer, got, want)
		}
	}
}
