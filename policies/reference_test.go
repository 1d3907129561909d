package policies

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

var seedFlag = flag.Uint64("seed", 0, "replay one randomized cross-check case with this seed (0 = run many)")

// refCache is a deliberately dumb, byte-budgeted demand cache: a slice of
// entries scanned in full on every eviction. choose picks the index of the
// victim among the evictable entries.
type refCache struct {
	model    *devices.ModelSpec
	capacity int64
	used     int64
	entries  []refEntry
	clock    int64
	uses     map[sim.Key]int64 // whole-run use counts (LFU)
	choose   func(c *refCache, evictable []int, step, layer int) int
	trace    []traces.Step
}

type refEntry struct {
	key  sim.Key
	last int64 // clock of the last admission or use
}

func (c *refCache) size(k sim.Key) int64 {
	l, _ := k.Split(c.model.Experts)
	return c.model.Layers[l].ExpertBytes
}

func (c *refCache) find(k sim.Key) int {
	for i, e := range c.entries {
		if e.key == k {
			return i
		}
	}
	return -1
}

// run replays steps through the reference and returns every use's outcome.
func (c *refCache) run(steps []traces.Step) []outcome {
	var out []outcome
	c.uses = map[sim.Key]int64{}
	for s := range steps {
		for l, ls := range steps[s].Layers {
			var sel []sim.Key
			for _, e := range ls.Experts {
				k := sim.MakeKey(l, int(e), c.model.Experts)
				dup := false
				for _, x := range sel {
					dup = dup || x == k
				}
				if !dup {
					sel = append(sel, k)
				}
			}
			inUse := func(k sim.Key) bool {
				for _, x := range sel {
					if x == k {
						return true
					}
				}
				return false
			}
			for _, k := range sel {
				if c.find(k) >= 0 {
					out = append(out, outcome{k, true})
					continue
				}
				out = append(out, outcome{k, false})
				for c.capacity-c.used < c.size(k) {
					var ev []int
					for i, e := range c.entries {
						if !inUse(e.key) {
							ev = append(ev, i)
						}
					}
					i := c.choose(c, ev, s, l)
					c.used -= c.size(c.entries[i].key)
					c.entries = append(c.entries[:i], c.entries[i+1:]...)
				}
				c.clock++
				c.entries = append(c.entries, refEntry{k, c.clock})
				c.used += c.size(k)
			}
			for _, k := range sel {
				c.clock++
				c.entries[c.find(k)].last = c.clock
				c.uses[k]++
			}
		}
	}
	return out
}

// refLRU evicts the entry with the oldest clock.
func refLRU(c *refCache, ev []int, _, _ int) int {
	best := ev[0]
	for _, i := range ev {
		if c.entries[i].last < c.entries[best].last {
			best = i
		}
	}
	return best
}

// refLFU evicts the entry with the fewest uses, oldest clock among equals.
func refLFU(c *refCache, ev []int, _, _ int) int {
	best := ev[0]
	for _, i := range ev {
		a, b := c.entries[i], c.entries[best]
		if c.uses[a.key] < c.uses[b.key] || c.uses[a.key] == c.uses[b.key] && a.last < b.last {
			best = i
		}
	}
	return best
}

// refBelady evicts the entry whose next use after (step, layer) is farthest,
// found by scanning the trace forward; never-again counts as farthest; ties
// go to the lower key.
func refBelady(c *refCache, ev []int, step, layer int) int {
	nextUse := func(k sim.Key) int64 {
		kl, ke := k.Split(c.model.Experts)
		for s := step; s < len(c.trace); s++ {
			if s == step && kl <= layer {
				continue
			}
			for _, e := range c.trace[s].Layers[kl].Experts {
				if int(e) == ke {
					return int64(s)*int64(len(c.model.Layers)) + int64(kl)
				}
			}
		}
		return never
	}
	best, bestNext := -1, int64(-1)
	for _, i := range ev {
		k := c.entries[i].key
		n := nextUse(k)
		if n > bestNext || n == bestNext && k < c.entries[best].key {
			best, bestNext = i, n
		}
	}
	return best
}

// TestAgainstReference replays random traces through each fast policy in the
// demand-only replay loop and through a slow reference; the hit/miss
// sequences must be identical. A failure prints its seed; rerun one case with
// go test ./policies -run TestAgainstReference -seed=N.
func TestAgainstReference(t *testing.T) {
	cases := []struct {
		policy string
		ref    func(c *refCache, ev []int, step, layer int) int
	}{
		{"lru", refLRU},
		{"ondemand", refLRU},
		{"lfu", refLFU},
		{"oracle", refBelady},
		{"les", refLRU}, // prefetch off (Params.Prefetch false): plain LRU
	}
	seeds := make([]uint64, 0, 150)
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		for i := range uint64(150) {
			seeds = append(seeds, 1+i*7919)
		}
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			for _, seed := range seeds {
				if err := crossCheck(tc.policy, tc.ref, seed); err != nil {
					t.Fatalf("seed %d: %v\nreplay: go test ./policies -run 'TestAgainstReference/%s' -seed=%d", seed, err, tc.policy, seed)
				}
			}
		})
	}
}

func crossCheck(policy string, ref func(c *refCache, ev []int, step, layer int) int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	m := randomModel(r)
	capacity := randomCapacity(r, m)
	steps := randomTrace(r, m, 20+r.IntN(120), 2)
	pol, err := New(policy, Params{Model: m, Trace: steps})
	if err != nil {
		return err
	}
	fast, err := newReplayer(m, capacity, pol, false).run(steps)
	if err != nil {
		return err
	}
	want := (&refCache{model: m, capacity: capacity, choose: ref, trace: steps}).run(steps)
	desc := fmt.Sprintf("%d layers × %d experts, top-%d, cache %d B, %d steps", len(m.Layers), m.Experts, m.TopK, capacity, len(steps))
	if len(fast) != len(want) {
		return fmt.Errorf("%s: %d uses, reference %d", desc, len(fast), len(want))
	}
	for i := range fast {
		if fast[i] != want[i] {
			return fmt.Errorf("%s: use %d: got %v, reference %v", desc, i, fast[i], want[i])
		}
	}
	return nil
}
