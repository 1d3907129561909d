package sim_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

const mib = 1 << 20

// tinyModel: 4 MoE layers × 16 experts, top-4, 1 MiB experts in three regions.
func tinyModel() *devices.ModelSpec {
	m := &devices.ModelSpec{Name: "tiny", Arch: "test", Experts: 16, TopK: 4, Hidden: 256, ExpertFFN: 128}
	for i := range 4 {
		m.Layers = append(m.Layers, devices.LayerSpec{
			Block: i, ExpertBytes: mib, DenseBytes: 4 * mib,
			DenseFLOPsPerToken: 8 * mib, ExpertFLOPsPerToken: 2 * mib,
			Tensors: []devices.ExpertTensor{
				{Name: "ffn_gate_exps", Type: "Q8_0", Bytes: mib / 4},
				{Name: "ffn_up_exps", Type: "Q8_0", Bytes: mib / 4},
				{Name: "ffn_down_exps", Type: "Q8_0", Bytes: mib / 2},
			},
		})
	}
	m.NonExpertBytes = 32 * mib
	m.HeadBytes = 8 * mib
	m.HeadFLOPsPerToken = 16 * mib
	return m
}

func tinyDevice() *devices.Device {
	return &devices.Device{
		Name: "testdev", RAMBytes: 8 << 30, ReserveBytes: 1 << 30,
		MemBandwidth: 50e9, MemEfficiency: 0.5, ComputeFLOPS: 1e12, LayerOverhead: 2000,
		Flash: devices.Flash{
			Lanes: 4, LatencyNS: 80_000,
			SingleLane: []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 400e6}, {ReadBytes: 4 * mib, BytesPerSec: 1.8e9}},
			Aggregate:  []devices.CurvePoint{{ReadBytes: 16 << 10, BytesPerSec: 800e6}, {ReadBytes: 4 * mib, BytesPerSec: 2.4e9}},
			PageBytes:  16 << 10, ReadAheadBytes: 128 << 10, FaultNS: 2000,
		},
	}
}

// randomSteps routes tokens with a skewed popularity and next-token reuse, and
// gives depth-1 lookahead scores that favour the next layer's true experts.
func randomSteps(m *devices.ModelSpec, n int, seed uint64) []traces.Step {
	r := rand.New(rand.NewPCG(seed, 1))
	L, E, K := len(m.Layers), m.Experts, m.TopK
	steps := make([]traces.Step, n)
	var prev [][]int32
	for t := range steps {
		s := &steps[t]
		s.Pos, s.Phase, s.Pass = int32(t), traces.Decode, int32(t)
		s.Layers = make([]traces.LayerStep, L)
		cur := make([][]int32, L)
		for l := range L {
			pick := map[int32]bool{}
			var sel []int32
			for len(sel) < K {
				var x int32
				if prev != nil && r.Float64() < 0.45 {
					x = prev[l][r.IntN(K)]
				} else {
					x = int32(min(E-1, int(float64(E)*r.Float64()*r.Float64())))
				}
				if !pick[x] {
					pick[x] = true
					sel = append(sel, x)
				}
			}
			cur[l] = sel
			s.Layers[l].Experts = sel
		}
		for l := 0; l+1 < L; l++ {
			sc := make([]float32, E)
			for x := range sc {
				sc[x] = float32(r.Float64())
			}
			for _, x := range cur[l+1] {
				if r.Float64() < 0.8 {
					sc[x] += 1
				}
			}
			s.Layers[l].Lookahead = [][]float32{sc}
		}
		prev = cur
	}
	return steps
}

// withPrompt marks the first n steps as one prefill pass.
func withPrompt(steps []traces.Step, n int) []traces.Step {
	for i := range n {
		steps[i].Phase, steps[i].Pass = traces.Prefill, 0
	}
	return steps
}

