package policies

import (
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// simDevice is a small phone-like device for engine runs: the numbers are
// test fixtures (assumed), not a profile.
func simDevice() *devices.Device {
	return &devices.Device{
		Name: "testphone", RAMBytes: 8 << 30, ReserveBytes: 1 << 30,
		MemBandwidth: 50e9, MemEfficiency: 0.5, ComputeFLOPS: 1e12, LayerOverhead: 2000,
		Flash: devices.Flash{
			Lanes: 2, LatencyNS: 80_000,
			SingleLane: []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 400e6}, {ReadBytes: 4 << 20, BytesPerSec: 1.8e9}},
			Aggregate:  []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 800e6}, {ReadBytes: 4 << 20, BytesPerSec: 2.4e9}},
			PageBytes:  16 << 10, ReadAheadBytes: 128 << 10, FaultNS: 2000,
		},
	}
}

// simModel gives m the dense work the engine needs to take time.
func simModel(m *devices.ModelSpec) *devices.ModelSpec {
	for i := range m.Layers {
		m.Layers[i].DenseBytes = 1 << 20
		m.Layers[i].DenseFLOPsPerToken = 1 << 20
		m.Layers[i].ExpertFLOPsPerToken = 1 << 18
	}
	m.NonExpertBytes, m.HeadBytes, m.HeadFLOPsPerToken = 16<<20, 1<<20, 1<<20
	return m
}

// simConfig is a decode-only, per-expert-layout, cached-first configuration.
func simConfig(m *devices.ModelSpec, cache int64) sim.Config {
	return sim.Config{Model: m, Device: simDevice(), CacheBytes: cache, Layout: sim.LayoutPerExpert,
		CachedFirst: true, SpecBlock: 1, Seed: 1}
}

func runSim(t *testing.T, cfg sim.Config, st []traces.Step, name string, p Params) *sim.Result {
	t.Helper()
	p.Model, p.Trace = cfg.Model, st
	res, err := sim.Run(cfg, st, mustPolicy(t, name, p))
	if err != nil {
		t.Fatalf("%s at cache %d: %v", name, cfg.CacheBytes, err)
	}
	return res
}

// simCase is a random model (expert sizes in KiB-scale bytes, layer-dependent)
// with a random trace carrying depth-2 lookahead scores.
func simCase(seed uint64) (*devices.ModelSpec, []traces.Step) {
	r := rand.New(rand.NewPCG(seed, 0x51))
	m := randomModel(r)
	for i := range m.Layers {
		m.Layers[i].ExpertBytes *= 1 << 10
	}
	return simModel(m), randomTrace(r, m, 60+r.IntN(60), 2)
}

// cacheSweep is every size from the engine's minimum to the whole model in
// about n steps.
func cacheSweep(m *devices.ModelSpec, specBlock, n int) []int64 {
	lo, hi := sim.MinCacheBytes(m, specBlock), m.TotalExpertBytes()
	var out []int64
	for i := range n + 1 {
		out = append(out, lo+(hi-lo)*int64(i)/int64(n))
	}
	return out
}

// TestSimLRUMissesNeverRise: LRU is a stack algorithm, so a larger cache
// never misses more (Mattson et al. 1970), here through the real engine with
// layer-dependent sizes and asynchronous loads.
func TestSimLRUMissesNeverRise(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		m, st := simCase(seed)
		for _, name := range []string{"lru", "ondemand"} {
			prev := int64(-1)
			for _, c := range cacheSweep(m, 1, 12) {
				res := runSim(t, simConfig(m, c), st, name, Params{})
				if prev >= 0 && res.Misses > prev {
					t.Errorf("seed %d %s: %d misses at cache %d, more than %d at the smaller size", seed, name, res.Misses, c, prev)
				}
				prev = res.Misses
			}
		}
	}
}

// TestSimOracleBound: no policy misses less than the oracle at equal cache.
func TestSimOracleBound(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		m, st := simCase(seed)
		for _, c := range cacheSweep(m, 1, 6) {
			cfg := simConfig(m, c)
			or := runSim(t, cfg, st, "oracle", Params{})
			for _, name := range []string{"lru", "ondemand", "lfu", "les", "pinned-hot"} {
				p := DefaultParams(m)
				if name == "les" {
					p.Depth = 2
				}
				if res := runSim(t, cfg, st, name, p); res.Misses < or.Misses {
					t.Errorf("seed %d cache %d: %s misses %d < oracle %d", seed, c, name, res.Misses, or.Misses)
				}
			}
		}
	}
}

