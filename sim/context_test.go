package sim_test

import (
	"encoding/json"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// hybridModel is tinyModel cut to 2 layers: layer 0 attention (1 KiB of KV
// and 1000 FLOPs per context position), layer 1 recurrent (1 MiB of state,
// 3 MFLOP per token).
func hybridModel() *devices.ModelSpec {
	m := tinyModel()
	m.Layers = m.Layers[:2]
	m.Blocks = 2
	m.KVBytesPerToken = 1024
	a, r := &m.Layers[0], &m.Layers[1]
	a.Mixer, a.KVBytesPerToken, a.AttnFLOPsPerPosition = devices.MixerAttention, 1024, 1000
	r.Mixer, r.StateBytes, r.StateFLOPsPerToken = devices.MixerRecurrent, mib, 3_000_000
	return m
}

// ctxSteps are tokens of one sequence at the given positions, each using
// experts 0-3 on every layer; the first prompt tokens are one prefill pass.
func ctxSteps(m *devices.ModelSpec, prompt int, pos ...int32) []traces.Step {
	steps := make([]traces.Step, len(pos))
	for i, p := range pos {
		s := &steps[i]
		s.Pos, s.Phase, s.Pass = p, traces.Decode, int32(i)
		if i < prompt {
			s.Phase, s.Pass = traces.Prefill, 0
		}
		for range m.Layers {
			s.Layers = append(s.Layers, traces.LayerStep{Experts: []int32{0, 1, 2, 3}})
		}
	}
	return steps
}

// TestContextCostByHand isolates the context cost on a 2-layer hybrid model.
// Device: 50 GB/s × 0.5 = 25 GB/s to DRAM, 1 TFLOP/s. Per pass:
//
//	attention, decode at Pos p: max(ceil(1024 (p+1) / 25 GB/s), ceil(1000 (p+1) / 1 TFLOP/s))
//	  p = 3: max(ceil(163.84), 4) = 164 ns; p = 4: 205 ns; p = 99: 4096 ns
//	attention, prefill of Pos 0-2: max(ceil(1024 × 3 / 25 GB/s) = 123, 1000 × 6 / 1e12 = 6 ns) = 123 ns
//	recurrent, any pass: max(ceil(2 × 1 MiB / 25 GB/s) = ceil(83886.08) = 83887, ceil(3e6 × n / 1e12)) = 83887 ns
//
// so decode adds 164 + 205 + 4096 + 3 × 83887 = 256126 ns and prefill 123 +
// 83887 = 84010 ns. With lru (no prefetch) nothing overlaps the added
// compute, so the run is longer by exactly that. Off, it costs nothing.
func TestContextCostByHand(t *testing.T) {
	m := hybridModel()
	steps := ctxSteps(m, 3, 0, 1, 2, 3, 4, 99)
	cfg := baseConfig(12 * mib)
	cfg.Model, cfg.Prefill = m, true
	off := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	if off.ContextNS != 0 {
		t.Fatalf("context cost off: %d ns", off.ContextNS)
	}
	cfg.ContextCost = true
	on := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	const decode, prefill = 164 + 205 + 4096 + 3*83887, 123 + 83887
	if on.ContextNS != decode {
		t.Errorf("context %d ns, want %d", on.ContextNS, decode)
	}
	if d := on.TimeNS - off.TimeNS; d != decode {
		t.Errorf("decode time grew by %d ns, want %d", d, decode)
	}
	if d := on.ComputeNS - off.ComputeNS; d != decode {
		t.Errorf("compute grew by %d ns, want %d", d, decode)
	}
	if d := on.PrefillNS - off.PrefillNS; d != prefill {
		t.Errorf("prefill grew by %d ns, want %d", d, prefill)
	}
	// Memory: the recurrent state leaves 1 MiB less for the cache.
	if d := off.DeviceBudgetBytes - on.DeviceBudgetBytes; d != mib {
		t.Errorf("budget shrank by %d, want the state's %d", d, mib)
	}
}

// TestContextCostOffIsByteIdentical: a model that states its mixers gives the
// same result as one that does not while the context cost is off.
func TestContextCostOffIsByteIdentical(t *testing.T) {
	plain := tinyModel()
	steps := randomSteps(plain, 60, 4)
	withShape := tinyModel()
	for i := range withShape.Layers {
		l := &withShape.Layers[i]
		l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition = devices.MixerAttention, 4096, 16384
	}
	withShape.KVBytesPerToken = 4 * 4096
	plain.KVBytesPerToken = withShape.KVBytesPerToken
	for _, policy := range []string{"lru", "les"} {
		a := run(t, sim.Config{Model: plain, Device: tinyDevice(), CacheBytes: 12 * mib, Layout: sim.LayoutGGUFMmap, SpecBlock: 1}, steps, policy, policies.DefaultParams(plain))
		b := run(t, sim.Config{Model: withShape, Device: tinyDevice(), CacheBytes: 12 * mib, Layout: sim.LayoutGGUFMmap, SpecBlock: 1}, steps, policy, policies.DefaultParams(withShape))
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: results differ with the mixers stated and the context cost off:\n%s\n%s", policy, ja, jb)
		}
	}
}

