package traces

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lessim/lessim/devices"
)

// ioShape is a small model shape for I/O tests.
type ioShape struct {
	layers, experts, topK, hidden, depth int
	logits, routerInputs                 bool
}

func ioTestMeta(sh ioShape) Meta {
	m := Meta{
		Model: devices.ModelSpec{
			Name: "io-test", Arch: "qwen3moe", Variant: "f16",
			Blocks: sh.layers + 1, Experts: sh.experts, TopK: sh.topK,
			Hidden: sh.hidden, ExpertFFN: 16,
		},
		LookaheadDepth:  sh.depth,
		HasLogits:       sh.logits,
		HasRouterInputs: sh.routerInputs,
		Origin:          "synth",
		Info:            map[string]string{"seed": "1", "note": "trace I/O test"},
	}
	for i := range sh.layers {
		m.Model.Layers = append(m.Model.Layers, devices.LayerSpec{Block: i + 1, ExpertBytes: 1024 + int64(i)})
	}
	return m
}

// ioTestSteps makes n valid steps in the canonical form the Reader returns:
// Lookahead trimmed after its last present depth, nil depths past the last
// layer. Optional vectors are sometimes absent (nil) to exercise nulls, and
// prefill tokens but the prompt's last are not routed at the last layer (nil
// Experts), as llama.cpp records them.
// Floats are finite, so reflect.DeepEqual compares them bit for bit.
func ioTestSteps(rng *rand.Rand, m Meta, n int, withHit bool) []Step {
	L, E := len(m.Model.Layers), m.Model.Experts
	vec := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	steps := make([]Step, n)
	for t := range steps {
		s := &steps[t]
		s.Seq, s.Pos = int32(t/50), int32(t%50)
		s.Phase = Prefill
		s.Pass = int32(t / 50)
		if t%50 >= 10 {
			s.Phase, s.Pass = Decode, int32(t)
		}
		s.Layers = make([]LayerStep, L)
		for i := range s.Layers {
			ls := &s.Layers[i]
			k := max(1, m.Model.TopK)
			if s.Phase == Prefill && i == L-1 && t%50 != 9 {
				k = 0 // only the prompt's last token is routed at the last layer
			}
			for _, e := range rng.Perm(E)[:k] {
				ls.Experts = append(ls.Experts, int32(e))
			}
			if k > 0 && rng.IntN(5) != 0 {
				ls.Weights = vec(k)
			}
			if m.HasLogits && rng.IntN(7) != 0 {
				ls.Logits = vec(E)
			}
			for d := 1; d <= m.LookaheadDepth && i+d < L; d++ {
				var sc []float32
				if rng.IntN(6) != 0 {
					sc = vec(E)
				}
				ls.Lookahead = append(ls.Lookahead, sc)
			}
			for len(ls.Lookahead) > 0 && ls.Lookahead[len(ls.Lookahead)-1] == nil {
				ls.Lookahead = ls.Lookahead[:len(ls.Lookahead)-1]
			}
			if len(ls.Lookahead) == 0 {
				ls.Lookahead = nil
			}
			if m.HasRouterInputs && rng.IntN(4) != 0 {
				ls.RouterInput = vec(m.Model.Hidden)
			}
			if withHit && k > 0 {
				ls.Hit = make([]bool, k)
				for j := range ls.Hit {
					ls.Hit[j] = rng.IntN(2) == 0
				}
			}
			ls.ComputeNS = rng.Int64N(1_000_000)
		}
	}
	return steps
}

// ioWrite writes steps with a Writer whose row groups hold groupRows rows
// (0 = the default sizing) and returns the file bytes.
func ioWrite(t testing.TB, m Meta, steps []Step, groupRows int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, m)
	if err != nil {
		t.Fatal(err)
	}
	if groupRows > 0 {
		w.groupSz = groupRows
	}
	for i := range steps {
		if err := w.Write(&steps[i]); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ioRead reads every step of a trace file held in data, with record batches
// of batchRows rows (0 = default).
func ioRead(data []byte, name string, batchRows int64) (Meta, []Step, error) {
	r, err := newReader(pqNoCloseRA{bytes.NewReader(data)}, name, batchRows)
	if err != nil {
		return Meta{}, nil, err
	}
	defer r.Close()
	steps, err := ReadAll(r)
	return r.Meta(), steps, err
}

// ioDiff describes the first difference between two step lists, or "".
func ioDiff(got, want []Step) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d steps, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.Seq != w.Seq || g.Pos != w.Pos || g.Phase != w.Phase || g.Pass != w.Pass || len(g.Layers) != len(w.Layers) {
			return fmt.Sprintf("step %d header: got %+v, want %+v", i, *g, *w)
		}
		for l := range w.Layers {
			if d := ioLayerDiff(&g.Layers[l], &w.Layers[l]); d != "" {
				return fmt.Sprintf("step %d layer %d: %s", i, l, d)
			}
		}
	}
	return ""
}

func ioLayerDiff(g, w *LayerStep) string {
	switch {
	case !ioEqual(g.Experts, w.Experts):
		return fmt.Sprintf("experts %v, want %v", g.Experts, w.Experts)
	case !ioEqualF(g.Weights, w.Weights):
		return fmt.Sprintf("weights %v, want %v", g.Weights, w.Weights)
	case !ioEqualF(g.Logits, w.Logits):
		return "logits differ"
	case !ioEqualF(g.RouterInput, w.RouterInput):
		return "router inputs differ"
	case !ioEqual(g.Hit, w.Hit):
		return fmt.Sprintf("hit %v, want %v", g.Hit, w.Hit)
	case g.ComputeNS != w.ComputeNS:
		return fmt.Sprintf("compute_ns %d, want %d", g.ComputeNS, w.ComputeNS)
	case len(g.Lookahead) != len(w.Lookahead) || (g.Lookahead == nil) != (w.Lookahead == nil):
		return fmt.Sprintf("%d lookahead depths (nil %v), want %d (nil %v)", len(g.Lookahead), g.Lookahead == nil, len(w.Lookahead), w.Lookahead == nil)
	}
	for d := range w.Lookahead {
		if !ioEqualF(g.Lookahead[d], w.Lookahead[d]) {
			return fmt.Sprintf("lookahead depth %d differs", d+1)
		}
	}
	return ""
}

// ioEqual is element equality that also tells nil from empty.
func ioEqual[T comparable](a, b []T) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ioEqualF compares float32 slices bit for bit, telling nil from empty.
func ioEqualF(a, b []float32) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
