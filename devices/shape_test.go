package devices

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestBuildSpecDerived lays out a small synthetic qwen3moe model (the kind the
// trace generator writes) and checks every derived number by hand.
func TestBuildSpecDerived(t *testing.T) {
	m, err := BuildSpec(Shape{
		Name: "synth", Arch: "qwen3moe", Variant: "q8_0",
		MoELayers: 2, Experts: 8, TopK: 2,
		Hidden: 256, ExpertFFN: 128, Vocab: 512,
		Heads: 4, KVHeads: 2, HeadDim: 64,
		ExpertQuant: Uniform("Q8_0"), DenseType: "Q8_0", HeadType: "F16",
		LayerQuant: map[int]ExpertQuant{1: {"Q8_0", "Q8_0", "F16"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Reference: Q8_0 is 34 B per 32 weights; F16 2 B per weight.
	gate := int64(128 * 256 / 32 * 34) // 34,816
	if got := m.Layers[0].ExpertBytes; got != 3*gate {
		t.Errorf("layer 0 expert bytes %d, want %d", got, 3*gate)
	}
	if got := m.Layers[1].ExpertBytes; got != 2*gate+128*256*2 {
		t.Errorf("layer 1 expert bytes %d, want %d", got, 2*gate+128*256*2)
	}
	// Dense: q, o 256×256; k, v 128×256 in Q8_0; router 256×8 and 2 norms in F32.
	wq := int64(2*256*256 + 2*128*256)
	wantDense := wq/32*34 + 4*(256*8+2*256)
	if m.Layers[0].DenseBytes != wantDense || m.Layers[0].DenseFLOPsPerToken != 2*(wq+256*8+2*256) {
		t.Errorf("dense %d bytes %d FLOPs, want %d bytes", m.Layers[0].DenseBytes, m.Layers[0].DenseFLOPsPerToken, wantDense)
	}
	head := int64(512 * 256 * 2)
	embed := int64(512 * 256 / 32 * 34)
	if m.HeadBytes != head || m.NonExpertBytes != embed+head+4*256+2*wantDense {
		t.Errorf("head %d non-expert %d", m.HeadBytes, m.NonExpertBytes)
	}
	// KV: 2 blocks × (K, V) × 2 heads × 64 × 2 B.
	if m.KVBytesPerToken != 2*2*2*64*2 || m.Blocks != 2 {
		t.Errorf("kv %d blocks %d", m.KVBytesPerToken, m.Blocks)
	}
}

// TestBuildSpecExplicit uses explicit dense sizes and MoE block indices, as a
// GGUF header gives them (first block dense, so non-expert bytes are given).
func TestBuildSpecExplicit(t *testing.T) {
	m, err := BuildSpec(Shape{
		Name: "gguf", Blocks: 4, MoEBlocks: []int{1, 2, 3}, Experts: 64, TopK: 6, SharedExperts: 2,
		Hidden: 2048, ExpertFFN: 1408, SharedFFN: 1408,
		// NB: 1408 is not a multiple of 256, so llama.cpp falls back to a
		// 32-weight type for the down projection, whose rows are 1408 long.
		ExpertQuant:    ExpertQuant{"Q4_K", "Q4_K", "Q8_0"},
		DenseBytes:     []int64{100, 200, 300},
		DenseWeights:   []int64{1000, 2000, 3000},
		NonExpertBytes: 10_000, KVBytesPerToken: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Reference: gate/up 1408 × 2048 Q4_K = 1408 × 8 × 144; down 2048 × 1408 Q8_0 = 2048 × 44 × 34.
	if want := int64(2*1408*8*144 + 2048*44*34); m.Layers[0].ExpertBytes != want {
		t.Errorf("expert bytes %d, want %d", m.Layers[0].ExpertBytes, want)
	}
	if m.Layers[2].Block != 3 || m.Layers[2].DenseBytes != 300 || m.Layers[2].DenseFLOPsPerToken != 6000 || m.NonExpertBytes != 10_000 {
		t.Errorf("explicit values not kept: %+v", m.Layers[2])
	}
	// Reference: 1408 = 5.5 × 256, so Q4_K rows of 1408 fail; gate/up rows are 2048 long.
	_, err = BuildSpec(Shape{
		Name: "gguf", MoELayers: 1, Experts: 4, TopK: 1, Hidden: 2048, ExpertFFN: 1408,
		ExpertQuant: Uniform("Q4_K"), DenseBytes: []int64{1}, DenseWeights: []int64{1}, NonExpertBytes: 10,
	})
	errgolden.Check(t, "ffn_down_exps-row-length-1408", err)
}

// TestBuildSpecReportsEverything: one error lists every problem of the shape.
func TestBuildSpecReportsEverything(t *testing.T) {
	_, err := BuildSpec(Shape{
		Name:       "bad",
		MoEBlocks:  []int{0, 1},
		MoELayers:  3,
		Blocks:     4,
		Experts:    0,
		Hidden:     0,
		ExpertFFN:  -1,
		LayerQuant: map[int]ExpertQuant{7: Uniform("Q4_K")},
		DenseBytes: []int64{1},
		DenseType:  "Q7",
		Vocab:      10,
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		"model bad: moe_layers: is 3 but 2 MoE block indices are given",
		"layer_quant[7]: block 7 is not a MoE block",
		"dense_bytes: has 1 entries for 2 MoE layers",
		`dense_type: unknown quant type "Q7"`,
		`head_type: unknown quant type "Q7"`,
		"non_expert_bytes: must be given: 2 of 4 blocks have no experts",
		"hidden: must be >= 1 (got 0)",
		"expert_ffn: must be >= 1 (got -1)",
		"experts: must be >= 1 (got 0)",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\nlacks %q", err, w)
		}
	}
	// A built spec that is inconsistent fails ModelSpec.Validate.
	_, err = BuildSpec(Shape{Name: "k", MoELayers: 1, Experts: 4, TopK: 8, Hidden: 256, ExpertFFN: 256,
		ExpertQuant: Uniform("Q8_0"), DenseBytes: []int64{0}, DenseWeights: []int64{0}, NonExpertBytes: 1})
	errgolden.Check(t, "top_k-must-be-experts", err)
	_, err = BuildSpec(Shape{Name: "d", MoELayers: 1, Experts: 4, TopK: 1, Hidden: 256, ExpertFFN: 256,
		ExpertQuant: Uniform("Q8_0"), DenseType: "Q8_0"})
	errgolden.Check(t, "attention-heads-kv_heads-and", err)
}

func TestUseMoreBits(t *testing.T) {
	var got []int
	for i := range 40 {
		if useMoreBits(i, 40) {
			got = append(got, i)
		}
	}
	// Reference: DESIGN.md: 0–4, every third from 7 to 34, 35–39.
	want := "[0 1 2 3 4 7 10 13 16 19 22 25 28 31 34 35 36 37 38 39]"
	if s := fmt.Sprint(got); s != want {
		t.Errorf("useMoreBits(·, 40) = %s, want %s", s, want)
	}
}
