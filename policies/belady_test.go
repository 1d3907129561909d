package policies

import "testing"

// TestSimBeladyMIN: with equal expert sizes and one token per pass, Belady's
// MIN misses no more than any demand-paging policy at the same cache size
// (Belady 1966; Mattson et al. 1970), and no policy, prefetching or not,
// loads fewer experts in total (a prefetch can always be deferred to the
// demand without loading more), through the real engine.
func TestSimBeladyMIN(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		m, st := simCase(seed)
		for i := range m.Layers {
			m.Layers[i].ExpertBytes = m.Layers[0].ExpertBytes
			m.Layers[i].Tensors = nil
		}
		for _, c := range cacheSweep(m, 1, 6) {
			cfg := simConfig(m, c)
			min := runSim(t, cfg, st, "belady", Params{})
			if min.PrefetchLoads != 0 {
				t.Fatalf("belady prefetched %d loads", min.PrefetchLoads)
			}
			for _, name := range []string{"lru", "ondemand", "lfu", "pinned-hot", "les"} {
				res := runSim(t, cfg, st, name, DefaultParams(m))
				if loads := res.Misses + res.PrefetchLoads; loads < min.Misses {
					t.Errorf("seed %d cache %d: %s loads %d < belady %d", seed, c, name, loads, min.Misses)
				}
			}
		}
	}
}
