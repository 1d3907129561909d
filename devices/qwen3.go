package devices

import "fmt"

// Qwen3_30BA3B is the name of Qwen3-30B-A3B, the model of the reference
// router trace /work/shared/reference/traces/qwen.route.csv (recorded by
// BigMoeOnEdge, github.com/Helldez/BigMoeOnEdge, Apache-2.0).
const Qwen3_30BA3B = "qwen3-30b-a3b"

// qwen3_30BA3B lays out Qwen3-30B-A3B through BuildSpec's derived path.
//
// Reference: Qwen3-30B-A3B config.json: hidden_size 2048, num_hidden_layers
// 48, num_experts 128, num_experts_per_tok 8, moe_intermediate_size 768,
// num_attention_heads 32, num_key_value_heads 4, head_dim 128, vocab_size
// 151936, q/k RMS norms, no shared expert, untied output. Q4_K_M types follow
// llama.cpp (Q6_K ffn_down_exps and attn_v on use_more_bits layers, Q6_K
// output, Q4_K elsewhere); the resulting per-layer expert bytes (3,059,712 or
// 2,654,208) and dense bytes (11,953,152 or 11,682,816) match the reference
// trace's preamble exactly.
func qwen3_30BA3B(variant string) (*ModelSpec, error) {
	const layers = 48
	s := Shape{
		Name: Qwen3_30BA3B, Arch: "qwen3moe", Variant: variant,
		Source: "Qwen3-30B-A3B config.json; llama.cpp Q4_K_M type rules (devices/qwen3.go)",
		Blocks: layers, MoELayers: layers,
		Experts: 128, TopK: 8, Hidden: 2048, ExpertFFN: 768, Vocab: 151936,
		Heads: 32, KVHeads: 4, HeadDim: 128, QKNorm: true,
		DenseType: "Q4_K", EmbedType: "Q4_K", HeadType: "Q6_K",
	}
	// Every block is full attention (context cost only; sim.Config.ContextCost).
	for range layers {
		s.Mixers = append(s.Mixers, AttentionMixer(s.Heads, s.KVHeads, s.HeadDim))
	}
	switch variant {
	case "q4_k_m":
		s.ExpertQuant, s.LayerQuant = q4KMExperts(layers)
		s.AttnVType = map[int]QuantType{}
		for b := range layers {
			if useMoreBits(b, layers) {
				s.AttnVType[b] = "Q6_K"
			}
		}
	default:
		return nil, fmt.Errorf("model %s: unknown variant %q", Qwen3_30BA3B, variant)
	}
	return BuildSpec(s)
}
