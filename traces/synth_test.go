package traces

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
)

// tsSpec is a uniform test model: L MoE layers of E experts, top-k K.
func tsSpec(L, E, K int) *devices.ModelSpec {
	m := &devices.ModelSpec{Name: "test", Arch: "qwen3moe", Blocks: L, Experts: E, TopK: K}
	for l := range L {
		m.Layers = append(m.Layers, devices.LayerSpec{Block: l, ExpertBytes: 1 << 20,
			Tensors: []devices.ExpertTensor{{Name: "expert", Type: "Q4_K", Bytes: 1 << 20}}})
	}
	return m
}

// tsSource iterates a slice of steps (the package's own slice source may not exist yet).
type tsSource struct {
	steps []Step
	i     int
}

func (s *tsSource) Next() bool  { s.i++; return s.i <= len(s.steps) }
func (s *tsSource) Step() *Step { return &s.steps[s.i-1] }
func (s *tsSource) Err() error  { return nil }

func tsStats(t testing.TB, meta Meta, steps []Step) *Stats {
	t.Helper()
	st, err := ComputeStats(meta, &tsSource{steps: steps}, StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSynthDeterministic(t *testing.T) {
	spec := tsSpec(6, 32, 4)
	opt := DefaultSynthOptions()
	opt.Tokens, opt.PromptTokens, opt.Sequences, opt.LookaheadDepth, opt.Logits = 50, 7, 2, 2, true
	m1, s1, err := Synth(spec, opt)
	if err != nil {
		t.Fatal(err)
	}
	m2, s2, _ := Synth(spec, opt)
	if !reflect.DeepEqual(m1, m2) || !reflect.DeepEqual(s1, s2) {
		t.Fatal("same seed gave different traces")
	}
	opt.Seed++
	_, s3, _ := Synth(spec, opt)
	if reflect.DeepEqual(s1, s3) {
		t.Fatal("different seeds gave the same trace")
	}
	// The streaming source yields the same steps.
	opt.Seed--
	m4, src, err := SynthSource(spec, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m1, m4) {
		t.Fatal("SynthSource meta differs from Synth")
	}
	i := 0
	for ; src.Next(); i++ {
		if !reflect.DeepEqual(*src.Step(), s1[i]) {
			t.Fatalf("SynthSource step %d differs from Synth", i)
		}
	}
	if i != len(s1) {
		t.Fatalf("SynthSource gave %d steps, Synth %d", i, len(s1))
	}
}

// TestSynthRoutingIndependent: the routing (every step's position and
// every layer's experts in rank order) is the same whatever the lookahead
// settings and whether logits are drawn, and the gate weights are the same
// whatever the lookahead settings: a sweep over recall, depth or logits
// compares one routing, and lru's rows do not move with les's predictor.
func TestSynthRoutingIndependent(t *testing.T) {
	spec := tsSpec(6, 32, 4)
	base := DefaultSynthOptions()
	base.Tokens, base.PromptTokens, base.Sequences = 40, 5, 2
	_, want, err := Synth(spec, base)
	if err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*SynthOptions){
		"recall 0.3":         func(o *SynthOptions) { o.LookaheadRecall = 0.3 },
		"depth 3":            func(o *SynthOptions) { o.LookaheadDepth, o.DepthPenalty = 3, 0.1 },
		"depth 0":            func(o *SynthOptions) { o.LookaheadDepth = 0 },
		"logits":             func(o *SynthOptions) { o.Logits = true },
		"logits and depth 2": func(o *SynthOptions) { o.Logits, o.LookaheadDepth = true, 2 },
	} {
		o := base
		mut(&o)
		_, got, err := Synth(spec, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			w, g := want[i], got[i]
			if w.Seq != g.Seq || w.Pos != g.Pos || w.Pass != g.Pass || w.Phase != g.Phase {
				t.Fatalf("%s: step %d at seq %d pos %d, want seq %d pos %d", name, i, g.Seq, g.Pos, w.Seq, w.Pos)
			}
			for l := range w.Layers {
				if !slices.Equal(w.Layers[l].Experts, g.Layers[l].Experts) {
					t.Fatalf("%s: step %d layer %d routes to %v, want %v", name, i, l, g.Layers[l].Experts, w.Layers[l].Experts)
				}
				if !o.Logits && !slices.Equal(w.Layers[l].Weights, g.Layers[l].Weights) {
					t.Fatalf("%s: step %d layer %d gate weights %v, want %v", name, i, l, g.Layers[l].Weights, w.Layers[l].Weights)
				}
			}
		}
	}
}

func TestSynthStructure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		L, E, K int
		depth   int
	}{
		{"qwen-shape", 8, 256, 8, 3},
		{"few experts", 4, 8, 6, 1}, // E < 2K: reuse exclusion and false positives must still terminate
		{"top-1", 3, 4, 1, 2},
		{"all experts", 3, 5, 5, 1},
		{"one layer", 1, 16, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tsSpec(tc.L, tc.E, tc.K)
			opt := DefaultSynthOptions()
			opt.Tokens, opt.PromptTokens, opt.Sequences, opt.LookaheadDepth, opt.Logits = 5, 3, 2, tc.depth, true
			meta, steps, err := Synth(spec, opt)
			if err != nil {
				t.Fatal(err)
			}
			if meta.Origin != "synth" || meta.LookaheadDepth != tc.depth || !meta.HasLogits || meta.Info["reuse"] != "0.45" {
				t.Errorf("meta = %+v", meta)
			}
			if len(steps) != 16 {
				t.Fatalf("%d steps, want 2×(3+5)", len(steps))
			}
			wantPass := []int32{0, 0, 0, 1, 2, 3, 4, 5, 6, 6, 6, 7, 8, 9, 10, 11}
			for i, st := range steps {
				seq, pos := int32(i/8), int32(i%8)
				ph := Decode
				if pos < 3 {
					ph = Prefill
				}
				if st.Seq != seq || st.Pos != pos || st.Phase != ph || st.Pass != wantPass[i] {
					t.Errorf("step %d: seq %d pos %d %v pass %d, want %d %d %v %d", i, st.Seq, st.Pos, st.Phase, st.Pass, seq, pos, ph, wantPass[i])
				}
				for l, ls := range st.Layers {
					tsCheckLayer(t, i, l, ls, tc.E, tc.K, min(tc.depth, tc.L-1-l))
				}
			}
		})
	}
}