// TestSimUnlimitedCacheColdMisses: with room for every expert nothing is
// evicted, so each distinct key is loaded once: by a demand miss or by a
// prefetch that is then used.
func TestSimUnlimitedCacheColdMisses(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		m, st := simCase(seed)
		distinct := map[sim.Key]bool{}
		for s := range st {
			for l, ls := range st[s].Layers {
				for _, e := range ls.Experts {
					distinct[sim.MakeKey(l, int(e), m.Experts)] = true
				}
			}
		}
		cfg := simConfig(m, m.TotalExpertBytes())
		for _, name := range Names() {
			res := runSim(t, cfg, st, name, DefaultParams(m))
			if got := res.Misses + res.PrefetchUseful; got != int64(len(distinct)) {
				t.Errorf("seed %d %s: misses %d + useful prefetches %d = %d, want %d distinct keys",
					seed, name, res.Misses, res.PrefetchUseful, got, len(distinct))
			}
			if res.PrefetchLoads == 0 && res.Misses != int64(len(distinct)) {
				t.Errorf("seed %d %s: %d misses without prefetch, want %d", seed, name, res.Misses, len(distinct))
			}
		}
	}
}

// TestSimLESDisabledEqualsOnDemand: les that cannot prefetch produces the
// same Result as ondemand, field by field, also with speculative decoding.
func TestSimLESDisabledEqualsOnDemand(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		m, st := simCase(seed)
		for _, spec := range []int{1, 3} {
			lo := sim.MinCacheBytes(m, spec)
			cfg := simConfig(m, lo+(m.TotalExpertBytes()-lo)/3)
			cfg.SpecBlock, cfg.SpecAccept = spec, 0.6
			want := runSim(t, cfg, st, "ondemand", Params{})
			want.Policy = ""
			for _, p := range []Params{{Depth: 2}, {Prefetch: true}} {
				got := runSim(t, cfg, st, "les", p)
				got.Policy = ""
				if !resultsEqual(got, want) {
					t.Errorf("seed %d spec %d: les %+v differs from ondemand:\n got %+v\nwant %+v", seed, spec, p, got, want)
				}
			}
		}
	}
}

// eventsOnly hides a policy's optional sim.UsesObserver and
// sim.LoadObserver, so the engine reports every Used, Admitted and Evicted
// event through Observe. It passes sim.LookaheadRouter on
// (the engine shows lookahead scores only to a policy that runs the router).
type eventsOnly struct{ sim.Policy }

func (p eventsOnly) UsesLookahead() bool {
	lr, ok := p.Policy.(sim.LookaheadRouter)
	return ok && lr.UsesLookahead()
}

// TestSimObserveUsesMatchesObserve: every registered policy gives the same
// Result, field by field, whether the engine reports a layer's uses with
// ObserveUses and admissions and evictions with Admitted and Evicted (when
// the policy has them) or one Observe call per event; with
// multi-token passes (speculative blocks) the uses come in last-use order.
func TestSimObserveUsesMatchesObserve(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		m, st := simCase(seed)
		for _, spec := range []int{1, 3} {
			lo := sim.MinCacheBytes(m, spec)
			cfg := simConfig(m, lo+(m.TotalExpertBytes()-lo)/4)
			cfg.SpecBlock, cfg.SpecAccept = spec, 0.6
			for _, name := range Names() {
				p := DefaultParams(m)
				p.Model, p.Trace, p.Depth = m, st, 2
				want, err := sim.Run(cfg, st, eventsOnly{mustPolicy(t, name, p)})
				if err != nil {
					t.Fatal(err)
				}
				got := runSim(t, cfg, st, name, p)
				if !resultsEqual(got, want) {
					t.Errorf("seed %d spec %d %s: ObserveUses differs from Observe:\n got %+v\nwant %+v", seed, spec, name, got, want)
				}
			}
		}
	}
}
