package sim

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// lowPolicy evicts the lowest resident key not in use; it never prefetches.
type lowPolicy struct{ n int }

func (p lowPolicy) Name() string                                      { return "low" }
func (p lowPolicy) Prefetch(_ *Lookahead, _ CacheView, d []Key) []Key { return d }
func (p lowPolicy) Observe(Event)                                     {}
func (p lowPolicy) Victim(v CacheView, _ int64, _ bool) (Key, bool) {
	for k := range p.n {
		if v.State(Key(k)) == Resident && !v.InUse(Key(k)) {
			return Key(k), true
		}
	}
	return 0, false
}

// TestDetailedMmapMatchesSimple cross-checks the detailed fault path against
// the simple one: with one thread, no read-ahead and no neighbours, and
// regions that are whole windows, both take the same faults and reads at the
// same times, so the results are identical.
func TestDetailedMmapMatchesSimple(t *testing.T) {
	m := &devices.ModelSpec{Name: "x", Arch: "test", Experts: 12, TopK: 3, Hidden: 8, ExpertFFN: 8, HeadBytes: 1 << 20}
	for range 3 {
		m.Layers = append(m.Layers, devices.LayerSpec{ExpertBytes: 1 << 20, DenseBytes: 2 << 20, ExpertFLOPsPerToken: 1 << 20,
			Tensors: []devices.ExpertTensor{{Bytes: 256 << 10}, {Bytes: 256 << 10}, {Bytes: 512 << 10}}})
	}
	d := &devices.Device{Name: "d", RAMBytes: 8 << 30, MemBandwidth: 50e9, MemEfficiency: 0.5, ComputeFLOPS: 1e12,
		Flash: devices.Flash{Lanes: 4, LatencyNS: 80_000,
			SingleLane: []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 400e6}, {ReadBytes: 4 << 20, BytesPerSec: 1.8e9}},
			Aggregate:  []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 800e6}, {ReadBytes: 4 << 20, BytesPerSec: 2.4e9}},
			PageBytes:  16 << 10, ReadAheadBytes: 128 << 10, FaultNS: 2000}}
	r := rand.New(rand.NewPCG(7, 7))
	steps := make([]traces.Step, 60)
	for i := range steps {
		s := &steps[i]
		s.Pos, s.Phase, s.Pass = int32(i), traces.Decode, int32(i)
		for range m.Layers {
			p := r.Perm(m.Experts)[:m.TopK]
			s.Layers = append(s.Layers, traces.LayerStep{Experts: []int32{int32(p[0]), int32(p[1]), int32(p[2])}})
		}
	}
	for _, cachedFirst := range []bool{false, true} {
		cfg := Config{Model: m, Device: d, CacheBytes: 8 << 20, Layout: LayoutGGUFMmap, CachedFirst: cachedFirst, SpecBlock: 1}
		simple, err := Run(cfg, steps, lowPolicy{len(m.Layers) * m.Experts})
		if err != nil {
			t.Fatal(err)
		}
		e := newEngine(cfg, lowPolicy{len(m.Layers) * m.Experts}, nil)
		e.mm = &mmapModel{win: 128 << 10, threads: 1, fault: 2000, gen: 1, tensors: make([][]tensorWins, len(m.Layers))}
		if err := e.run(newWindow(traces.NewSliceSource(steps), e.checkStep)); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(simple)
		b, _ := json.Marshal(&e.res)
		if string(a) != string(b) {
			t.Errorf("cached-first %v: detailed path differs from the simple one:\n%s\n%s", cachedFirst, a, b)
		}
		if simple.Misses == 0 || simple.StallFaultCPUNS == 0 {
			t.Errorf("no faults to compare (%d misses)", simple.Misses)
		}
	}
}
