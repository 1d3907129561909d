//go:build invariants

package policies

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// TestResultIdentities runs randomized configurations (every policy, prefill
// on and off, speculative decoding on and off, caches from the smallest the
// engine takes to the whole model) and checks every identity between a
// Result's counters (docs/metrics.md). It prints its seed; -seed N replays
// one configuration.
func TestResultIdentities(t *testing.T) {
	seeds := []uint64{}
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		base := rand.Uint64() >> 16
		t.Logf("configurations from seed %d on (replay one with -seed N)", base)
		for i := range uint64(560) {
			seeds = append(seeds, base+i)
		}
	}
	for _, seed := range seeds {
		cfg, steps, name, p := identityCase(seed)
		p.Model, p.Trace = cfg.Model, steps
		pol, err := New(name, p)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		res, err := sim.Run(cfg, steps, pol)
		if err != nil {
			t.Fatalf("seed %d (%s, cache %d, prefill %v, block %d): %v", seed, name, cfg.CacheBytes, cfg.Prefill, cfg.SpecBlock, err)
		}
		for _, bad := range resultIdentities(res, cfg) {
			t.Errorf("seed %d (%s, cache %d, prefill %v, block %d): %s", seed, name, cfg.CacheBytes, cfg.Prefill, cfg.SpecBlock, bad)
		}
	}
}

// identityCase is the configuration of one seed: a random model and trace
// (with a prompt), a policy with random parameters, and an engine setting.
func identityCase(seed uint64) (sim.Config, []traces.Step, string, Params) {
	r := rand.New(rand.NewPCG(seed, 0x1d))
	names := Names()
	name := names[int(seed%uint64(len(names)))] // every policy in turn
	m := randomModel(r)
	for i := range m.Layers {
		m.Layers[i].ExpertBytes *= 1 << 10
	}
	m = simModel(m)
	prompt := 1 + r.IntN(12)
	steps := randomTrace(r, m, prompt+20+r.IntN(40), 1+r.IntN(2))
	for s := range steps {
		if s < prompt {
			steps[s].Phase, steps[s].Pass = traces.Prefill, 0
		} else {
			steps[s].Pass = int32(s - prompt + 1)
		}
	}
	cfg := simConfig(m, 0)
	cfg.Prefill = r.IntN(2) == 0
	cfg.CachedFirst = r.IntN(2) == 0
	cfg.Seed = r.Uint64()
	if r.IntN(2) == 0 {
		cfg.SpecBlock, cfg.SpecAccept, cfg.Drafter = 2+r.IntN(4), r.Float64(), "free"
	}
	lo, hi := sim.MinCacheBytes(m, cfg.SpecBlock), m.TotalExpertBytes()
	switch r.IntN(4) { // the extremes, and anywhere between
	case 0:
		cfg.CacheBytes = lo
	case 1:
		cfg.CacheBytes = max(lo, hi)
	default:
		cfg.CacheBytes = lo + r.Int64N(max(hi-lo, 0)+1)
	}
	p := Params{Depth: r.IntN(3), Prefetch: r.IntN(4) > 0, TopN: r.IntN(3),
		PinFraction: []float64{0, 0.01, 0.5, 1}[r.IntN(4)]}
	if r.IntN(3) == 0 {
		p.Threshold = 0.5 + 0.49*r.Float64()
	}
	if r.IntN(3) == 0 {
		p.MaxInflightBytes = 1 + r.Int64N(cfg.CacheBytes)
	}
	return cfg, steps, name, p
}

