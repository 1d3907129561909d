package traces

import "testing"

// By hand, one layer, top-2: pass 0 accepts A {0,1} and rejects D1 {1,2}
// then D2 {2,3}; pass 1 starts with N {3,4}. D1 shares 1 with the token
// before it (A), D2 1 with D1: prev 2/4. With the pass's accepted tokens: D1
// 1, D2 0: block 1/4. With the next token N: D1 0, D2 1: next 1/4. A draft
// at the sequence's end (pass 2, no next token) counts in prev and block only.
func TestDraftOverlap(t *testing.T) {
	step := func(ph Phase, pass int32, xs ...int32) Step {
		return Step{Phase: ph, Pass: pass, Layers: []LayerStep{{Experts: xs}}}
	}
	steps := []Step{step(Prefill, 9, 5, 6), step(Decode, 0, 0, 1), step(Draft, 0, 1, 2), step(Draft, 0, 2, 3), step(Decode, 1, 3, 4)}
	a := newDraftAcc(1)
	for i := range steps {
		a.add(&steps[i])
	}
	o := a.result()
	if o == nil || o.Drafts != 2 || o.Prev != 0.5 || o.Block != 0.25 || o.Next != 0.25 || o.NextByLayer[0] != 0.25 {
		t.Fatalf("overlap %+v, want 2 drafts, prev 0.5, block 0.25, next 0.25", o)
	}
	end := step(Draft, 1, 3, 7) // shares 3 with N (before it and accepted); no next token
	a.add(&end)
	if o = a.result(); o.Drafts != 3 || o.Prev != 3.0/6 || o.Block != 2.0/6 || o.Next != 0.25 {
		t.Fatalf("with a last draft: %+v, want 3 drafts, prev 1/2, block 1/3, next still 1/4", o)
	}
	if newDraftAcc(1).result() != nil {
		t.Fatalf("no drafts: want nil")
	}
}
