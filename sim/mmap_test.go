package sim_test

import (
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// faultModel: one MoE layer of 4 experts, top-1, each expert two 128 KiB
// regions (gate, down), so a tensor holds 4 × 128 KiB = 8 windows of 64 KiB.
// Memory runs at 1 B/ns, so the output head (1 MB) takes 1 ms: every read
// of a pass has finished before the next pass begins.
func faultModel() *devices.ModelSpec {
	return &devices.ModelSpec{Name: "fault", Arch: "test", Experts: 4, TopK: 1, Hidden: 64, ExpertFFN: 64,
		Layers: []devices.LayerSpec{{ExpertBytes: 256 << 10, ExpertFLOPsPerToken: 1,
			Tensors: []devices.ExpertTensor{{Name: "ffn_gate_exps", Bytes: 128 << 10}, {Name: "ffn_down_exps", Bytes: 128 << 10}}}},
		HeadBytes: 1_000_000}
}

// faultDevice: flat flash curves (1 GB/s per read, 4 GB/s shared: up to four
// reads transfer at full speed together), 10 us latency, 64 KiB read-around
// window, 1 us per fault.
func faultDevice() *devices.Device {
	return &devices.Device{Name: "faultdev", RAMBytes: 8 << 30, ReserveBytes: 1 << 30,
		MemBandwidth: 1e9, MemEfficiency: 1, ComputeFLOPS: 1e12,
		Flash: devices.Flash{Lanes: 8, LatencyNS: 10_000,
			SingleLane: []devices.CurvePoint{{ReadBytes: 4096, BytesPerSec: 1e9}},
			Aggregate:  []devices.CurvePoint{{ReadBytes: 4096, BytesPerSec: 4e9}},
			PageBytes:  4096, ReadAheadBytes: 64 << 10, FaultNS: 1000}}
}

// faultSteps is one decode token per expert given.
func faultSteps(experts ...int32) []traces.Step {
	steps := make([]traces.Step, len(experts))
	for i, x := range experts {
		steps[i] = traces.Step{Pos: int32(i), Phase: traces.Decode, Pass: int32(i), Layers: []traces.LayerStep{{Experts: []int32{x}}}}
	}
	return steps
}

type faultCase struct {
	threads    int
	async      int64
	neighbours bool
	cache      int64
}

func faultRun(t *testing.T, c faultCase, steps []traces.Step) *sim.Result {
	t.Helper()
	d := faultDevice()
	d.ComputeThreads, d.Flash.ReadAheadAsyncBytes = c.threads, c.async
	cfg := sim.Config{Model: faultModel(), Device: d, CacheBytes: c.cache, Layout: sim.LayoutGGUFMmap, SpecBlock: 1, MmapNeighbours: c.neighbours}
	return run(t, cfg, steps, "lru", policies.DefaultParams(cfg.Model))
}

// One window read: 10 us latency + 65,536 B at 1 GB/s.
const win = 10_000 + 65_536

// TestFaultThreads isolates concurrent faults: one thread faults each 128 KiB
// region's two windows one after the other; two threads fault one each at
// once, so the stall halves (the slowest thread's chain, not the sum).
func TestFaultThreads(t *testing.T) {
	for _, c := range []struct {
		threads         int
		stall, faultCPU int64
		reads, bytes    int64
	}{
		// 2 regions × 2 windows × (1 us fault + one window read).
		{1, 4 * (1000 + win), 4 * 1000, 4, 4 * 65536},
		// 2 regions × (1 us fault + one window read), both threads at once.
		{2, 2 * (1000 + win), 2 * 1000, 4, 4 * 65536},
		// Four threads on two windows: the second thread of each window
		// faults too and waits on the first one's read.
		{4, 2 * (1000 + win), 2 * 1000, 4, 4 * 65536},
	} {
		r := faultRun(t, faultCase{threads: c.threads, cache: 1 << 20}, faultSteps(0))
		if r.StallNS != c.stall || r.StallFaultCPUNS != c.faultCPU || r.StallFlashNS != c.stall-c.faultCPU || r.FlashReads != c.reads || r.FlashBytes != c.bytes {
			t.Errorf("threads %d: stall %d (fault cpu %d, flash %d), %d reads of %d B; want stall %d (fault cpu %d), %d reads of %d B",
				c.threads, r.StallNS, r.StallFaultCPUNS, r.StallFlashNS, r.FlashReads, r.FlashBytes, c.stall, c.faultCPU, c.reads, c.bytes)
		}
		if r.TimeNS != r.ComputeNS+r.StallNS {
			t.Errorf("threads %d: time %d != compute %d + stall %d", c.threads, r.TimeNS, r.ComputeNS, r.StallNS)
		}
	}
}

// TestFaultReadAhead isolates the asynchronous read-ahead. Per region, with
// a 64 KiB async window: fault window 0 (1 us) and read it; on resuming,
// read window 1 ahead; touching window 1 (in flight) costs a fault (1 us,
// hidden under the read) and waits for it; resuming there reads window 2
// ahead, the next expert's bytes, which nobody waits for. So the region takes
// 1 us + 2 window reads (the second fault is hidden) and 3 windows are read.
func TestFaultReadAhead(t *testing.T) {
	off := faultRun(t, faultCase{threads: 1, cache: 1 << 20}, faultSteps(0))
	on := faultRun(t, faultCase{threads: 1, async: 64 << 10, cache: 1 << 20}, faultSteps(0))
	if want := int64(4 * (1000 + win)); off.StallNS != want {
		t.Fatalf("off: stall %d, want %d", off.StallNS, want)
	}
	if want := int64(2 * (1000 + 2*win)); on.StallNS != want {
		t.Errorf("on: stall %d, want %d", on.StallNS, want)
	}
	if on.FlashReads != 6 || on.FlashBytes != 6*65536 {
		t.Errorf("on: %d reads of %d B, want 6 of %d", on.FlashReads, on.FlashBytes, 6*65536)
	}
	// Without neighbours the bytes read ahead are never credited: the next
	// expert misses and costs as much again.
	two := faultRun(t, faultCase{threads: 1, async: 64 << 10, cache: 1 << 20}, faultSteps(0, 1))
	if two.Misses != 2 || two.StallNS != 2*on.StallNS || two.NeighbourLoads != 0 {
		t.Errorf("two tokens: %d misses, stall %d (want 2, %d), %d neighbours", two.Misses, two.StallNS, 2*on.StallNS, two.NeighbourLoads)
	}
}

// TestFaultNeighbours isolates neighbours becoming resident. With a 128 KiB
// async window, faulting expert 0 reads windows 0 (sync), 1-2 (ahead, one
// read) and 3 (ahead), in both tensors: expert 1 (windows 2-3) is then
// wholly in, and with neighbours on it becomes resident and hits.
func TestFaultNeighbours(t *testing.T) {
	// Per region: fault + window 0; fault (hidden) + windows 1-2 read as one
	// 128 KiB read submitted when window 0 arrived.
	region := int64(1000 + win + 10_000 + 131_072)
	for _, c := range []struct {
		neighbours bool
		misses     int64
		stall      int64
		loads      int64
	}{
		{false, 2, 4 * region, 0},
		{true, 1, 2 * region, 1},
	} {
		r := faultRun(t, faultCase{threads: 1, async: 128 << 10, neighbours: c.neighbours, cache: 1 << 20}, faultSteps(0, 1))
		if r.Misses != c.misses || r.Hits != 2-c.misses || r.StallNS != c.stall || r.NeighbourLoads != c.loads || r.NeighbourBytes != c.loads*(256<<10) {
			t.Errorf("neighbours %v: %d misses %d hits, stall %d, %d neighbour loads (%d B); want %d misses, stall %d, %d loads",
				c.neighbours, r.Misses, r.Hits, r.StallNS, r.NeighbourLoads, r.NeighbourBytes, c.misses, c.stall, c.loads)
		}
	}
	// A cache of one expert: expert 1 arrives by evicting expert 0, whose
	// windows go with it, so expert 0 faults in again from scratch.
	r := faultRun(t, faultCase{threads: 1, async: 128 << 10, neighbours: true, cache: 256 << 10}, faultSteps(0, 1, 0))
	if r.Misses != 2 || r.Hits != 1 || r.NeighbourLoads != 1 || r.StallNS != 4*region {
		t.Errorf("one-expert cache: %d misses %d hits, %d neighbour loads, stall %d; want 2, 1, 1, %d", r.Misses, r.Hits, r.NeighbourLoads, r.StallNS, 4*region)
	}
}

// TestGPUSync isolates the GPU backend: each layer waits one sync for its
// top-k, and les's lookahead router one more; a CPU backend pays nothing and
// changes nothing.
func TestGPUSync(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 30, 4)
	for _, c := range []struct {
		policy   string
		prefetch bool
		perLayer int64
	}{{"lru", true, 1}, {"les", true, 2}, {"les", false, 1}} {
		p := policies.DefaultParams(m)
		p.Prefetch = c.prefetch
		cpu := baseConfig(12 * mib)
		base := run(t, cpu, steps, c.policy, p)
		dev := *cpu.Device
		dev.Backend = devices.BackendCPU
		cpu.Device = &dev
		if r := run(t, cpu, steps, c.policy, p); r.TimeNS != base.TimeNS || r.GPUSyncNS != 0 {
			t.Errorf("%s: backend cpu changed the time (%d vs %d) or synced %d ns", c.policy, r.TimeNS, base.TimeNS, r.GPUSyncNS)
		}
		gpu := baseConfig(12 * mib)
		g := *gpu.Device
		g.Backend, g.GPUSyncNS = devices.BackendGPU, 7000
		gpu.Device = &g
		r := run(t, gpu, steps, c.policy, p)
		if want := r.Passes * int64(len(m.Layers)) * c.perLayer * 7000; r.GPUSyncNS != want {
			t.Errorf("%s prefetch %v: synced %d ns, want %d passes × %d layers × %d × 7 us = %d", c.policy, c.prefetch, r.GPUSyncNS, r.Passes, len(m.Layers), c.perLayer, want)
		}
		if r.TimeNS != r.ComputeNS+r.StallNS || r.ComputeNS != base.ComputeNS+r.GPUSyncNS {
			t.Errorf("%s: compute %d, want %d + sync %d", c.policy, r.ComputeNS, base.ComputeNS, r.GPUSyncNS)
		}
	}
	// By hand: one token, one miss. The sync delays the miss's read by 7 us,
	// and the whole token by exactly that.
	one := func(backend string) *sim.Result {
		d := faultDevice()
		d.Backend = backend
		if backend == devices.BackendGPU {
			d.GPUSyncNS = 7000
		}
		cfg := sim.Config{Model: faultModel(), Device: d, CacheBytes: 1 << 20, Layout: sim.LayoutPerExpert, SpecBlock: 1}
		return run(t, cfg, faultSteps(2), "lru", policies.DefaultParams(cfg.Model))
	}
	if c, g := one(""), one(devices.BackendGPU); g.TimeNS-c.TimeNS != 7000 || g.StallNS != c.StallNS {
		t.Errorf("one token: gpu %d ns (stall %d), cpu %d ns (stall %d): want exactly 7000 ns more, same stall", g.TimeNS, g.StallNS, c.TimeNS, c.StallNS)
	}
}

