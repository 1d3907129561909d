package policies

import (
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// TestOracleIndexExact drives the oracle with random admissions, evictions,
// uses and passes (re-verified ones included) and checks after every event
// that its victim index is exact: a position is in byUse, with held counting
// them, exactly when it is the next use of that many cached keys; and that
// Victim names what a scan of every cached key names (farthest next use,
// never first, ties to the lower key).
func TestOracleIndexExact(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		m := testModel(6, 2, 100, 100, 100)
		tr := randomTrace(r, m, 40, 0)
		o, err := NewOracle(Params{Model: m, Trace: tr})
		if err != nil {
			t.Fatal(err)
		}
		v := newFixtureView(m, 1<<40)
		step := int64(0)
		o.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Step: 0, Tokens: 1})
		for i := 0; i < 400; i++ {
			k := sim.Key(r.IntN(len(o.keys)))
			switch n := r.IntN(10); {
			case n < 3:
				if v.State(k) == sim.Absent {
					v.set(k, sim.Resident)
					o.Observe(sim.Event{Kind: sim.Admitted, Key: k, Step: step})
				}
			case n < 5:
				if v.State(k) != sim.Absent {
					v.set(k, sim.Absent)
					o.Observe(sim.Event{Kind: sim.Evicted, Key: k, Step: step})
				}
			case n < 9:
				l := r.IntN(len(m.Layers))
				o.ObserveUses(keysOf(m, tr, int(step), l), l, step)
			default:
				// The next pass, or a re-verification of the current step.
				if r.IntN(3) > 0 && step+1 < int64(len(tr)) {
					step++
				}
				o.Observe(sim.Event{Kind: sim.PassStart, Layer: -1, Step: step, Tokens: 1})
			}
			checkOracleIndex(t, seed, i, o, v)
		}
	}
}

// keysOf is the keys trace step s selects at layer l.
func keysOf(m *devices.ModelSpec, tr []traces.Step, s, l int) []sim.Key {
	var ks []sim.Key
	for _, e := range tr[s].Layers[l].Experts {
		ks = append(ks, sim.MakeKey(l, int(e), m.Experts))
	}
	return ks
}

// checkOracleIndex compares the oracle's victim index and its victim with a
// scan of every key (every resident key is evictable in v).
func checkOracleIndex(t *testing.T, seed uint64, i int, o *Oracle, v *fixtureView) {
	t.Helper()
	want := make([]heldAt, len(o.held))
	best, bestPos := sim.Key(-1), int64(-1)
	for k := range o.keys {
		ks := &o.keys[k]
		if ks.cached != (v.State(sim.Key(k)) != sim.Absent) {
			t.Fatalf("seed %d event %d: key %d cached %v, view says %v", seed, i, k, ks.cached, v.State(sim.Key(k)))
		}
		if !ks.cached {
			continue
		}
		pos := o.next(sim.Key(k))
		if pos != never {
			want[pos] = (want[pos] + 1<<32) ^ heldAt(k)
		}
		if pos > bestPos {
			best, bestPos = sim.Key(k), pos
		}
	}
	for p := range want {
		if o.held[p] != want[p] || (o.byUse.next(p) == p) != (want[p].count() > 0) {
			t.Fatalf("seed %d event %d: position %d held %#x (in byUse %v), want %#x", seed, i, p, o.held[p], o.byUse.next(p) == p, want[p])
		}
	}
	got, ok := o.Victim(v, 0, false)
	if ok != (best >= 0) || ok && got != best {
		t.Fatalf("seed %d event %d: victim %d (%v), a scan names %d", seed, i, got, ok, best)
	}
}
