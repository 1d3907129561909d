package sim_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// wasteful prefetches expert 15 of layer 0 at every pass after the first, an
// expert no token uses: pure overlap, no benefit. It declines every victim
// (the cache holds everything) and, as les does, runs the lookahead router
// when lookahead is set.
type wasteful struct {
	passes    int
	lookahead bool
}

func (w *wasteful) Name() string { return "wasteful" }
func (w *wasteful) Prefetch(la *sim.Lookahead, _ sim.CacheView, dst []sim.Key) []sim.Key {
	if w.passes > 1 && la.Layer == 0 {
		dst = append(dst, sim.MakeKey(0, 15, 16))
	}
	return dst
}
func (w *wasteful) Observe(ev sim.Event) {
	if ev.Kind == sim.PassStart {
		w.passes++
	}
}
func (w *wasteful) Victim(sim.CacheView, int64, bool) (sim.Key, bool) { return 0, false }
func (w *wasteful) UsesLookahead() bool                               { return w.lookahead }

// coresSetup is one layer, top-1, one 1 MiB expert whose compute takes
// 2 ms (2 GFLOP at 1 TFLOP/s; its weights alone 42 us), nothing else; a
// flash of flat 1 GB/s (1 byte/ns) with 1 us latency and 2 lanes; every read
// costs its lane 1 ms of CPU after the transfer (flash.read_cpu), no copy.
// Token 0 and token 1 both use expert 0.
func coresSetup() (sim.Config, []traces.Step) {
	m := &devices.ModelSpec{Name: "cores", Arch: "test", Experts: 16, TopK: 1, Hidden: 256, ExpertFFN: 128,
		Layers: []devices.LayerSpec{{ExpertBytes: mib, ExpertFLOPsPerToken: 2e9}}}
	flat := []devices.CurvePoint{{ReadBytes: 4 << 10, BytesPerSec: 1e9}, {ReadBytes: 4 * mib, BytesPerSec: 1e9}}
	d := &devices.Device{Name: "cores-dev", RAMBytes: 8 << 30, ReserveBytes: 1 << 30,
		MemBandwidth: 50e9, MemEfficiency: 0.5, ComputeFLOPS: 1e12,
		Flash: devices.Flash{Lanes: 2, LatencyNS: 1000, SingleLane: flat, Aggregate: flat,
			PageBytes: 4 << 10, ReadAheadBytes: 128 << 10, FaultNS: 2000, ReadCPUNS: 1_000_000}}
	steps := []traces.Step{
		{Pos: 0, Phase: traces.Decode, Pass: 0, Layers: []traces.LayerStep{{Experts: []int32{0}}}},
		{Pos: 1, Phase: traces.Decode, Pass: 1, Layers: []traces.LayerStep{{Experts: []int32{0}}}},
	}
	return sim.Config{Model: m, Device: d, CacheBytes: 64 * mib, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1, KeepSeries: true}, steps
}