func tsCheckLayer(t *testing.T, i, l int, ls LayerStep, E, K, depth int) {
	t.Helper()
	if len(ls.Experts) != K || len(ls.Weights) != K {
		t.Fatalf("step %d layer %d: %d experts %d weights, want %d", i, l, len(ls.Experts), len(ls.Weights), K)
	}
	seen := map[int32]bool{}
	sum := 0.0
	for j, e := range ls.Experts {
		if e < 0 || int(e) >= E || seen[e] {
			t.Fatalf("step %d layer %d: bad or repeated expert %d in %v", i, l, e, ls.Experts)
		}
		seen[e] = true
		sum += float64(ls.Weights[j])
		if j > 0 && ls.Weights[j] > ls.Weights[j-1] {
			t.Errorf("step %d layer %d: weights not descending %v", i, l, ls.Weights)
		}
		// Logits: selected experts outrank every other, and the weights are their softmax.
		for o, z := range ls.Logits {
			if !slices.Contains(ls.Experts, int32(o)) && z >= ls.Logits[e] {
				t.Fatalf("step %d layer %d: unselected expert %d logit %v ≥ selected %d logit %v", i, l, o, z, e, ls.Logits[e])
			}
		}
		w := math.Exp(float64(ls.Logits[e] - ls.Logits[ls.Experts[0]]))
		w0 := float64(ls.Weights[0])
		if math.Abs(w*w0-float64(ls.Weights[j])) > 1e-5 {
			t.Errorf("step %d layer %d: weight %d = %v, softmax of logits gives %v", i, l, j, ls.Weights[j], w*w0)
		}
	}
	if math.Abs(sum-1) > 1e-5 {
		t.Errorf("step %d layer %d: weights sum to %v", i, l, sum)
	}
	if len(ls.Lookahead) != depth {
		t.Errorf("step %d layer %d: %d lookahead vectors, want %d", i, l, len(ls.Lookahead), depth)
	}
	for _, sc := range ls.Lookahead {
		if len(sc) != E {
			t.Errorf("step %d layer %d: %d scores, want %d", i, l, len(sc), E)
		}
	}
}