// TestDetailedMmapRuns drives every part of the detailed fault path at once
// (4 threads, read-ahead, neighbours, eviction pressure, prefetching and
// prefill) through each policy: runs finish, the time adds up, and the same
// inputs give the same result. Built with -tags invariants the engine also
// checks the books after every layer.
func TestDetailedMmapRuns(t *testing.T) {
	m := tinyModel()
	steps := withPrompt(randomSteps(m, 120, 9), 10)
	for _, pol := range []string{"lru", "les", "oracle", "ondemand"} {
		cfg := baseConfig(10 * mib)
		d := *cfg.Device
		d.ComputeThreads, d.Flash.ReadAheadAsyncBytes = 4, 256<<10
		cfg.Device, cfg.Layout, cfg.Prefill, cfg.MmapNeighbours = &d, sim.LayoutGGUFMmap, true, true
		a := run(t, cfg, steps, pol, policies.DefaultParams(m))
		b := run(t, cfg, steps, pol, policies.DefaultParams(m))
		if a.TimeNS != b.TimeNS || a.FlashBytes != b.FlashBytes || a.NeighbourLoads != b.NeighbourLoads {
			t.Errorf("%s: not deterministic", pol)
		}
		if a.TimeNS != a.ComputeNS+a.StallNS || a.StallNS != a.StallFlashNS+a.StallFaultCPUNS || a.StallFlashNS < 0 {
			t.Errorf("%s: time %d, compute %d, stall %d = flash %d + fault cpu %d?", pol, a.TimeNS, a.ComputeNS, a.StallNS, a.StallFlashNS, a.StallFaultCPUNS)
		}
		if a.Uses != a.Hits+a.InflightHits+a.Misses {
			t.Errorf("%s: uses %d != hits + in-flight + misses", pol, a.Uses)
		}
	}
}

