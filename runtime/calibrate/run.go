//go:build linux

package calibrate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"

	"github.com/lessim/lessim/fit"
)

// Result is everything Run measured, and the profile it wrote.
type Result struct {
	Options   Options
	Flash     []FlashPoint // by size, then lanes
	LatencyNS float64      // fitted request latency
	LatencyOK bool         // false when fewer than two sizes were measured
	// LatencyHeld is true when the fit came out below the bounds' 1 us and
	// was held there.
	LatencyHeld bool
	KneeLanes   int // lanes chosen for flash.lanes
	PageBytes   int64
	ReadAhead   ReadAhead
	Mem         MemInfo
	Bandwidth   Summary // bytes/s
	// BandwidthPeak is the best bandwidth sample: the profile's value.
	BandwidthPeak float64
	Fault         Summary // ns per minor fault
	// PagesPerFault is how many pages one fault mapped (fault-around, large folios).
	PagesPerFault float64
	Load          LoadCPU
	// LiveLoad is the compute-thread cost of a load in lessim's live engine
	// (the profile's compute.load_fixed).
	LiveLoad *LiveLoad
	Compute  *Compute
	// Cores is the contention model's measurements (nil before compute).
	Cores *Cores
	YAML  []byte // the profile as written
	// Load0 and Load1 are the 1-minute load averages at the start and the end,
	// CPUs the number of CPUs: a load above the CPUs means other work shared
	// them, and every timing is inflated.
	Load0, Load1 float64
	CPUs         int
}

// Run measures this machine (see the package documentation), writes the profile
// to o.Out atomically and returns what it measured. It fails before measuring
// anything when the model's file system refuses O_DIRECT; on any error, and when
// ctx is cancelled (checked between measurements), the output file is not
// touched and temporary files are removed.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "calibrate: "+format+"\n", a...)
		}
	}
	f, fileSize, err := openDirect(o.Model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &Result{Options: o, PageBytes: int64(os.Getpagesize()), Load0: loadAverage(), CPUs: runtime.NumCPU()}
	if r.Load0 > float64(r.CPUs) {
		logf("warning: load average %.1f on %d CPUs: other work competes, timings will be inflated", r.Load0, r.CPUs)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6c657373))
	for _, s := range o.Sizes {
		for _, l := range o.Lanes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p, err := measureFlash(f, fileSize, s, l, o.Reads, o.Samples, rng)
			if err != nil {
				return nil, err
			}
			logf("flash: %s × %d lanes: %s", size(s), l, mibps(p.Throughput.Median))
			r.Flash = append(r.Flash, p)
		}
	}
	r.fitLatency()
	r.chooseLanes()
	if r.ReadAhead, err = readAhead(o.Model); err != nil {
		return nil, err
	}
	if r.Mem, err = readMemInfo(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.Bandwidth, r.BandwidthPeak = memBandwidth(o.MemBytes, o.Samples)
	logf("memory: %s streaming read (best of %d)", gbps(r.BandwidthPeak), r.Bandwidth.N)
	if r.Fault, r.PagesPerFault, err = faultCost(o.Model, o.Samples); err != nil {
		return nil, err
	}
	loadSizes := []int64{64 << 10, 256 << 10, 1 << 20, 4 << 20}
	if r.Load, err = loadCPU(o.Model, loadSizes, o.Samples, rng.Int64N); err != nil {
		return nil, err
	}
	logf("page faults: %s CPU each; pread: %s + %.3f ns/byte CPU", us(r.Fault.Median), us(r.Load.FixedNS), r.Load.PerByteNS)
	if r.Compute, err = measureCompute(ctx, &o, logf); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.Cores, err = measureCores(&o, r, rng, logf); err != nil {
		return nil, err
	}
	if r.LiveLoad, err = measureLiveLoad(ctx, &o, logf); err != nil {
		return nil, err
	}
	r.Load1 = loadAverage()
	if r.YAML, err = r.profile(); err != nil {
		return nil, err
	}
	if err := writeAtomic(o.Out, r.YAML); err != nil {
		return nil, err
	}
	logf("wrote %s", o.Out)
	return r, nil
}

// Point returns the flash point of size s at lanes l.
func (r *Result) Point(s int64, l int) (FlashPoint, bool) {
	i := slices.IndexFunc(r.Flash, func(p FlashPoint) bool { return p.ReadBytes == s && p.Lanes == l })
	if i < 0 {
		return FlashPoint{}, false
	}
	return r.Flash[i], true
}

// fitLatency fits time per read = latency + size ÷ rate through the single-lane
// medians (least squares), and keeps the latency below every point's time per
// read, as profile validation requires.
func (r *Result) fitLatency() {
	var xs, ys []float64
	for _, p := range r.Flash {
		if p.Lanes == 1 {
			xs, ys = append(xs, float64(p.ReadBytes)), append(ys, p.PerRead.Median)
		}
	}
	line, err := fit.FitLine(xs, ys)
	if err != nil {
		return // fewer than two sizes, or one size twice
	}
	r.LatencyNS, r.LatencyOK = max(line.Intercept, 0), true
	for _, p := range r.Flash {
		perRead := float64(p.Lanes) * float64(p.ReadBytes) / p.Throughput.Median * 1e9
		r.LatencyNS = min(r.LatencyNS, 0.9*perRead)
	}
	if r.LatencyNS < minLatencyNS {
		r.LatencyNS, r.LatencyHeld = minLatencyNS, true
	}
}

// minLatencyNS is the profile bounds' smallest flash.latency (1 us): a fit
// that comes out below it at this noise is held there.
const minLatencyNS = 1000

// chooseLanes picks the knee: the fewest lanes within 5% of the best throughput
// at the largest read size.
func (r *Result) chooseLanes() {
	big := r.Options.Sizes[len(r.Options.Sizes)-1]
	best := 0.0
	for _, l := range r.Options.Lanes {
		if p, ok := r.Point(big, l); ok {
			best = max(best, p.Throughput.Median)
		}
	}
	for _, l := range r.Options.Lanes {
		if p, ok := r.Point(big, l); ok && p.Throughput.Median >= 0.95*best {
			r.KneeLanes = l
			return
		}
	}
	r.KneeLanes = r.Options.Lanes[len(r.Options.Lanes)-1]
}
