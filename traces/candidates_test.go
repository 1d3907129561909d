package traces

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// IndexLookahead's candidates are TopIndices' and its sums SoftmaxSum's.
func TestIndexLookahead(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	steps := make([]Step, 20)
	for i := range steps {
		steps[i].Layers = make([]LayerStep, 3)
		for l := range 2 {
			sc := make([]float32, 32)
			for e := range sc {
				sc[e] = float32(math.Round(r.NormFloat64()*4) / 2)
				if r.IntN(20) == 0 {
					sc[e] = float32(math.NaN())
				}
			}
			steps[i].Layers[l].Lookahead = [][]float32{sc}
		}
	}
	IndexLookahead(steps, 6, true)
	for i := range steps {
		if steps[i].Layers[2].LookaheadIndex != nil {
			t.Fatalf("step %d: a layer without scores got an index", i)
		}
		for l := range 2 {
			sc := steps[i].Layers[l].Lookahead[0]
			ci := steps[i].Layers[l].LookaheadIndex[0]
			if want := TopIndices(nil, sc, 6); !slices.Equal(ci.Top, want) || ci.Complete {
				t.Fatalf("step %d layer %d: top %v complete %v, want %v", i, l, ci.Top, ci.Complete, want)
			}
			if want := SoftmaxSum(sc, sc[ci.Top[0]]); ci.ExpSum != want || !ci.HasSum {
				t.Fatalf("step %d layer %d: sum %v, want %v", i, l, ci.ExpSum, want)
			}
		}
	}
	short := []Step{{Layers: []LayerStep{{Lookahead: [][]float32{{1, float32(math.NaN()), 3}}}}}}
	IndexLookahead(short, 6, false)
	if ci := short[0].Layers[0].LookaheadIndex[0]; !ci.Complete || !slices.Equal(ci.Top, []int32{2, 0}) {
		t.Fatalf("short vector: %+v", ci)
	}
}