// TestFaultNeighboursSwept: bytes read ahead for an expert that never
// becomes whole are forgotten once they go a whole pass untouched. With a
// 64 KiB async window, faulting expert 0 reads half of expert 1 (window 2)
// ahead; the next two passes' sweeps age it and drop it, so expert 1 at the
// third token faults in from scratch: every token costs 2 regions × (fault +
// 2 window reads).
func TestFaultNeighboursSwept(t *testing.T) {
	r := faultRun(t, faultCase{threads: 1, async: 64 << 10, neighbours: true, cache: 1 << 20}, faultSteps(0, 3, 1))
	if want := int64(3 * 2 * (1000 + 2*win)); r.Misses != 3 || r.StallNS != want || r.NeighbourLoads != 0 {
		t.Errorf("%d misses, stall %d, %d neighbours; want 3, %d, 0", r.Misses, r.StallNS, r.NeighbourLoads, want)
	}
	// Back to back, expert 1 finds its first window still in: one fault and
	// one window read per region fewer.
	r = faultRun(t, faultCase{threads: 1, async: 64 << 10, neighbours: true, cache: 1 << 20}, faultSteps(0, 1))
	if want := int64(2*2*(1000+2*win) - 2*win); r.StallNS != want {
		t.Errorf("back to back: stall %d, want %d", r.StallNS, want)
	}
}

// BenchmarkFaultPath reports expert selections simulated per second under
// gguf-mmap with the simple fault model and with the detailed one (4
// threads, 128 KiB read-ahead, neighbours) on the stress trace.
func BenchmarkFaultPath(b *testing.B) {
	m := bigModel()
	steps := randomSteps(m, 200, 1)
	for _, detailed := range []bool{false, true} {
		name := "simple"
		d := *tinyDevice()
		if detailed {
			name = "detailed"
			d.ComputeThreads, d.Flash.ReadAheadAsyncBytes = 4, 128<<10
		}
		b.Run(name, func(b *testing.B) {
			cfg := sim.Config{Model: m, Device: &d, CacheBytes: 3 << 30, Layout: sim.LayoutGGUFMmap, SpecBlock: 1, MmapNeighbours: detailed}
			p := policies.DefaultParams(m)
			b.ReportAllocs()
			for b.Loop() {
				pol, err := policies.New("lru", p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sim.Run(cfg, steps, pol); err != nil {
					b.Fatal(err)
				}
			}
			sel := float64(len(steps) * len(m.Layers) * m.TopK)
			b.ReportMetric(sel*float64(b.N)/b.Elapsed().Seconds(), "selections/s")
		})
	}
}