// resultIdentities lists every identity of docs/metrics.md that res breaks.
func resultIdentities(res *sim.Result, cfg sim.Config) []string {
	var bad []string
	check := func(ok bool, format string, a ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, a...))
		}
	}
	r := res
	check(r.Hits+r.InflightHits+r.Misses == r.Uses, "hits %d + inflight %d + misses %d != uses %d", r.Hits, r.InflightHits, r.Misses, r.Uses)
	check(r.PrefetchCovered <= r.Uses, "prefetch covered %d > uses %d", r.PrefetchCovered, r.Uses)
	check(r.PrefetchCovered <= r.PrefetchRequested, "prefetch covered %d > requested %d (precision %g)", r.PrefetchCovered, r.PrefetchRequested, r.PrefetchPrecision)
	check(r.PrefetchUseful <= r.PrefetchLoads, "useful prefetches %d > prefetch loads %d", r.PrefetchUseful, r.PrefetchLoads)
	check(r.PrefetchLoads <= r.PrefetchRequested, "prefetch loads %d > requested %d", r.PrefetchLoads, r.PrefetchRequested)
	check(r.WastedPrefetchBytes <= r.PrefetchBytes, "wasted prefetch bytes %d > prefetch bytes %d", r.WastedPrefetchBytes, r.PrefetchBytes)
	check((r.PrefetchLoads == 0) == (r.PrefetchBytes == 0), "prefetch loads %d but prefetch bytes %d", r.PrefetchLoads, r.PrefetchBytes)
	check((r.FlashReads == 0) == (r.FlashBytes == 0), "flash reads %d but flash bytes %d", r.FlashReads, r.FlashBytes)
	check(r.Misses == 0 || r.FlashReads > 0, "misses %d without a flash read", r.Misses)
	for _, f := range []struct {
		name string
		v    float64
	}{{"hit rate", r.HitRate}, {"prefetch recall", r.PrefetchRecall}, {"prefetch precision", r.PrefetchPrecision}} {
		check(f.v >= 0 && f.v <= 1, "%s %g outside [0, 1]", f.name, f.v)
	}
	check(r.TimeNS == r.ComputeNS+r.StallNS+r.LoadCPUNS+r.DraftNS, "time %d != compute %d + stall %d + load cpu %d + draft %d", r.TimeNS, r.ComputeNS, r.StallNS, r.LoadCPUNS, r.DraftNS)
	check(r.StallNS == r.StallFlashNS+r.StallFaultCPUNS, "stall %d != flash %d + fault cpu %d", r.StallNS, r.StallFlashNS, r.StallFaultCPUNS)
	check(r.FlashBusyNS <= r.TimeNS, "flash busy %d > time %d", r.FlashBusyNS, r.TimeNS)
	check(r.ContextNS <= r.ComputeNS && r.GPUSyncNS <= r.ComputeNS, "context %d or gpu sync %d > compute %d", r.ContextNS, r.GPUSyncNS, r.ComputeNS)
	check(r.PressureFaultBytes <= r.FlashBytes && r.PressureNS <= r.StallNS, "pressure bytes %d or time %d beyond flash bytes %d or stall %d", r.PressureFaultBytes, r.PressureNS, r.FlashBytes, r.StallNS)
	check(r.Passes > 0 && r.Tokens >= r.Passes && r.Tokens <= r.Passes*int64(cfg.SpecBlock), "tokens %d, passes %d, block %d", r.Tokens, r.Passes, cfg.SpecBlock)
	check(r.RejectedDrafts <= r.Passes*int64(cfg.SpecBlock-1), "rejected drafts %d > passes %d × %d drafts", r.RejectedDrafts, r.Passes, cfg.SpecBlock-1)
	check(cfg.SpecBlock > 1 || r.DraftNS == 0 && r.RejectedDrafts == 0, "draft time %d, rejected %d without speculative decoding", r.DraftNS, r.RejectedDrafts)
	check(r.LatencyP50NS <= r.LatencyP90NS && r.LatencyP90NS <= r.LatencyP99NS && r.LatencyP99NS <= r.LatencyMaxNS, "latencies out of order: %d %d %d %d", r.LatencyP50NS, r.LatencyP90NS, r.LatencyP99NS, r.LatencyMaxNS)
	check(r.PeakResidentBytes <= r.CacheBytes+r.OverBudgetBytes, "peak resident %d > cache %d + over budget %d", r.PeakResidentBytes, r.CacheBytes, r.OverBudgetBytes)
	check((r.OverBudgetLoads == 0) == (r.OverBudgetBytes == 0), "over-budget loads %d, bytes %d", r.OverBudgetLoads, r.OverBudgetBytes)
	check(cfg.Prefill || r.PrefillTokens == 0 && r.PrefillNS == 0, "prefill tokens %d, time %d without prefill", r.PrefillTokens, r.PrefillNS)
	check(r.NeighbourBytes >= r.NeighbourLoads && (r.NeighbourLoads == 0) == (r.NeighbourBytes == 0), "neighbour loads %d, bytes %d", r.NeighbourLoads, r.NeighbourBytes)
	for _, v := range []int64{r.Uses, r.Hits, r.InflightHits, r.Misses, r.PrefetchRequested, r.PrefetchCovered, r.PrefetchLoads,
		r.PrefetchUseful, r.PrefetchBytes, r.WastedPrefetchBytes, r.FlashBytes, r.FlashReads, r.ComputeNS, r.StallNS, r.LoadCPUNS,
		r.DemandQueueWaitNS, r.PrefillNS, r.PrefillTokens} {
		check(v >= 0, "a negative counter: %+v", *r)
	}
	return bad
}