// TestContextCostGrowsWithPosition: the same routing later in a sequence
// costs more per token, and a purely recurrent model does not grow.
func TestContextCostGrowsWithPosition(t *testing.T) {
	m := tinyModel()
	for i := range m.Layers {
		l := &m.Layers[i]
		l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition = devices.MixerAttention, 4096, 16384
	}
	m.KVBytesPerToken = 4 * 4096
	early := randomSteps(m, 50, 9)
	late := randomSteps(m, 50, 9)
	for i := range late {
		late[i].Pos += 30000
	}
	cfg := baseConfig(12 * mib)
	cfg.Model, cfg.ContextCost = m, true
	a := run(t, cfg, early, "lru", policies.DefaultParams(m))
	b := run(t, cfg, late, "lru", policies.DefaultParams(m))
	if b.ContextNS <= a.ContextNS || b.TimeNS <= a.TimeNS {
		t.Errorf("context at pos 30000+: %d ns (time %d), at pos 0+: %d ns (time %d): want more later", b.ContextNS, b.TimeNS, a.ContextNS, a.TimeNS)
	}
	r := hybridModel()
	r.Layers[0] = r.Layers[1]
	r.Layers[0].Block = 0
	r.KVBytesPerToken = 0
	cfg.Model = r
	early, late = ctxSteps(r, 0, 0, 1, 2), ctxSteps(r, 0, 50000, 50001, 50002)
	if x, y := run(t, cfg, early, "lru", policies.DefaultParams(r)), run(t, cfg, late, "lru", policies.DefaultParams(r)); x.ContextNS != y.ContextNS || x.ContextNS != 3*2*83887 {
		t.Errorf("recurrent context: %d ns early, %d late, want both %d", x.ContextNS, y.ContextNS, 3*2*83887)
	}
}

// TestContextCostNeedsShape: the context cost on a model that does not state
// its mixers is refused, naming the model; WithContextShape says what a
// model that is not built in must state, and refuses a built-in name whose
// layers differ.
func TestContextCostNeedsShape(t *testing.T) {
	cfg := baseConfig(12 * mib)
	cfg.ContextCost = true
	errgolden.Check(t, "validate", cfg.Validate())
	_, err := cfg.Model.WithContextShape()
	errgolden.Check(t, "tiny", err)
	m := tinyModel()
	m.Name = devices.MiniCPMV47
	_, err = m.WithContextShape()
	errgolden.Check(t, "4-layer", err)
}

// TestBuiltInContextShapes: the built-in models state their mixers from their
// configs when asked (WithContextShape; LookupModel leaves them out):
// Qwen3-30B-A3B all attention, MiniCPM-V 4.7 every 4th block attention and
// the rest Gated DeltaNet; the per-layer KV sums to the model's KV per
// token, and the shaped specs validate.
func TestBuiltInContextShapes(t *testing.T) {
	shaped := func(name string) *devices.ModelSpec {
		m, err := devices.LookupModel(name, "")
		if err != nil {
			t.Fatal(err)
		}
		if m.HasContextShape() || m.RecurrentStateBytes() != 0 {
			t.Errorf("%s: LookupModel states mixers", name)
		}
		s, err := m.WithContextShape()
		if err == nil {
			err = s.Validate()
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.HasContextShape() {
			t.Errorf("%s: WithContextShape changed its receiver", name)
		}
		return s
	}
	q, mc := shaped(devices.Qwen3_30BA3B), shaped(devices.MiniCPMV47)
	for _, m := range []*devices.ModelSpec{q, mc} {
		var kv int64
		attn := 0
		for _, l := range m.Layers {
			kv += l.KVBytesPerToken
			if l.Mixer == devices.MixerAttention {
				attn++
			}
		}
		if !m.HasContextShape() || kv != m.KVBytesPerToken {
			t.Errorf("%s: shape %v, layers' KV %d, model's %d", m.Name, m.HasContextShape(), kv, m.KVBytesPerToken)
		}
		want := map[string]int{devices.Qwen3_30BA3B: 48, devices.MiniCPMV47: 10}[m.Name]
		if attn != want {
			t.Errorf("%s: %d attention layers, want %d", m.Name, attn, want)
		}
	}
	// 30 Gated DeltaNet layers × (32 × 128 × 128 × 4 + 3 × 8192 × 4) bytes.
	if got, want := mc.RecurrentStateBytes(), int64(30*(32*128*128*4+3*8192*4)); got != want {
		t.Errorf("MiniCPM-V 4.7 recurrent state %d, want %d", got, want)
	}
	l3 := mc.Layers[3]
	if l3.Mixer != devices.MixerAttention || l3.KVBytesPerToken != 2*2*256*2 || l3.AttnFLOPsPerPosition != 4*16*256 {
		t.Errorf("MiniCPM-V 4.7 block 3: %+v", l3)
	}
}
