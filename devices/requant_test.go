package devices

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestWithExpertQuantByHand: block 0 of MiniCPM-V 4.7 Q4_K_M (Q4_K gate and
// up, Q6_K down) re-quantized to Q3_K, by hand from ggml's block sizes.
// Reference: ggml type_traits: Q3_K 110 B per 256 weights; hidden 2048,
// expert FFN 512 (devices/minicpm.go).
func TestWithExpertQuantByHand(t *testing.T) {
	m, err := LookupModel(MiniCPMV47, "q4_k_m")
	if err != nil {
		t.Fatal(err)
	}
	// Before: gate and up 512 rows × 2048/256 blocks × 144 B, down 2048 rows × 512/256 × 210 B.
	if got, want := m.Layers[0].ExpertBytes, int64(2*512*8*144+2048*2*210); got != want {
		t.Fatalf("block 0 before: %d bytes, want %d", got, want)
	}
	r, err := m.WithExpertQuant("Q3_K")
	if err != nil {
		t.Fatal(err)
	}
	gate := int64(512 * (2048 / 256) * 110) // 450,560
	down := int64(2048 * (512 / 256) * 110) // 450,560
	want := []ExpertTensor{{TensorGate, "Q3_K", gate}, {TensorUp, "Q3_K", gate}, {TensorDown, "Q3_K", down}}
	l := r.Layers[0]
	if !reflect.DeepEqual(l.Tensors, want) || l.ExpertBytes != 1_351_680 {
		t.Errorf("block 0 after: %d bytes %+v, want 1351680 %+v", l.ExpertBytes, l.Tensors, want)
	}
	if l.ExpertFLOPsPerToken != m.Layers[0].ExpertFLOPsPerToken || l.DenseBytes != m.Layers[0].DenseBytes || r.NonExpertBytes != m.NonExpertBytes {
		t.Error("re-quantizing the experts changed something else")
	}
	if r.Variant != "q4_k_m, experts Q3_K" || !strings.Contains(r.Source, "experts re-quantized to Q3_K") {
		t.Errorf("variant %q, source %q", r.Variant, r.Source)
	}
	if m.Layers[0].ExpertBytes != 2_039_808 || m.Variant != "q4_k_m" {
		t.Error("WithExpertQuant wrote through to its receiver")
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
}

// TestWithExpertQuantMatchesMixedVariant: Q4_K_M re-quantized to Q3_K has,
// layer by layer, the built-in mixed-q3k-experts variant's expert tensors.
func TestWithExpertQuantMatchesMixedVariant(t *testing.T) {
	m, _ := LookupModel(MiniCPMV47, "q4_k_m")
	mixed, _ := LookupModel(MiniCPMV47, "mixed-q3k-experts")
	r, err := m.WithExpertQuant("Q3_K")
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Layers {
		if !reflect.DeepEqual(r.Layers[i], mixed.Layers[i]) {
			t.Errorf("layer %d: %+v, mixed variant %+v", i, r.Layers[i], mixed.Layers[i])
		}
	}
	if r.TotalExpertBytes() != mixed.TotalExpertBytes() {
		t.Errorf("total %d, mixed %d", r.TotalExpertBytes(), mixed.TotalExpertBytes())
	}
}

// TestWithExpertQuantWithoutTensors: a layer that lists no tensors takes
// gate, up and down from hidden and expert_ffn (Qwen3-30B-A3B's 2048 × 768).
func TestWithExpertQuantWithoutTensors(t *testing.T) {
	m, _ := LookupModel(Qwen3_30BA3B, "")
	for i := range m.Layers {
		m.Layers[i].Tensors = nil
	}
	r, err := m.WithExpertQuant("Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	// 3 × 2048 × 768 weights at 34 B per 32.
	if got, want := r.Layers[5].ExpertBytes, int64(3*2048*768/32*34); got != want {
		t.Errorf("%d bytes, want %d", got, want)
	}
}

// TestWithExpertQuantRefuses: what a model lacks is named; a no-op wraps
// ErrExpertQuantUnchanged; the input is never modified.
func TestWithExpertQuantRefuses(t *testing.T) {
	q4, _ := LookupModel(MiniCPMV47, "q4_k_m")
	mixed, _ := LookupModel(MiniCPMV47, "mixed-q3k-experts")
	imported := &ModelSpec{Name: "Qwen3-30B-A3B-Q4_K_M", Source: "route_trace v1 preamble", Experts: 128, TopK: 6,
		Layers: []LayerSpec{{ExpertBytes: 3059712, Tensors: []ExpertTensor{{Name: "expert", Bytes: 3059712}}}}}
	edit := func(f func(m *ModelSpec)) *ModelSpec {
		m, _ := LookupModel(MiniCPMV47, "q4_k_m")
		f(m)
		return m
	}
	for _, tc := range []struct {
		name string
		m    *ModelSpec
		q    QuantType
		want string
	}{
		{"unknown type", q4, "Q9_K", `unknown quant type "Q9_K" (valid: BF16, F16, F32, MXFP4, Q2_K, Q3_K`},
		{"no shape", imported, "Q3_K", "needs the shape of their matrices, hidden and expert_ffn, and its spec states hidden 0, expert_ffn 0; its source: route_trace v1 preamble"},
		{"unknown kind", edit(func(m *ModelSpec) { m.Layers[2].Tensors[0].Name = "expert" }), "Q3_K", `layer 2 (block 2): expert tensor "expert": its shape is unknown`},
		{"untyped", edit(func(m *ModelSpec) { m.Layers[1].Tensors[2].Type = "IQ4_XS" }), "Q3_K", `expert tensor ffn_down_exps: type "IQ4_XS" is not one whose block size lessim knows`},
		{"bytes disagree", edit(func(m *ModelSpec) { m.Layers[3].Tensors[1].Bytes += 144 }), "Q3_K", "ffn_up_exps: 589968 bytes of Q4_K do not hold the 512 × 2048 weights"},
		{"row not whole blocks", edit(func(m *ModelSpec) {
			m.ExpertFFN = 384
			for i := range m.Layers {
				m.Layers[i].Tensors = nil
			}
		}), "Q3_K", "ffn_down_exps in Q3_K: row length 384 is not a whole number of Q3_K blocks of 256"},
		{"unchanged", mixed, "Q3_K", "every expert tensor is Q3_K already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := *tc.m
			_, err := tc.m.WithExpertQuant(tc.q)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if errors.Is(err, ErrExpertQuantUnchanged) != (tc.name == "unchanged") {
				t.Errorf("errors.Is(ErrExpertQuantUnchanged) = %v", !(tc.name == "unchanged"))
			}
			if !reflect.DeepEqual(before, *tc.m) {
				t.Error("the model was modified")
			}
		})
	}
	if _, err := q4.WithExpertQuant("Q4_K"); err != nil {
		t.Errorf("Q4_K_M to Q4_K changes the Q6_K down projections: %v", err)
	}
}