func run(t testing.TB, cfg sim.Config, steps []traces.Step, policy string, p policies.Params) *sim.Result {
	t.Helper()
	p.Model = cfg.Model
	p.Trace = steps
	pol, err := policies.New(policy, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(cfg, steps, pol)
	if err != nil {
		t.Fatalf("%s: %v", policy, err)
	}
	return res
}

func baseConfig(cache int64) sim.Config {
	return sim.Config{Model: tinyModel(), Device: tinyDevice(), CacheBytes: cache, Layout: sim.LayoutPerExpert, CachedFirst: true, SpecBlock: 1}
}

func TestDeterministicJSON(t *testing.T) {
	steps := randomSteps(tinyModel(), 300, 7)
	cfg := baseConfig(24 * mib)
	cfg.SpecBlock, cfg.SpecAccept, cfg.Seed = 4, 0.7, 9
	var out [2][]byte
	for i := range out {
		b, err := json.Marshal(run(t, cfg, steps, "les", policies.DefaultParams(tinyModel())))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatalf("same inputs gave different results:\n%s\n%s", out[0], out[1])
	}
}

// Physics: no run beats pure compute or moving its bytes at the best bandwidth.
func TestPhysicsBounds(t *testing.T) {
	steps := withPrompt(randomSteps(tinyModel(), 220, 3), 20)
	all := run(t, baseConfig(64*mib), steps, "lru", policies.DefaultParams(tinyModel()))
	for _, layout := range []sim.Layout{sim.LayoutPerExpert, sim.LayoutGGUFMmap} {
		for _, pol := range []string{"ondemand", "les", "oracle"} {
			cfg := baseConfig(20 * mib)
			cfg.Layout = layout
			cfg.Prefill = true
			r := run(t, cfg, steps, pol, policies.DefaultParams(tinyModel()))
			best := 2.4e9 // the aggregate curve's maximum
			if minNS := float64(r.FlashBytes) / best * 1e9; float64(r.TimeNS) < minNS {
				t.Errorf("%s/%s: %d ns beats reading %d bytes at the best bandwidth (%.0f ns)", layout, pol, r.TimeNS, r.FlashBytes, minNS)
			}
			if r.TimeNS < all.ComputeNS {
				t.Errorf("%s/%s: %d ns beats pure compute %d ns", layout, pol, r.TimeNS, all.ComputeNS)
			}
			if r.FlashBusyNS > r.TimeNS {
				t.Errorf("%s/%s: flash busy %d ns longer than the run %d ns", layout, pol, r.FlashBusyNS, r.TimeNS)
			}
			if r.TimeNS != r.ComputeNS+r.StallNS {
				t.Errorf("%s/%s: time %d != compute %d + stall %d", layout, pol, r.TimeNS, r.ComputeNS, r.StallNS)
			}
		}
	}
}

func TestUnlimitedCacheOnlyColdMisses(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 200, 5)
	distinct := map[[2]int32]bool{}
	for _, s := range steps {
		for l, ls := range s.Layers {
			for _, x := range ls.Experts {
				distinct[[2]int32{int32(l), x}] = true
			}
		}
	}
	r := run(t, baseConfig(m.TotalExpertBytes()), steps, "lru", policies.DefaultParams(tinyModel()))
	if r.Misses != int64(len(distinct)) {
		t.Fatalf("misses = %d, want %d cold misses", r.Misses, len(distinct))
	}
}

func TestCacheTooSmallIsRefused(t *testing.T) {
	_, err := sim.Run(baseConfig(3*mib), randomSteps(tinyModel(), 10, 1), mustPolicy(t, "lru"))
	errgolden.Check(t, "3MiB", err)
}

// TestBadStepsAreRefused: a step whose experts the model does not have is
// refused with its step, layer and expert, never simulated.
func TestBadStepsAreRefused(t *testing.T) {
	m := tinyModel()
	for name, experts := range map[string][]int32{"negative": {0, -1}, "past": {int32(m.Experts), 0}, "too-many": make([]int32, m.Experts+1)} {
		steps := randomSteps(m, 10, 1)
		steps[3].Layers[1].Experts = experts
		_, err := sim.Run(baseConfig(m.TotalExpertBytes()), steps, mustPolicy(t, "lru"))
		errgolden.Check(t, name, err)
	}
}