func coresRun(t *testing.T, cfg sim.Config, steps []traces.Step, pol sim.Policy) *sim.Result {
	t.Helper()
	res, err := sim.Run(cfg, steps, pol)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCoresContention is issue 35's by-hand case: one compute thread and a
// lane's CPU work on one core. Token 0 misses expert 0: 1 us latency, 1 MiB
// at 1 byte/ns (1,048,576 ns), 1 ms of the lane's CPU with the compute
// thread stalled (the lane has the core), then 2 ms of compute: 4,049,576
// ns, the same with or without cores. Token 1 hits expert 0 and, with the
// wasteful prefetch, reads expert 15 meanwhile: compute runs alone during
// the read's latency and transfer (1,049,576 ns), then shares the one core
// with the lane's CPU phase, each at half speed; the compute's remaining
// 950,424 ns take 1,900,848 ns, so token 1 takes 2,950,424 ns against
// 2,000,000 without the prefetch: overlap is 950,424 ns slower than no
// overlap (the lane's CPU work done meanwhile). With 4 cores (≥ threads +
// lanes) nobody waits for a core, and the result is the one without cores
// stated, byte for byte.
func TestCoresContention(t *testing.T) {
	cfg, steps := coresSetup()
	one := *cfg.Device
	one.Cores = 1
	c1 := cfg
	c1.Device = &one

	noOverlap := coresRun(t, c1, steps, &wasteful{passes: -1 << 30}) // never prefetches
	overlap := coresRun(t, c1, steps, &wasteful{})
	const token0, alone, shared = 1000 + 1_048_576 + 1_000_000 + 2_000_000, 2_000_000, 2_950_424
	for _, r := range []*sim.Result{noOverlap, overlap} {
		if r.Series[0].TimeNS != token0 {
			t.Errorf("token 0: %d ns, want %d", r.Series[0].TimeNS, token0)
		}
	}
	if got := noOverlap.Series[1].TimeNS; got != alone {
		t.Errorf("token 1 without overlap: %d ns, want %d", got, alone)
	}
	if got := overlap.Series[1].TimeNS; got != shared {
		t.Errorf("token 1 with a wasted prefetch on 1 core: %d ns, want %d (%d slower than no overlap)", got, shared, shared-alone)
	}

	old := coresRun(t, cfg, steps, &wasteful{})
	four := *cfg.Device
	four.Cores = 4
	c4 := cfg
	c4.Device = &four
	many := coresRun(t, c4, steps, &wasteful{})
	if old.Series[1].TimeNS != alone || many.Series[1].TimeNS != alone {
		t.Errorf("token 1 with the prefetch, no cores stated %d ns, 4 cores %d ns: want both %d (the prefetch is off the compute thread)", old.Series[1].TimeNS, many.Series[1].TimeNS, alone)
	}
	many.Device, old.Device = "", ""
	a, _ := json.Marshal(many)
	b, _ := json.Marshal(old)
	if !bytes.Equal(a, b) {
		t.Errorf("4 cores (no contention) changed the result:\n%s\n%s", a, b)
	}
}

// TestCoresThreads: two compute threads on one core (T > C) take the time
// measured at two threads when nothing else runs (base = C/T), and a lane's
// CPU phase then takes a third of the core instead of half: compute runs
// at (1/3)/(1/2) = 2/3 of its speed, so the 950,424 ns left after the
// transfer take ceil(950,424 × 3/2) = 1,425,636 ns.
func TestCoresThreads(t *testing.T) {
	cfg, steps := coresSetup()
	d := *cfg.Device
	d.Cores, d.ComputeThreads = 1, 2
	cfg.Device = &d
	r := coresRun(t, cfg, steps, &wasteful{})
	if want := int64(1_049_576 + 1_425_636); r.Series[1].TimeNS != want {
		t.Errorf("token 1: %d ns, want %d", r.Series[1].TimeNS, want)
	}
}

// TestParallelAndPredict: with compute.parallel p, T threads take
// (1 − p) + p/T of one thread's compute (p 0.5, 2 threads: 0.75 of 2 ms);
// a lookahead router on the CPU backend adds compute.predict_cost per layer
// and token, and nothing for a policy that does not run it.
func TestParallelAndPredict(t *testing.T) {
	cfg, steps := coresSetup()
	d := *cfg.Device
	d.Parallel, d.ComputeThreads, d.PredictNS = 0.5, 2, 7000
	cfg.Device = &d
	r := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30})
	if got := r.Series[1].TimeNS; got < 1_500_000 || got > 1_500_001 {
		t.Errorf("token 1 at 2 threads, parallel 0.5: %d ns, want 1,500,000 (+1 for rounding)", got)
	}
	la := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30, lookahead: true})
	if d := la.Series[1].TimeNS - r.Series[1].TimeNS; d != 7000 {
		t.Errorf("lookahead router on the CPU: +%d ns per token, want 7000 (one layer, one token)", d)
	}
}

// TestDRAMShared: with flash.copy_rate stated, the reads' DRAM traffic
// slows compute even when cores are plenty (4). Copy at 10 GB/s, no fixed
// CPU: token 1's compute runs at 1 during the 1 us latency, at
// 1 − 1/50 = 0.98 during the transfer (1 byte/ns of DMA against 50 GB/s),
// at 1 − 2·10/50 = 0.6 during the copy (104,858 ns: each byte read and
// written), then at 1: 1,000 + 1,048,576 + 104,858 +
// ceil(2e6 − 1,000 − 0.98·1,048,576 − 0.6·104,858) = 2,062,915 ns.
func TestDRAMShared(t *testing.T) {
	cfg, steps := coresSetup()
	d := *cfg.Device
	d.Cores, d.Flash.ReadCPUNS, d.Flash.CopyRate = 4, 0, 10e9
	cfg.Device = &d
	r := coresRun(t, cfg, steps, &wasteful{})
	if got := r.Series[1].TimeNS; got < 2_062_914 || got > 2_062_916 {
		t.Errorf("token 1: %d ns, want 2,062,915 (±1 for rounding)", got)
	}
}

// TestPressureGrowth: with memory.growth the footprint is counted pass by
// pass. The app holds cache 12 MiB + weights 32 MiB (tinyModel, no KV) and
// grows 128 KiB (one fault's chunk: max(16 KiB page, 128 KiB read-ahead))
// per token; the limit is 256 KiB above 44 MiB. Decode token i (from 1)
// holds 44 MiB + i × 128 KiB: tokens 1 and 2 fit, token i ≥ 3 refaults
// i − 2 chunks, so 4 tokens refault 0 + 0 + 1 + 2 = 3 chunks. Without
// growth the footprint stays 44 MiB, under the limit: no refault.
func TestPressureGrowth(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 4, 5)
	cfg := sim.Config{Model: m, Device: flatDevice(), CacheBytes: 12 * mib, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1}
	cfg.Device.AppLimitBytes = 44*mib + 256<<10
	flat := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	if flat.PressureFaults != 0 {
		t.Errorf("fixed footprint: %d refaults, want 0", flat.PressureFaults)
	}
	cfg.Device.GrowthBytes = 128 << 10
	r := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	if r.PressureFaults != 3 || r.PressureFaultBytes != 3*128<<10 {
		t.Errorf("growing footprint: %d refaults of %d bytes, want 3 of %d", r.PressureFaults, r.PressureFaultBytes, 3*128<<10)
	}
	if r.AppFootprintBytes != 44*mib+4*128<<10 {
		t.Errorf("footprint at the end %d, want %d", r.AppFootprintBytes, 44*mib+4*128<<10)
	}
}