// TestSynthMeasuresBack checks that the generator hits its targets when
// measured by ComputeStats over 2,000 tokens of a 40×256 top-8 model.
//
// Reference: DESIGN.md "About 45% of an expert selection repeats at the next
// token"; stale-gate next-layer recall 80.7% on Qwen3.6-35B-A3B; 3.5–4 points
// per extra layer of depth.
func TestSynthMeasuresBack(t *testing.T) {
	spec := tsSpec(40, 256, 8)
	opt := DefaultSynthOptions()
	opt.LookaheadDepth = 3
	meta, src, err := SynthSource(spec, opt) // streaming: constant memory
	if err != nil {
		t.Fatal(err)
	}
	st, err := ComputeStats(meta, src, StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.02 {
			t.Errorf("%s = %.4f, want %.4f ± 0.02", name, got, want)
		}
	}
	near("reuse", st.Reuse, 0.45)
	if len(st.Lookahead) != 3 {
		t.Fatalf("lookahead depths = %d, want 3", len(st.Lookahead))
	}
	near("lookahead recall d1", st.Lookahead[0].Recall, 0.807)
	near("lookahead recall d2", st.Lookahead[1].Recall, 0.807-0.0375)
	near("lookahead recall d3", st.Lookahead[2].Recall, 0.807-0.075)
	// Concentration rises with depth.
	first, last := st.PerLayer[0], st.PerLayer[39]
	if !(last.TopShare > first.TopShare+0.1 && last.Entropy < first.Entropy) {
		t.Errorf("layer 0 top share %.3f entropy %.3f; layer 39 %.3f %.3f: want concentration rising with depth",
			first.TopShare, first.Entropy, last.TopShare, last.Entropy)
	}
	if first.Distinct < 250 {
		t.Errorf("layer 0 touched %d of 256 experts in 2,000 tokens, want nearly all (almost uniform)", first.Distinct)
	}
	if st.ReuseDistance.Median < 1 || st.ReuseDistance.Median > 3 {
		t.Errorf("median reuse distance %d, want about 2", st.ReuseDistance.Median)
	}
	t.Logf("reuse %.4f, recall %.4f/%.4f/%.4f, hot list %.4f, median distance %d, p90 %d",
		st.Reuse, st.Lookahead[0].Recall, st.Lookahead[1].Recall, st.Lookahead[2].Recall,
		st.HotListRecall, st.ReuseDistance.Median, st.ReuseDistance.P90)
}

func TestSynthReuseExtremes(t *testing.T) {
	spec := tsSpec(4, 64, 8)
	for _, reuse := range []float64{0, 1} {
		opt := DefaultSynthOptions()
		opt.Tokens, opt.Reuse, opt.LookaheadRecall = 200, reuse, reuse
		meta, steps, err := Synth(spec, opt)
		if err != nil {
			t.Fatal(err)
		}
		st := tsStats(t, meta, steps)
		if st.Reuse != reuse || st.Lookahead[0].Recall != reuse {
			t.Errorf("reuse=recall=%v measured reuse %v recall %v, want exact", reuse, st.Reuse, st.Lookahead[0].Recall)
		}
	}
}

func TestSynthValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *devices.ModelSpec
		mod  func(*SynthOptions)
		want []string // every substring must appear in the one error
	}{
		{"nil spec", nil, func(*SynthOptions) {}, []string{"spec is nil"}},
		{"bad shape", &devices.ModelSpec{Name: "x", Experts: 0, TopK: 3}, func(*SynthOptions) {},
			[]string{"no MoE layers", "0 experts", "top-k 3"}},
		{"all option problems at once", tsSpec(4, 16, 4), func(o *SynthOptions) {
			o.Tokens, o.PromptTokens, o.Sequences = -1, -2, 0
			o.Skew, o.Reuse, o.LookaheadRecall, o.DepthPenalty = math.NaN(), 1.5, -0.1, 2
		}, []string{"tokens -1", "prompt tokens -2", "sequences 0", "skew NaN", "reuse 1.5", "recall -0.1", "depth penalty 2"}},
		{"no tokens", tsSpec(4, 16, 4), func(o *SynthOptions) { o.Tokens = 0 }, []string{"tokens + prompt tokens"}},
		{"skew beyond any router", tsSpec(4, 16, 4), func(o *SynthOptions) { o.Skew = 1e308 }, []string{"skew 1e+308 must be in [0, 10]"}},
		{"skew infinite", tsSpec(4, 16, 4), func(o *SynthOptions) { o.Skew = math.Inf(1) }, []string{"skew +Inf must be in [0, 10]"}},
		{"too deep", tsSpec(4, 16, 4), func(o *SynthOptions) { o.LookaheadDepth = 4 }, []string{"exceeds the 3 following layers"}},
		{"recall runs out", tsSpec(40, 16, 4), func(o *SynthOptions) { o.LookaheadDepth, o.DepthPenalty = 30, 0.1 }, []string{"is negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := DefaultSynthOptions()
			tc.mod(&opt)
			_, _, err := Synth(tc.spec, opt)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// BenchmarkSynthDefault is the embedded default of `lessim simulate`: 2,000
// tokens × 40 layers × 256 experts, depth-1 lookahead (target well under 0.5 s).
func BenchmarkSynthDefault(b *testing.B) {
	spec := tsSpec(40, 256, 8)
	opt := DefaultSynthOptions()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Synth(spec, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSynthSatisfiesValidate holds synthetic and predicted traces to the
// package's step contract (Validate), so the Parquet writer accepts them.
func TestSynthSatisfiesValidate(t *testing.T) {
	opt := DefaultSynthOptions()
	opt.Tokens, opt.PromptTokens, opt.LookaheadDepth, opt.Logits = 20, 3, 2, true
	meta, steps, err := Synth(tsSpec(5, 32, 4), opt)
	if err != nil {
		t.Fatal(err)
	}
	popt := DefaultPredictOptions()
	popt.Depth, popt.Replace = 3, true
	pmeta, psteps, err := PredictLookahead(meta, steps, popt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		if err := Validate(meta, &steps[i]); err != nil {
			t.Fatalf("synth step %d: %v", i, err)
		}
		if err := Validate(pmeta, &psteps[i]); err != nil {
			t.Fatalf("predicted step %d: %v", i, err)
		}
	}
}

// TestSynthBuiltinModels runs the generator on every built-in model spec.
func TestSynthBuiltinModels(t *testing.T) {
	for _, name := range devices.ModelNames() {
		spec, err := devices.LookupModel(name, "")
		if err != nil {
			t.Fatal(err)
		}
		opt := DefaultSynthOptions()
		opt.Tokens, opt.PromptTokens = 30, 4
		meta, steps, err := Synth(spec, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(meta.Model, *spec) {
			t.Errorf("%s: meta.Model differs from the spec", name)
		}
		for i := range steps {
			if err := Validate(meta, &steps[i]); err != nil {
				t.Fatalf("%s step %d: %v", name, i, err)
			}
		}
	}
}
