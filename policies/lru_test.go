package policies

import (
	"testing"

	"github.com/lessim/lessim/sim"
)

func TestLRUVictim(t *testing.T) {
	m := testModel(8, 2, 100, 100)
	cases := []victimCase{
		{"empty declines", "", false, -1},
		{"admission order", "a0 a1 a2", false, 0},
		{"use refreshes", "a0 a1 a2 u0", false, 1},
		{"admission refreshes", "a0 a1 e0 a0", false, 1},
		{"in use skipped", "a0 a1 a2 i0", false, 1},
		{"loading skipped", "l0 a1 a2", false, 1},
		{"evicted forgotten", "a0 a1 e0", false, 1},
		{"all busy declines", "a0 l1 i0", false, -1},
		{"prefetch room is plain lru", "a0 p9 u0", true, 9},
		{"keys across layers", "a8 a1 u8", false, 1},
	}
	for _, name := range []string{"lru", "ondemand"} {
		t.Run(name, func(t *testing.T) {
			checkVictims(t, func() sim.Policy { return mustPolicy(t, name, Params{Model: m}) }, m, 1000, cases)
		})
	}
}

func TestLRUPrefetchesNothing(t *testing.T) {
	m := testModel(4, 1, 100, 100)
	for _, name := range []string{"lru", "ondemand", "lfu"} {
		pol := mustPolicy(t, name, Params{Model: m})
		la := &sim.Lookahead{Layer: 0, Steps: []int64{0}, Scores: [][][]float32{{{1, 2, 3, 4}}}}
		if got := pol.Prefetch(la, newFixtureView(m, 1000), nil); len(got) != 0 {
			t.Errorf("%s prefetched %v", name, got)
		}
	}
}

// TestLRUNoAllocs pins the O(1), allocation-free event and victim path.
func TestLRUNoAllocs(t *testing.T) {
	m := testModel(64, 8, 100, 100, 100)
	pol := mustPolicy(t, "lru", Params{Model: m})
	v := newFixtureView(m, 1<<20)
	for k := range sim.Key(100) {
		v.set(k, sim.Resident)
		pol.Observe(sim.Event{Kind: sim.Admitted, Key: k})
	}
	k := sim.Key(0)
	allocs := testing.AllocsPerRun(100, func() {
		pol.Observe(sim.Event{Kind: sim.Used, Key: k % 100})
		pol.Victim(v, 1, false)
		k += 7
	})
	if allocs != 0 {
		t.Errorf("%v allocations per event+victim, want 0", allocs)
	}
}
