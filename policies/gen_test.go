package policies

import (
	"math/rand/v2"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// randomTrace makes n single-token steps for m: each token picks top-k distinct
// experts per layer, skewed towards low expert numbers, and repeats about half
// of the previous token's picks (experts recur, so caches have hits). With
// depth > 0 each layer carries lookahead scores for the next depth layers: the
// true later picks score high, plus noise, so predictions are mostly right.
func randomTrace(r *rand.Rand, m *devices.ModelSpec, n, depth int) []traces.Step {
	steps := make([]traces.Step, n)
	for s := range steps {
		steps[s].Pos, steps[s].Phase, steps[s].Pass = int32(s), traces.Decode, int32(s)
		steps[s].Layers = make([]traces.LayerStep, len(m.Layers))
		for l := range m.Layers {
			var picks []int32
			if s > 0 {
				for _, e := range steps[s-1].Layers[l].Experts {
					if r.IntN(2) == 0 {
						picks = append(picks, e)
					}
				}
			}
			for len(picks) < m.TopK {
				// Skew: the minimum of two uniform draws favours low experts.
				e := int32(min(r.IntN(m.Experts), r.IntN(m.Experts)))
				if !containsInt32(picks, e) {
					picks = append(picks, e)
				}
			}
			steps[s].Layers[l].Experts = picks
		}
	}
	if depth == 0 {
		return steps
	}
	for s := range steps {
		for l := range m.Layers {
			var la [][]float32
			for d := 1; d <= depth && l+d < len(m.Layers); d++ {
				sc := make([]float32, m.Experts)
				for e := range sc {
					sc[e] = float32(r.NormFloat64())
				}
				for _, e := range steps[s].Layers[l+d].Experts {
					sc[e] += 2.5 / float32(d)
				}
				la = append(la, sc)
			}
			steps[s].Layers[l].Lookahead = la
		}
	}
	return steps
}

func containsInt32(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// randomModel is a small model with layer-dependent expert sizes.
func randomModel(r *rand.Rand) *devices.ModelSpec {
	layers := 1 + r.IntN(4)
	experts := 4 + r.IntN(13)
	topK := 1 + r.IntN(min(4, experts-1))
	sizes := make([]int64, layers)
	for i := range sizes {
		sizes[i] = []int64{100, 150, 200}[r.IntN(3)]
	}
	return testModel(experts, topK, sizes...)
}

// randomCapacity is between one layer's worth of the largest experts and most
// of the model, so runs see both thrashing and comfortable caches.
func randomCapacity(r *rand.Rand, m *devices.ModelSpec) int64 {
	lo := int64(m.TopK) * m.MaxExpertBytes()
	hi := max(lo, m.TotalExpertBytes()*3/4)
	return lo + r.Int64N(hi-lo+1)
}
