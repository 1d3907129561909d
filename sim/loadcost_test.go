package sim_test

import (
	"testing"

	"github.com/lessim/lessim/policies"
)

// TestLoadCost isolates the compute thread's cost of loading experts
// (Device.LoadFixedNS, LoadRate): off it is zero and changes nothing; on,
// every load (demand or prefetch) costs fixed + bytes/rate, computed by hand,
// and the run takes at least that much longer.
func TestLoadCost(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 40, 3)
	for _, policy := range []string{"lru", "les"} {
		off := baseConfig(12 * mib)
		base := run(t, off, steps, policy, policies.DefaultParams(m))
		if base.LoadCPUNS != 0 {
			t.Fatalf("%s: load cost %d with none stated", policy, base.LoadCPUNS)
		}
		on := baseConfig(12 * mib)
		dev := *on.Device
		dev.LoadFixedNS, dev.LoadRate = 5000, 2e9 // 5 us + 1 MiB / 2 GB/s = 5 us + 524,288 ns
		on.Device = &dev
		res := run(t, on, steps, policy, policies.DefaultParams(m))
		loads := res.Misses + res.PrefetchLoads
		perLoad := int64(5000 + 524288) // 1,048,576 B / 2e9 B/s = 524,288 ns exactly
		if res.LoadCPUNS != loads*perLoad {
			t.Errorf("%s: load cost %d ns, want %d loads × %d ns = %d", policy, res.LoadCPUNS, loads, perLoad, loads*perLoad)
		}
		if res.TimeNS < base.TimeNS || res.TimeNS > base.TimeNS+res.LoadCPUNS+res.StallNS {
			t.Errorf("%s: time %d with load cost, %d without (load %d)", policy, res.TimeNS, base.TimeNS, res.LoadCPUNS)
		}
		var series int64
		on.KeepSeries = true
		for _, s := range run(t, on, steps, policy, policies.DefaultParams(m)).Series {
			series += s.LoadCPUNS
		}
		if series != res.LoadCPUNS {
			t.Errorf("%s: series load cost %d, total %d", policy, series, res.LoadCPUNS)
		}
	}
}