func mustPolicy(t *testing.T, name string) sim.Policy {
	p := policies.DefaultParams(tinyModel())
	p.Model = tinyModel()
	pol, err := policies.New(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func TestSpeculativeDecodingCountsAcceptedTokens(t *testing.T) {
	steps := randomSteps(tinyModel(), 400, 11)
	cfg := baseConfig(40 * mib)
	cfg.SpecBlock, cfg.SpecAccept = 4, 1
	r := run(t, cfg, steps, "lru", policies.DefaultParams(tinyModel()))
	if r.Tokens != 400 || r.Passes != 100 {
		t.Fatalf("acceptance 1, block 4: tokens %d passes %d, want 400 and 100", r.Tokens, r.Passes)
	}
	cfg.SpecAccept = 0
	r = run(t, cfg, steps, "lru", policies.DefaultParams(tinyModel()))
	if r.Tokens != 400 || r.Passes != 400 {
		t.Fatalf("acceptance 0: tokens %d passes %d, want 400 and 400", r.Tokens, r.Passes)
	}
}

func TestCachedFirstNeverSlower(t *testing.T) {
	steps := randomSteps(tinyModel(), 200, 13)
	cfg := baseConfig(24 * mib)
	a := run(t, cfg, steps, "lru", policies.DefaultParams(tinyModel()))
	cfg.CachedFirst = false
	b := run(t, cfg, steps, "lru", policies.DefaultParams(tinyModel()))
	if a.TimeNS > b.TimeNS {
		t.Fatalf("cached-first %d ns slower than rank order %d ns", a.TimeNS, b.TimeNS)
	}
	if a.Misses != b.Misses {
		t.Fatalf("compute order changed misses: %d vs %d", a.Misses, b.Misses)
	}
}

// The candidate index is an optimization only: les gives the same result with
// or without it, whether it covers the candidates asked for or not.
func TestLookaheadIndexChangesNothing(t *testing.T) {
	for _, p := range []policies.Params{
		policies.DefaultParams(tinyModel()),
		{Model: tinyModel(), Depth: 1, Prefetch: true, Threshold: 0.6},
		{Model: tinyModel(), Depth: 1, Prefetch: true, TopN: 6},
	} {
		plain := run(t, baseConfig(20*mib), randomSteps(tinyModel(), 150, 21), "les", p)
		for _, cap := range []int{1, 5, 64} {
			steps := randomSteps(tinyModel(), 150, 21)
			traces.IndexLookahead(steps, cap, cap != 5)
			got := run(t, baseConfig(20*mib), steps, "les", p)
			a, _ := json.Marshal(plain)
			b, _ := json.Marshal(got)
			if !bytes.Equal(a, b) {
				t.Fatalf("threshold %g top-n %d, index cap %d: result differs\n%s\n%s", p.Threshold, p.TopN, cap, a, b)
			}
		}
	}
}

// With SpecFromTrace, decode tokens sharing a recorded Pass form one verify
// pass whose tokens are all accepted.
func TestSpeculativePassesFromTrace(t *testing.T) {
	steps := randomSteps(tinyModel(), 300, 17)
	for i := range steps { // two tokens per recorded pass: 150 passes
		steps[i].Pass = int32(i / 2)
	}
	cfg := baseConfig(40 * mib)
	cfg.SpecFromTrace = true
	r := run(t, cfg, steps, "lru", policies.DefaultParams(tinyModel()))
	if r.Tokens != 300 || r.Passes != 150 || r.AcceptedPerPass != 2 {
		t.Fatalf("tokens %d passes %d accepted/pass %g, want 300, 150, 2", r.Tokens, r.Passes, r.AcceptedPerPass)
	}
	one := run(t, baseConfig(40*mib), steps, "lru", policies.DefaultParams(tinyModel()))
	if r.TokensPerSec <= one.TokensPerSec {
		t.Errorf("two tokens per verify pass (%.1f tok/s) should beat one (%.1f tok/s)", r.TokensPerSec, one.TokensPerSec)
	}
}

// TestContextShorterThanPositionsRefused: the engine refuses the first step
// past Config.ContextTokens (the KV cache holds no more positions), as it
// reads a source that cannot tell its longest sequence beforehand; a
// context as long as the run is accepted.
func TestContextShorterThanPositionsRefused(t *testing.T) {
	steps := randomSteps(tinyModel(), 30, 3)
	pol, err := policies.New("lru", policies.DefaultParams(tinyModel()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(24 * mib)
	cfg.ContextTokens = 10
	_, err = sim.Run(cfg, steps, pol)
	errgolden.Check(t, "context-10", err)
	cfg.ContextTokens = 30
	if pol, err = policies.New("lru", policies.DefaultParams(tinyModel())); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(cfg, steps, pol); err != nil {
		t.Errorf("context 30 on 30 positions: %v", err)
	}
}
