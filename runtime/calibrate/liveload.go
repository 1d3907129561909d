//go:build llamacpp && linux

package calibrate

import (
	"context"
	"fmt"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// measureLiveLoad measures the compute-thread cost of loading an expert in
// lessim's live engine: two live runs of the model with policy ondemand (no
// prefetch), one with a cache that holds every expert (loads only while the
// cache warms) and one with 15% of the expert bytes (many loads), each
// o.Tokens decode tokens, and a least-squares line of each token's compute
// time (wall − stall: the time the compute thread was not waiting for
// reads) against its loads. The slope is what one load adds to the compute
// thread (bookkeeping, and the I/O lanes' and the evictor's CPU and memory
// traffic competing with it); the intercept is the engine's per-token
// compute with every expert resident.
func measureLiveLoad(ctx context.Context, o *Options, logf func(string, ...any)) (*LiveLoad, error) {
	ll := &LiveLoad{}
	var xs, ys []float64
	for _, frac := range []string{"100%", "15%"} {
		lo := live.DefaultOptions()
		lo.Model, lo.Policy, lo.Tokens, lo.Threads, lo.KeepSeries = o.Model, "ondemand", o.Tokens, 1, true
		lo.EnsureDefaults()
		b, err := cacheFraction(o.Model, frac)
		if err != nil {
			return nil, err
		}
		lo.Cache = b
		_, series, err := live.Run(ctx, lo)
		if err != nil {
			return nil, fmt.Errorf("calibrate: live run at cache %s: %w", frac, err)
		}
		for _, s := range series {
			xs = append(xs, float64(s.Misses+s.PrefetchLoads))
			ys = append(ys, float64(s.ComputeNS))
		}
		ll.Runs = append(ll.Runs, fmt.Sprintf("ondemand at cache %s (%s), %d tokens", frac, sim.FormatBytes(b), len(series)))
		logf("live: ondemand at cache %s: %d tokens measured", frac, len(series))
	}
	if len(xs) < 3 {
		return nil, fmt.Errorf("calibrate: live load cost: %d tokens measured, need at least 3", len(xs))
	}
	line, err := fit.FitLine(xs, ys)
	if err != nil {
		return nil, fmt.Errorf("calibrate: live load cost: %w", err)
	}
	ll.InterceptNS, ll.PerLoadNS, ll.PerLoadSE, ll.R2, ll.N = line.Intercept, line.Slope, line.SlopeSE, line.R2, line.N
	logf("live: one load adds %s ± %s to the compute thread (R² %.2f over %d tokens)", us(ll.PerLoadNS), us(ll.PerLoadSE), ll.R2, ll.N)
	return ll, nil
}

// cacheFraction resolves a percentage of the model's expert bytes, at least
// twice one layer's top-k (so a small model still runs).
func cacheFraction(model, frac string) (int64, error) {
	mc, err := record.CheckModel(model)
	if err != nil {
		return 0, err
	}
	mc.File.Close()
	b, err := devices.ResolveCache(frac, mc.Spec, nil)
	if err != nil {
		return 0, err
	}
	return max(b, 2*int64(mc.Spec.TopK)*mc.Spec.MaxExpertBytes()), nil
}
