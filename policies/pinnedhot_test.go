package policies

import (
	"slices"
	"testing"

	"github.com/lessim/lessim/sim"
)

func TestPinnedHot(t *testing.T) {
	// Keys: layer 0 = 0..3, layer 1 = 4..7. Popularity: key 1 ×3, key 6 ×3,
	// key 0 ×2, key 5 ×1, key 2 ×1, key 4 ×1.
	m := testModel(4, 2, 100, 100)
	tr := steps(
		[][]int32{{1, 0}, {2, 0}},
		[][]int32{{1, 0}, {2, 1}},
		[][]int32{{1, 2}, {2}},
	)
	cases := []struct {
		name   string
		frac   float64
		cap    int64
		pinned []sim.Key
	}{
		{"half of 400 bytes pins the top two", 0.5, 400, []sim.Key{1, 6}},
		{"ties by lower key", 0.75, 400, []sim.Key{1, 6, 0}},
		{"budget below one expert pins none", 0.2, 400, []sim.Key{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewPinnedHot(Params{Model: m, Trace: tr, PinFraction: tc.frac})
			if err != nil {
				t.Fatal(err)
			}
			v := newFixtureView(m, tc.cap)
			h.Prefetch(&sim.Lookahead{Layer: 0, Steps: []int64{0}}, v, nil)
			if got := h.Pinned(); !slices.Equal(got, tc.pinned) {
				t.Errorf("pinned %v, want %v", got, tc.pinned)
			}
		})
	}
}

func TestPinnedHotSizes(t *testing.T) {
	// Layer 1 experts are three times larger: the budget of 250 bytes takes
	// key 1 (100 B), then key 6 (300 B) does not fit and the list stops.
	m := testModel(4, 2, 100, 300)
	tr := steps([][]int32{{1, 0}, {2, 0}}, [][]int32{{1, 0}, {2, 1}}, [][]int32{{1, 2}, {2}})
	h, err := NewPinnedHot(Params{Model: m, Trace: tr, PinFraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	h.Victim(newFixtureView(m, 500), 1, false)
	if got := h.Pinned(); !slices.Equal(got, []sim.Key{1}) {
		t.Errorf("pinned %v, want [1]", got)
	}
}

func TestPinnedHotPrefetchAndVictims(t *testing.T) {
	m := testModel(4, 2, 100, 100)
	tr := steps([][]int32{{1, 0}, {2, 0}}, [][]int32{{1, 0}, {2, 1}}, [][]int32{{1, 2}, {2}})
	mk := func() sim.Policy { return mustPolicy(t, "pinned-hot", Params{Model: m, Trace: tr}) } // pins 1 and 6 at 400 B
	pol, v := mk(), newFixtureView(m, 400)
	if got := pol.Prefetch(&sim.Lookahead{Layer: 0, Steps: []int64{0}}, v, nil); !slices.Equal(got, []sim.Key{6}) {
		t.Errorf("layer 0 prefetch %v, want [6]", got)
	}
	if got := pol.Prefetch(&sim.Lookahead{Layer: 1, Steps: []int64{0}}, v, nil); !slices.Equal(got, []sim.Key{1}) {
		t.Errorf("last layer prefetch %v, want [1] (next pass's layer 0)", got)
	}
	v.set(1, sim.Resident)
	if got := pol.Prefetch(&sim.Lookahead{Layer: 1, Steps: []int64{0}}, v, nil); len(got) != 0 {
		t.Errorf("resident pinned key prefetched again: %v", got)
	}
	checkVictims(t, mk, m, 400, []victimCase{
		{"pinned never evicted for a prefetch", "m0 a1 a6", true, -1},
		{"unpinned lru first", "m0 a1 a0 a6 a2 u0", true, 2},
		{"demand falls back to the least popular pinned", "m0 a1 a6", false, 6},
		{"demand fallback skips in-use pinned", "m0 a1 a6 i6", false, 1},
	})
}
