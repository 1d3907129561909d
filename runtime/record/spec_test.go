package record

import (
	"slices"
	"testing"
)

// The controlled drafter proposes the reference token with probability α:
// over many drafts the share of reference tokens is α within 3 standard
// errors, and a non-reference draft is a valid, different token.
func TestControlledDrafter(t *testing.T) {
	ref := make([]int32, 20000)
	for i := range ref {
		ref[i] = int32(i % 50)
	}
	for _, alpha := range []float64{0, 0.5, 0.9, 1} {
		c := newControlled(ref, 10, alpha, 50, 7)
		hist := make([]int32, 10, 10+len(ref))
		hist = append(hist, ref[0])
		same := 0
		var d []int32
		for len(hist) < 10+len(ref)-4 {
			d = c.draft(hist, 3, d[:0])
			for j, x := range d {
				want := ref[len(hist)-10+j]
				if x == want {
					same++
				} else if x < 0 || x >= 50 {
					t.Fatalf("α %g: draft %d outside the vocabulary", alpha, x)
				}
			}
			hist = append(hist, ref[len(hist)-10])
		}
		n := float64(3 * (len(ref) - 5))
		got := float64(same) / n
		if se := 3 * 0.5 / 100; got < alpha-se || got > alpha+se {
			t.Errorf("α %g: share of reference drafts %g", alpha, got)
		}
		if c.diverged {
			t.Errorf("α %g: diverged while following the reference", alpha)
		}
	}
	c := newControlled(ref, 0, 1, 50, 1)
	if c.draft([]int32{ref[0], 49}, 2, nil); !c.diverged {
		t.Errorf("a sequence off the reference is not noticed")
	}
}

func TestNgramDrafter(t *testing.T) {
	for _, tc := range []struct {
		hist []int32
		n    int
		want []int32
	}{
		{[]int32{1, 2, 3, 9, 1, 2, 3}, 3, []int32{9, 1, 2}}, // 3-gram 1 2 3
		{[]int32{5, 2, 3, 7, 8, 6, 2, 3}, 2, []int32{7, 8}}, // 2-gram 2 3
		{[]int32{4, 1, 4, 2, 4}, 4, []int32{2, 4}},          // 1-gram 4, latest: runs to the end
		{[]int32{1, 2, 3}, 3, nil},                          // nothing repeats
		{[]int32{7}, 3, nil},                                // too short
		{[]int32{1, 2, 1, 2, 9, 1, 2}, 1, []int32{9}},       // the latest occurrence
	} {
		if got := (ngram{}).draft(tc.hist, tc.n, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%v n %d: drafts %v, want %v", tc.hist, tc.n, got, tc.want)
		}
	}
}

func TestAccepted(t *testing.T) {
	for _, tc := range []struct {
		block, greedy []int32
		want          int
	}{
		{[]int32{1, 2, 3, 4}, []int32{2, 3, 4, 5}, 4},
		{[]int32{1, 2, 3, 4}, []int32{2, 9, 4, 5}, 2},
		{[]int32{1, 2, 3, 4}, []int32{9, 3, 4, 5}, 1},
		{[]int32{1}, []int32{9}, 1},
	} {
		if got := accepted(tc.block, tc.greedy); got != tc.want {
			t.Errorf("%v %v: %d, want %d", tc.block, tc.greedy, got, tc.want)
		}
	}
}

func TestSpeculativeValidate(t *testing.T) {
	for _, s := range []Speculative{{Block: 1, Drafter: DrafterNgram}, {Block: 4, Drafter: "mtp"},
		{Block: 4, Drafter: DrafterControlled, Accept: 1.5}, {Block: 4, Drafter: DrafterNgram, Accept: 0.5},
		{Block: 4, Drafter: DrafterModel}, {Block: 4, Drafter: DrafterNgram, DraftModel: "d.gguf"},
		{Block: 4, Drafter: DrafterModel, DraftModel: "d.gguf", Accept: 0.5}} {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	for _, s := range []Speculative{{Block: 4, Drafter: DrafterControlled, Accept: 0.7}, {Block: 4, Drafter: DrafterModel, DraftModel: "d.gguf"}} {
		if err := s.Validate(); err != nil {
			t.Error(err)
		}
	}
}
