package devices

import "fmt"

// MiniCPMV47 is the name of the reference model: MiniCPM-V 4.7 35B-A3B, whose
// text backbone is Qwen3.5-MoE (llama.cpp architecture qwen3_5_moe).
const MiniCPMV47 = "minicpm-v-4.7-35b-a3b"

// Shape of the text backbone.
// Reference: DESIGN.md "Reference model" (40 layers, every 4th full attention,
// the others Gated DeltaNet; 256 routed experts, top-8, 1 shared expert;
// hidden 2048, expert FFN 512, shared FFN 512; vocab 248,320), matching the
// Qwen3.5-35B-A3B config.json (hidden_size 2048, num_hidden_layers 40,
// num_experts 256, num_experts_per_tok 8, moe_intermediate_size 512,
// shared_expert_intermediate_size 512, full_attention_interval 4).
const (
	mcLayers    = 40
	mcExperts   = 256
	mcTopK      = 8
	mcHidden    = 2048
	mcExpertFFN = 512
	mcSharedFFN = 512
	mcVocab     = 248320
	mcFullEvery = 4 // blocks 3, 7, ..., 39 are full attention
)

// Attention dimensions.
// Reference: Qwen3.5-35B-A3B config.json: full (gated) attention 16 query
// heads, 2 KV heads, head_dim 256, with an output gate as wide as the queries
// (q_proj emits queries and gate); Gated DeltaNet 16 key heads and 32 value
// heads of dim 128, conv kernel 4.
const (
	mcHeads      = 16
	mcKVHeads    = 2
	mcHeadDim    = 256
	mcLinKHeads  = 16
	mcLinVHeads  = 32
	mcLinHeadDim = 128
	mcConvKernel = 4
)

// miniCPMV47 lays out one quant variant.
//
// Q4_K_M types (llama.cpp llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M):
// default Q4_K; ffn_down (experts and shared expert) Q6_K on use_more_bits
// layers; attn_v Q6_K on use_more_bits of the 10 attn_v tensors; attn_qkv
// (the Gated DeltaNet input projection) Q5_K; output.weight Q6_K; token_embd
// Q4_K; norms, router (ffn_gate_inp), conv and SSM scalars F32.
// "mixed-q3k-experts" changes only the routed expert tensors to Q3_K
// (DESIGN.md "Mixed precision").
func miniCPMV47(variant string) (*ModelSpec, error) {
	s := Shape{
		Name: MiniCPMV47, Arch: "qwen3_5_moe", Variant: variant,
		Source: "DESIGN.md Reference model; Qwen3.5-35B-A3B config.json; llama.cpp Q4_K_M type rules (devices/minicpm.go)",
		Blocks: mcLayers, MoELayers: mcLayers,
		Experts: mcExperts, TopK: mcTopK, SharedExperts: 1,
		Hidden: mcHidden, ExpertFFN: mcExpertFFN, SharedFFN: mcSharedFFN, Vocab: mcVocab,
		DenseType: "Q4_K", EmbedType: "Q4_K", HeadType: "Q6_K",
		// Reference: 10 full-attention layers × (K and V) × 2 KV heads × 256
		// head_dim × 2 bytes (F16, llama.cpp's default cache type). The 30 Gated
		// DeltaNet layers keep a fixed recurrent state instead (32 × 128 × 128
		// F32 plus a conv window per layer, about 64 MiB per sequence), which
		// does not grow with context and is not counted here (it is counted
		// with the context cost on: LayerSpec.StateBytes, sim.Config.ContextCost).
		KVBytesPerToken: mcLayers / mcFullEvery * 2 * mcKVHeads * mcHeadDim * 2,
	}
	switch variant {
	case "q4_k_m":
		s.ExpertQuant, s.LayerQuant = q4KMExperts(mcLayers)
	case "mixed-q3k-experts":
		s.ExpertQuant = Uniform("Q3_K")
	default:
		return nil, fmt.Errorf("model %s: unknown variant %q", MiniCPMV47, variant)
	}
	attnV := 0 // index among the attn_v tensors (full-attention blocks only)
	for b := range mcLayers {
		s.Mixers = append(s.Mixers, mcMixer(b))
		d := mcDense(b, &attnV)
		s.DenseBytes = append(s.DenseBytes, d.bytes)
		s.DenseWeights = append(s.DenseWeights, d.weights)
	}
	return BuildSpec(s)
}

