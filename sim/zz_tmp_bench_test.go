package sim_test

import (
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

func BenchmarkTmp(b *testing.B) {
	m, _ := devices.LookupModel("minicpm-v-4.7-35b-a3b", "")
	d, _ := devices.LoadDevice("iphone-17-pro-max")
	_, steps, _ := traces.Synth(m, traces.DefaultSynthOptions())
	traces.IndexLookahead(steps, 16, false)
	for _, tc := range []struct {
		name string
		pol  string
		pf   bool
	}{{"lru", "lru", false}, {"les-nopf", "les", false}, {"les", "les", true}, {"oracle", "oracle", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := sim.Config{Model: m, Device: d, CacheBytes: 3 << 30, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1}
			p := policies.DefaultParams(m)
			p.Trace = steps
			p.Prefetch = tc.pf
			var res *sim.Result
			for b.Loop() {
				pol, _ := policies.New(tc.pol, p)
				res, _ = sim.Run(cfg, steps, pol)
			}
			b.ReportMetric(float64(res.FlashReads)/float64(res.Tokens), "reads/tok")
			b.ReportMetric(float64(res.Misses)/float64(res.Tokens), "miss/tok")
			b.ReportMetric(float64(len(steps)*320*b.N)/b.Elapsed().Seconds()/1e6, "Msel/s")
		})
	}
}
