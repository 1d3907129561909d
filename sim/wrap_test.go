package sim_test

import (
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// wrapModel is tinyModel with 9 attention layers at the bounds' largest
// attention work, 1e9 FLOPs per context position (docs/profile-bounds.md).
func wrapModel() *devices.ModelSpec {
	m := tinyModel()
	l0 := m.Layers[0]
	m.Layers = nil
	for i := range 9 {
		l := l0
		l.Block, l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition = i, devices.MixerAttention, 1024, 1e9
		m.Layers = append(m.Layers, l)
	}
	m.Blocks, m.KVBytesPerToken = 9, 9*1024
	m.NonExpertBytes = 9*l0.DenseBytes + m.HeadBytes
	return m
}

// TestPassSumsDoNotWrap: within the bounds one pass's simulated time can add
// up past int64. A decode token at position p attends to p+1 positions; at
// 1e9 FLOPs per position and the slowest compute the bounds allow (1
// GFLOPS) each attention layer costs 1e9 × (p+1) ns, and p may be as large
// as an int32. With 9 layers and p+1 = 2,049,638,231 the pass adds
// 9 × 2.05e18 ns = 2^64 + 5.29e9 ns: without a check the sum wraps twice
// and lands 5.3 s after the start, a plausible time and no error. The run
// must be refused instead. At p+1 = 4e8 the same pass (3.6e18 ns, below
// the 2^62 ns limit) comes out exact.
func TestPassSumsDoNotWrap(t *testing.T) {
	m := wrapModel()
	d := tinyDevice()
	d.ComputeFLOPS = 1e9
	if err := m.Validate(); err != nil {
		t.Fatalf("model outside the bounds: %v", err)
	}
	if ps := d.Check(); len(ps) > 0 {
		t.Fatalf("device outside the bounds: %v", ps)
	}
	cfg := sim.Config{Model: m, Device: d, CacheBytes: 64 * mib, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1, ContextCost: true}
	// Token 0 loads the experts; token 1, far into the sequence, hits them
	// all, so its pass has no flash wait to hide the sum.
	steps := func(ctx int32) []traces.Step { return ctxSteps(m, 0, 0, ctx-1) }
	p := policies.DefaultParams(m)

	const ok = 400_000_000
	res := run(t, cfg, steps(ok), "lru", p)
	if want := int64(9) * 1e9 * (1 + ok); res.ContextNS != want {
		t.Errorf("context %d ns at p+1 = %d, want %d", res.ContextNS, ok, want)
	}

	p.Model, p.Trace = m, steps(2_049_638_231)
	pol, err := policies.New("lru", p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sim.Run(cfg, p.Trace, pol)
	errgolden.Check(t, "146-years", err)
}
