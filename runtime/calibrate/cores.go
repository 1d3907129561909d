//go:build linux

package calibrate

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/runtime/record"
)

// Cores is what calibrate measures of the contention model (docs/model.md,
// "Cores and memory bandwidth shared"): the cores, the compute's parallel
// share from decode at 1 and 2 threads, and the lookahead router's time per
// layer and token (record.Router.Scores on the model's shape, the live
// engine's own code).
type Cores struct {
	// T1 and T2 are decode per token with everything in RAM at 1 and 2
	// threads (T2 only with 2 CPUs or more).
	T1, T2 Summary
	// Parallel is Amdahl's share from them: t2/t1 = 1 − p/2, so
	// p = 2·(1 − t2/t1); 0 when not measured.
	Parallel float64
	// Predict is one Router.Scores of hidden × experts, in ns.
	Predict         Summary
	Hidden, Experts int
}

// measureCores measures the contention model's parameters after the
// compute fit (r.Compute): decode at 2 threads when there are 2 CPUs or
// more, and the lookahead router's matmul.
func measureCores(o *Options, r *Result, rng *rand.Rand, logf func(string, ...any)) (*Cores, error) {
	c := &Cores{T1: r.Compute.Points[0].TokenNS}
	if r.CPUs >= 2 {
		t2, err := measureThreads(o, r.Compute, logf)
		if err != nil {
			return nil, err
		}
		c.T2 = t2
		c.Parallel = min(max(2*(1-t2.Median/c.T1.Median), 0.01), 1)
	}
	var err error
	if c.Predict, c.Hidden, c.Experts, err = measurePredict(o.Model, o.Samples, rng); err != nil {
		return nil, err
	}
	logf("cores: %d; compute parallel share %.3f; lookahead router %s per layer and token", r.CPUs, c.Parallel, us(c.Predict.Median))
	return c, nil
}

// measurePredict times the lookahead router's matmul of the model's shape
// with random weights (its time does not depend on the values).
func measurePredict(path string, samples int, rng *rand.Rand) (Summary, int, int, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Summary{}, 0, 0, err
	}
	spec, err := f.ModelSpec()
	f.Close()
	if err != nil {
		return Summary{}, 0, 0, err
	}
	h, n := spec.Hidden, spec.Experts
	r := record.Router{W: make([]float32, h*n)}
	for i := range r.W {
		r.W[i] = rng.Float32()
	}
	x, dst := make([]float32, h), make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()
	}
	var per []float64
	for range max(samples, 1) * 20 {
		t0 := time.Now()
		r.Scores(dst, x)
		per = append(per, float64(time.Since(t0).Nanoseconds()))
	}
	return Summarize(per), h, n, nil
}

// cores writes compute.cores, compute.parallel and compute.predict_cost
// into the compute section.
func (r *Result) cores(kv func(indent, key, value, source string), m string) {
	kv("  ", "cores", fmt.Sprint(r.CPUs), m+one(fmt.Sprint(r.CPUs))+" (runtime.NumCPU: the CPUs this process may run on; compute threads and I/O lanes share them)")
	c := r.Cores
	if c == nil {
		return
	}
	if c.Parallel > 0 {
		kv("  ", "parallel", fmt.Sprintf("%.3f", c.Parallel), m+fmt.Sprintf("Amdahl's share 2·(1 − t2/t1) from llama.cpp decode with every weight in RAM at 1 thread (%s per token) and 2 threads (%s per token)",
			c.T1.describe(ms), c.T2.describe(ms)))
	}
	if ll := r.LiveLoad; ll != nil && ll.Threads2NS > 0 && c.Parallel > 0 {
		v, _ := r.liveLayerOverhead()
		layers := float64(r.Compute.Points[0].Layers)
		pred := layers*v + (ll.InterceptNS-layers*v)*((1-c.Parallel)+c.Parallel/2)
		kv("  ", "thread_overhead", us(min(max((ll.Threads2NS-pred)/layers, 0), 100e6)), m+fmt.Sprintf("lessim's live engine's per-token compute with no loads at 2 threads, %s (the intercept of compute time against loads over its run: %s), less the %s predicted from 1 thread's %s with compute.parallel and %d layers' overhead at %s each, over the layers (0 when not above)",
			ms(ll.Threads2NS), ll.Threads2Run, ms(pred), ms(ll.InterceptNS), int(layers), us(v)))
	}
	kv("  ", "predict_cost", us(c.Predict.Median), m+c.Predict.describe(us)+fmt.Sprintf(" (the live engine's lookahead router, record.Router.Scores, of %d × %d float32 weights, one layer and token)", c.Experts, c.Hidden))
}

// readCost writes flash.read_cpu and flash.copy_rate from the pread CPU
// line (loadCPU): its intercept per request, its slope per byte.
func (r *Result) readCost(kv func(indent, key, value, source string), m string) {
	l := r.Load
	line := fmt.Sprintf("CPU time of pread from a cold page cache on the reading thread, least squares over %d reads of 64 KiB to 4 MiB (R² %.2f): %s + %.3f ns/byte",
		l.N, l.R2, us(l.FixedNS), l.PerByteNS)
	fixed, held := l.FixedNS, ""
	if fixed < 0 {
		fixed, held = 0, "; the intercept came out negative at this noise, held at 0"
	}
	kv("  ", "read_cpu", us(min(fixed, 10e6)), m+line+": the intercept, per request"+held+". The live engine reads an expert as one pread per tensor (three), lessim's per-expert layout as one request")
	if l.PerByteNS > 0 {
		rate := min(max(1e9/l.PerByteNS, 100e6), 1e12)
		kv("  ", "copy_rate", gbps(rate), m+line+": 1 / the slope (page-cache allocation and the copy into the reader's buffer)")
	}
}
