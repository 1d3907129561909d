//go:build llamacpp

package record

import (
	"slices"
	"testing"

	"github.com/lessim/lessim/traces"
)

// TestRecordSpeculative: greedy speculative decoding emits the plain greedy
// decode's tokens whatever the drafter; each verify pass is written as its
// emitted tokens (decode rows) and then its rejected drafts (draft rows at
// the positions after them), all of one pass id, every row routed at every
// layer. With every controlled draft right, passes are full blocks and no
// draft is rejected; at α 0.5 some are.
func TestRecordSpeculative(t *testing.T) {
	greedy := func(o *Options) { o.Temperature, o.LookaheadDepth = 0, 1 }
	plain, _ := record(t, 0.7, greedy)
	for _, sp := range []Speculative{
		{Block: 4, Drafter: DrafterControlled, Accept: 1, Seed: 3},
		{Block: 4, Drafter: DrafterControlled, Accept: 0.5, Seed: 3},
		{Block: 3, Drafter: DrafterNgram},
	} {
		sum, steps := record(t, 0.7, func(o *Options) { greedy(o); o.Spec = &sp })
		for i := range plain.Generated {
			if !slices.Equal(sum.Generated[i], plain.Generated[i]) {
				t.Fatalf("%+v: prompt %d decoded %v, plain greedy %v", sp, i, sum.Generated[i], plain.Generated[i])
			}
		}
		if sum.Diverged != 0 {
			t.Errorf("%+v: %d prompts left the greedy reference", sp, sum.Diverged)
		}
		decode, drafts, passes := 0, 0, map[[2]int32]int{}
		next := map[int32]int32{} // sequence → position of its next decode row
		for _, s := range steps {
			switch s.Phase {
			case traces.Decode:
				if p, ok := next[s.Seq]; ok && s.Pos != p {
					t.Fatalf("%+v: seq %d decode row at position %d, want %d", sp, s.Seq, s.Pos, p)
				}
				next[s.Seq] = s.Pos + 1
				decode++
			case traces.Draft:
				drafts++
				if s.Pos < next[s.Seq] {
					t.Fatalf("%+v: seq %d draft at position %d before the pass's next token %d", sp, s.Seq, s.Pos, next[s.Seq])
				}
			default:
				continue
			}
			passes[[2]int32{s.Seq, s.Pass}]++
			if n := passes[[2]int32{s.Seq, s.Pass}]; n > sp.Block {
				t.Fatalf("%+v: pass %d holds %d rows", sp, s.Pass, n)
			}
		}
		if decode != sum.DecodeTokens || drafts != sum.RejectedDrafts || len(passes) != sum.DecodePasses {
			t.Errorf("%+v: rows decode %d drafts %d passes %d, summary %d %d %d", sp, decode, drafts, len(passes), sum.DecodeTokens, sum.RejectedDrafts, sum.DecodePasses)
		}
		switch {
		case sp.Accept == 1 && (drafts != 0 || sum.DecodePasses != 3*3):
			t.Errorf("α 1: %d rejected drafts, %d passes; want 0 and 3 full blocks per prompt", drafts, sum.DecodePasses)
		case sp.Drafter == DrafterControlled && sp.Accept == 0.5 && drafts == 0:
			t.Errorf("α 0.5: no rejected draft")
		}
		t.Logf("%+v: %d passes, %d tokens, %d rejected drafts", sp, sum.DecodePasses, decode, drafts)
	}
}
