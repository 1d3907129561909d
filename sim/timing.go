package sim

import (
	"math"

	"github.com/lessim/lessim/devices"
)

// Time is virtual time in integer nanoseconds.
type Time = int64

// durationNS converts an amount of work at a rate into whole nanoseconds,
// rounding up so that nothing is ever free: ceil(amount / perSecond × 1e9).
// It is the one place where bytes or FLOPs become time.
//
// NB: the explicit float64 conversions stop the compiler from fusing the
// multiply and divide (Go permits fused multiply-add on some architectures),
// which keeps results bit-identical across machines.
//
// A time past maxTime comes back as maxTime+1: converting a float64 of 2^63
// or more to int64 is implementation-defined in Go (the most negative int64
// on amd64), and a pass's work (FLOPs × tokens, KV bytes × context) can
// reach it inside the bounds. A run that adds it is refused (pass).
func durationNS(amount, perSecond float64) Time {
	if amount <= 0 {
		return 0
	}
	ns := float64(amount*1e9) / perSecond
	if ns > float64(maxTime) {
		return maxTime + 1
	}
	return Time(math.Ceil(float64(ns)))
}

// computeModel turns a layer's work into compute-thread time on a device.
// Decode is memory-bound: the time of a part is the larger of reading its
// weights from DRAM at MemBandwidth×MemEfficiency and doing its FLOPs at
// ComputeFLOPS.
type computeModel struct {
	memRate   float64 // bytes/s
	flops     float64 // FLOP/s
	over      Time
	loadFixed Time    // compute-thread cost per expert load
	loadRate  float64 // bytes/s the compute thread handles loaded bytes at (0: free)
}

func newComputeModel(d *devices.Device) computeModel {
	c := computeModel{memRate: float64(d.MemBandwidth * d.MemEfficiency), flops: d.ComputeFLOPS,
		over:      d.LayerOverhead + int64(d.Threads()-1)*d.ThreadOverheadNS,
		loadFixed: d.LoadFixedNS, loadRate: d.LoadRate}
	if d.Parallel > 0 {
		c.memRate, c.flops = threadScale(c.memRate, c.flops, d.Parallel, d.Threads())
	}
	return c
}

// load is the compute thread's cost of loading one expert of bytes:
// loadFixed + bytes / loadRate (the second term only when a rate is stated).
func (c computeModel) load(bytes int64) Time {
	if c.loadRate <= 0 {
		return c.loadFixed
	}
	return c.loadFixed + durationNS(float64(bytes), c.loadRate)
}

// part is the time of reading bytes (bytes at the memory efficiency, see
// weightBytes) once and doing flopsPerToken for tokens tokens: a count of
// tokens times the pass's scale (engine.tokens), whole when the profile
// states no compute.pass_scale.
func (c computeModel) part(bytes float64, flopsPerToken int64, tokens float64) Time {
	return max(durationNS(bytes, c.memRate), durationNS(float64(flopsPerToken)*tokens, c.flops))
}

// timeTable caches one-token part times per layer (the common decode case),
// and the weight bytes each part reads at the memory efficiency.
type timeTable struct {
	dense, expert, load []Time
	head                Time
	w                   weightBytes
}

func newTimeTable(e *engine, d *devices.Device) timeTable {
	t := timeTable{dense: make([]Time, e.nL), expert: make([]Time, e.nL), load: make([]Time, e.nL), w: newWeightBytes(e.m, d)}
	for l := range e.m.Layers {
		ls := &e.m.Layers[l]
		t.load[l] = e.cm.load(ls.ExpertBytes)
		t.dense[l] = e.cm.part(t.w.dense[l], ls.DenseFLOPsPerToken, 1) + e.cm.over
		t.expert[l] = e.cm.part(t.w.expert[l], ls.ExpertFLOPsPerToken, 1)
	}
	t.head = e.cm.part(t.w.head, e.m.HeadFLOPsPerToken, 1)
	return t
}

// setPassScale sets the scale of the FLOPs of a pass of n tokens
// (Device.PassScale; 1 with none stated), kept across passes of one length.
func (e *engine) setPassScale(n int) {
	if n != e.scaleN {
		e.scaleN, e.scale = n, e.cfg.Device.PassScale(n)
	}
}

// tokens is n tokens of the current pass in one-token FLOP time: n × the
// pass's scale (exactly n when it is 1).
func (e *engine) tokens(n int) float64 {
	return float64(n) * e.scale
}

// denseTime is layer l's dense part for a pass of n tokens.
func (e *engine) denseTime(l, n int) Time {
	if n == 1 {
		return e.times.dense[l]
	}
	return e.denseTimeN(l, n)
}

// denseTimeN is denseTime off its table (NB: apart and not inlined, so
// that denseTime inlines).
//
//go:noinline
func (e *engine) denseTimeN(l, n int) Time {
	ls := &e.m.Layers[l]
	return e.long(e.cm.part(e.times.w.dense[l], ls.DenseFLOPsPerToken, e.tokens(n)) + e.cm.over)
}

// expertTime is one routed expert of layer l used by n tokens of the pass.
func (e *engine) expertTime(l, n int) Time {
	if n == 1 && e.scale == 1 {
		return e.times.expert[l]
	}
	return e.expertTimeN(l, n)
}

// expertTimeN is expertTime off its table (NB: apart and not inlined, so
// that expertTime inlines: it runs once per expert use).
//
//go:noinline
func (e *engine) expertTimeN(l, n int) Time {
	ls := &e.m.Layers[l]
	return e.long(e.cm.part(e.times.w.expert[l], ls.ExpertFLOPsPerToken, e.tokens(n)))
}

// headTime is the output head for a pass of n tokens.
func (e *engine) headTime(n int) Time {
	if n == 1 {
		return e.times.head
	}
	return e.long(e.cm.part(e.times.w.head, e.m.HeadFLOPsPerToken, e.tokens(n)))
}

// long returns d, a time about to be added to now that may be large (a
// pass's work, which scales with its tokens or context: at most maxTime+1,
// durationNS's cap), and marks hi when now + d would pass maxTime (see
// pass). NB: d ≥ 0; a now already past maxTime marks hi too.
func (e *engine) long(d Time) Time {
	if d > maxTime-e.now {
		e.hi = -1
	}
	return d
}
