//go:build llamacpp && linux

package calibrate

import (
	"context"
	"fmt"
	"runtime"

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
// compute with every expert resident. With 2 CPUs or more, a third run at
// cache 100% and 2 compute threads gives that intercept at 2 threads
// (compute.thread_overhead).
func measureLiveLoad(ctx context.Context, o *Options, logf func(string, ...any)) (*LiveLoad, error) {
	ll := &LiveLoad{}
	var xs, ys []float64
	for _, frac := range []string{"100%", "15%"} {
		x, y, run, err := liveLoadRun(ctx, o, frac, 1)
		if err != nil {
			return nil, err
		}
		xs, ys = append(xs, x...), append(ys, y...)
		ll.Runs = append(ll.Runs, run)
		logf("live: %s", run)
	}
	if runtime.NumCPU() >= 2 {
		x, y, run, err := liveLoadRun(ctx, o, "100%", 2)
		if err != nil {
			return nil, err
		}
		if line, err := fit.FitLine(x, y); err == nil && line.Intercept > 0 {
			ll.Threads2NS, ll.Threads2Run = line.Intercept, run
		}
		logf("live: %s", run)
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

// liveLoadRun is one live run of the model, policy ondemand, at cache frac
// and threads: each token's loads and compute time, and the run described.
func liveLoadRun(ctx context.Context, o *Options, frac string, threads int) (loads, compute []float64, run string, err error) {
	lo := live.DefaultOptions()
	lo.Model, lo.Policy, lo.Tokens, lo.Threads, lo.KeepSeries = o.Model, "ondemand", o.Tokens, threads, true
	lo.EnsureDefaults()
	if lo.Cache, err = cacheFraction(o.Model, frac); err != nil {
		return nil, nil, "", err
	}
	_, series, err := live.Run(ctx, lo)
	if err != nil {
		return nil, nil, "", fmt.Errorf("calibrate: live run at cache %s, %d threads: %w", frac, threads, err)
	}
	for _, s := range series {
		loads, compute = append(loads, float64(s.Misses+s.PrefetchLoads)), append(compute, float64(s.ComputeNS))
	}
	return loads, compute, fmt.Sprintf("ondemand at cache %s (%s), %d thread(s), %d tokens", frac, sim.FormatBytes(lo.Cache), threads, len(series)), nil
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
