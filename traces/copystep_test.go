package traces

import (
	"reflect"
	"testing"
)

// TestCopyStepReusesAndMatchesClone: copying steps of different shapes into
// one Step gives each time what CloneStep gives (nil stays nil, empty stays
// empty), and the copy shares nothing with its source.
func TestCopyStepReusesAndMatchesClone(t *testing.T) {
	m := tsSpec(3, 8, 2)
	o := DefaultSynthOptions()
	o.Tokens, o.PromptTokens, o.LookaheadDepth, o.Seed = 6, 2, 2, 5
	_, steps, err := Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	IndexLookahead(steps[:3], 4, true)
	steps[1].Layers[0].Lookahead = [][]float32{{}, nil} // empty and absent depths
	steps[2].Layers[1].Experts = nil
	steps[4].Layers = nil
	var dst Step
	for i := range steps {
		CopyStep(&dst, &steps[i])
		if want := CloneStep(&steps[i]); !reflect.DeepEqual(dst, want) {
			t.Fatalf("step %d: copy %+v\nclone %+v", i, dst, want)
		}
		for l := range dst.Layers {
			if len(dst.Layers[l].Experts) > 0 {
				dst.Layers[l].Experts[0] = -7
				if steps[i].Layers[l].Experts[0] == -7 {
					t.Fatalf("step %d layer %d: the copy shares its experts with the source", i, l)
				}
			}
		}
	}
}
