package policies

import (
	"testing"

	"github.com/lessim/lessim/sim"
)

func TestLFUVictim(t *testing.T) {
	m := testModel(8, 2, 100, 100)
	cases := []victimCase{
		{"empty declines", "", false, -1},
		{"fewest uses", "a0 u0 u0 a1 u1 a2 u2 u2", false, 1},
		{"ties least recent", "a0 a1 a2 u2 u1 u0", false, 2},
		{"admitted unused first", "a0 u0 a1", false, 1},
		{"in use skipped", "a0 a1 u1 a2 u2 u2 i0", false, 1},
		{"loading skipped", "l0 a1 u1", false, 1},
		{"best-first past busy keys", "a0 a1 a2 a3 u3 u3 u2 i0 i1", false, 2},
		{"counts survive eviction", "a0 u0 u0 u0 e0 a1 u1 a0", false, 1},
		{"evicted forgotten", "a0 a1 u1 e0", false, 1},
		{"all busy declines", "a0 l1 i0", false, -1},
	}
	checkVictims(t, func() sim.Policy { return mustPolicy(t, "lfu", Params{Model: m}) }, m, 1000, cases)
}

// TestLFUHeapInvariant churns the heap and checks it against a scan.
func TestLFUHeapInvariant(t *testing.T) {
	m := testModel(16, 2, 100, 100)
	f, err := NewLFU(Params{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	v := newFixtureView(m, 1<<20)
	for i := range 2000 {
		k := sim.Key((i * 7919) % 32)
		switch i % 5 {
		case 0, 1, 2:
			if v.state[k] == sim.Absent {
				v.set(k, sim.Resident)
				f.Observe(sim.Event{Kind: sim.Admitted, Key: k})
			}
			f.Observe(sim.Event{Kind: sim.Used, Key: k})
		case 3:
			if v.state[k] != sim.Absent {
				v.set(k, sim.Absent)
				f.Observe(sim.Event{Kind: sim.Evicted, Key: k})
			}
		case 4:
			got, ok := f.Victim(v, 1, false)
			want, wok := sim.Key(-1), false
			for _, c := range f.heap {
				if !wok || f.less(c, int32(want)) {
					want, wok = sim.Key(c), true
				}
			}
			if ok != wok || ok && got != want {
				t.Fatalf("op %d: victim %d,%v; scan says %d,%v", i, got, ok, want, wok)
			}
		}
		for j := 1; j < len(f.heap); j++ {
			if f.less(f.heap[j], f.heap[(j-1)/2]) {
				t.Fatalf("op %d: heap order broken at %d", i, j)
			}
		}
	}
}