// TestCoresBarrier: two compute threads on two cores meet at a barrier
// after every operation, so one lane copying on one of the cores halves
// compute (the slowest thread sets the pace), not 2/3 as processor sharing
// would; the lane gets 2/3 of a core (three runnable on two). Token 1:
// compute alone for 1,049,576 ns; then the lane's 1 ms of CPU at 2/3 takes
// 1,500,000 ns while compute does 750,000 of its remaining 950,424 at 1/2;
// the last 200,424 at full speed: 2,750,000 ns. Half a thread of other
// work on average (compute.background 0.5) stretches the prefetch-free
// token's 2 ms by 1 + 0.5: 3,000,000 ns.
func TestCoresBarrier(t *testing.T) {
	cfg, steps := coresSetup()
	d := *cfg.Device
	d.Cores, d.ComputeThreads = 2, 2
	cfg.Device = &d
	if got := coresRun(t, cfg, steps, &wasteful{}).Series[1].TimeNS; got != 2_750_000 {
		t.Errorf("token 1 with a lane copying: %d ns, want 2,750,000", got)
	}
	b := d
	b.Background = 0.5
	cfg.Device = &b
	if got := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30}).Series[1].TimeNS; got != 3_000_000 {
		t.Errorf("token 1 with 0.5 threads of other work: %d ns, want 3,000,000", got)
	}
}

// TestPassScale: a verify pass of 2 tokens that both use expert 0 (2 GFLOP
// per token at 1 TFLOP/s, compute-bound) computes 4 ms without
// compute.pass_scale; with a scale of 1.5 at 2 tokens, 2 × 2 ms × 1.5 =
// 6 ms, and the run is longer by exactly the difference. One-token passes
// are not scaled. (The policy never prefetches.)
func TestPassScale(t *testing.T) {
	cfg, steps := coresSetup()
	steps[1].Pass = 0
	cfg.SpecFromTrace = true
	base := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30})
	d := *cfg.Device
	d.PassScaleByTokens = map[int]float64{2: 1.5}
	cfg.Device = &d
	scaled := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30})
	if base.ComputeNS != 4_000_000 || scaled.ComputeNS != 6_000_000 {
		t.Errorf("compute %d and %d ns, want 4,000,000 and 6,000,000", base.ComputeNS, scaled.ComputeNS)
	}
	if got := scaled.TimeNS - base.TimeNS; got != 2_000_000 {
		t.Errorf("scaled run longer by %d ns, want 2,000,000", got)
	}
	steps[1].Layers[0].Experts = []int32{1} // two experts of one token each: scaled too
	if r := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30}); r.ComputeNS != 6_000_000 {
		t.Errorf("two experts of one token each computed %d ns, want 6,000,000", r.ComputeNS)
	}
	cfg.SpecFromTrace = false
	steps[1].Pass = 1
	one := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30})
	if one.ComputeNS != 4_000_000 {
		t.Errorf("one-token passes computed %d ns, want 2 × 2,000,000", one.ComputeNS)
	}
}

// TestThreadOverhead: each compute thread beyond the first adds
// ThreadOverheadNS to every layer of a token: 2 tokens × 1 layer × (3 − 1)
// threads × 0.5 ms = 2 ms of compute, and no cores stated, nothing else.
func TestThreadOverhead(t *testing.T) {
	cfg, steps := coresSetup()
	cfg.Device.Flash.ReadCPUNS = 0
	base := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30})
	d := *cfg.Device
	d.ComputeThreads, d.ThreadOverheadNS = 3, 500_000
	cfg.Device = &d
	got := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30})
	if got.ComputeNS-base.ComputeNS != 2_000_000 || got.TimeNS-base.TimeNS != 2_000_000 {
		t.Errorf("3 threads: compute %d ns, time %d ns more, want 2,000,000 each", got.ComputeNS-base.ComputeNS, got.TimeNS-base.TimeNS)
	}
	d.ComputeThreads = 1
	if one := coresRun(t, cfg, steps, &wasteful{passes: -1 << 30}); one.ComputeNS != base.ComputeNS {
		t.Errorf("1 thread: compute %d ns, want %d (no overhead)", one.ComputeNS, base.ComputeNS)
	}
}