// Gated DeltaNet recurrent state and work per layer (context cost only).
// Reference: Qwen3.5-35B-A3B config.json (linear_num_value_heads 32,
// linear_key_head_dim and linear_value_head_dim 128, linear_conv_kernel_dim
// 4); llama.cpp keeps recurrent states in F32: per layer one d_k × d_v
// matrix per value head and a convolution window of (kernel − 1) positions
// of the qkv channels (2 × 2048 + 4096).
//
// Work per token, per value head: decay the state (d_k·d_v), read it with k
// (2·d_k·d_v), the rank-1 delta update (2·d_k·d_v) and the output read with q
// (2·d_k·d_v), about 7·d_k·d_v FLOPs; plus the causal convolution, 2 × kernel
// × channels. An estimate from the Gated DeltaNet recurrence (Yang et al.,
// "Gated Delta Networks", 2024), not a measurement.
const (
	mcConvChannels = 2*mcLinKHeads*mcLinHeadDim + mcLinVHeads*mcLinHeadDim
	mcStateBytes   = mcLinVHeads*mcLinHeadDim*mcLinHeadDim*4 + (mcConvKernel-1)*mcConvChannels*4
	mcStateFLOPs   = 7*mcLinVHeads*mcLinHeadDim*mcLinHeadDim + 2*mcConvKernel*mcConvChannels
)

// mcMixer is block b's token mixer: every 4th block full attention, the
// others Gated DeltaNet.
func mcMixer(b int) MixerShape {
	if (b+1)%mcFullEvery == 0 {
		return AttentionMixer(mcHeads, mcKVHeads, mcHeadDim)
	}
	return MixerShape{Mixer: MixerRecurrent, StateBytes: mcStateBytes, StateFLOPsPerToken: mcStateFLOPs}
}

// denseSum accumulates one block's resident tensors.
type denseSum struct{ bytes, weights int64 }

func (d *denseSum) add(q QuantType, rows, cols int64) {
	n, err := rowsBytes(q, rows, cols)
	if err != nil { // NB: the dimensions above are whole blocks; a panic here is a bug in this file
		panic(err)
	}
	d.bytes += n
	d.weights += rows * cols
}

// mcDense is block b's resident weights in Q4_K_M (shared by both variants).
func mcDense(b int, attnV *int) denseSum {
	var d denseSum
	const h = mcHidden
	down := QuantType("Q4_K")
	if useMoreBits(b, mcLayers) {
		down = "Q6_K"
	}
	// Every block: attention norm, post-attention norm, router 2048×256 F32,
	// shared-expert gate 2048 F32, shared expert gate/up/down 3×2048×512.
	d.add("F32", 2, h)
	d.add("F32", mcExperts, h)
	d.add("F32", 1, h)
	d.add("Q4_K", 2*mcSharedFFN, h)
	d.add(down, h, mcSharedFFN)
	if (b+1)%mcFullEvery == 0 {
		// Gated full attention: q (+gate) 2048→8192, k and v 2048→512,
		// o 4096→2048, q/k norms of head_dim.
		qDim, kvDim := int64(mcHeads*mcHeadDim), int64(mcKVHeads*mcHeadDim)
		v := QuantType("Q4_K")
		if useMoreBits(*attnV, mcLayers/mcFullEvery) {
			v = "Q6_K"
		}
		*attnV++
		d.add("Q4_K", 2*qDim, h)
		d.add("Q4_K", kvDim, h)
		d.add(v, kvDim, h)
		d.add("Q4_K", h, qDim)
		d.add("F32", 2, mcHeadDim)
		return d
	}
	// Gated DeltaNet: qkv 2048→(2048+2048+4096) in Q5_K, output gate z
	// 2048→4096, beta/alpha 2048→64, out 4096→2048; conv 4×8192, dt, A and
	// the gated norm in F32.
	kDim, vDim := int64(mcLinKHeads*mcLinHeadDim), int64(mcLinVHeads*mcLinHeadDim)
	d.add("Q5_K", 2*kDim+vDim, h)
	d.add("Q4_K", vDim, h)
	d.add("Q4_K", 2*mcLinVHeads, h)
	d.add("Q4_K", h, vDim)
	d.add("F32", mcConvKernel, 2*kDim+vDim)
	d.add("F32", 2, mcLinVHeads)
	d.add("F32", 1, mcLinHeadDim)
	return d
}
