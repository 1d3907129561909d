package devices

// ModelSpec is the shape and storage of one MoE model as the simulator needs it:
// which layers route to experts, how many bytes one routed expert occupies on each
// layer (from the per-tensor quant types), and how much resident work each layer does.
//
// Units: bytes for sizes, floating-point operations (FLOPs, one multiply-add = 2) for work.
// Layers lists the MoE layers only, in execution order; trace layer i is Layers[i].
type ModelSpec struct {
	Name    string `json:"name" yaml:"name"`
	Arch    string `json:"arch" yaml:"arch"`       // llama.cpp architecture name, e.g. "qwen3moe"
	Variant string `json:"variant" yaml:"variant"` // quant variant, e.g. "q4_k_m", "mixed-q3k-experts"

	Blocks        int `json:"blocks" yaml:"blocks"`                 // transformer blocks (dense + MoE)
	Experts       int `json:"experts" yaml:"experts"`               // routed experts per MoE layer
	TopK          int `json:"top_k" yaml:"top_k"`                   // routed experts used per token
	SharedExperts int `json:"shared_experts" yaml:"shared_experts"` // always-on experts per MoE layer (resident)
	Hidden        int `json:"hidden" yaml:"hidden"`
	ExpertFFN     int `json:"expert_ffn" yaml:"expert_ffn"`
	SharedFFN     int `json:"shared_ffn,omitempty" yaml:"shared_ffn,omitempty"`
	Vocab         int `json:"vocab,omitempty" yaml:"vocab,omitempty"`

	Layers []LayerSpec `json:"layers" yaml:"layers"`

	// NonExpertBytes is every weight byte that stays resident in RAM: embeddings,
	// attention, norms, routers, shared experts and the output head.
	NonExpertBytes int64 `json:"non_expert_bytes" yaml:"non_expert_bytes"`
	// HeadBytes is the output projection read once per pass (after the last layer).
	HeadBytes int64 `json:"head_bytes" yaml:"head_bytes"`
	// HeadFLOPsPerToken is the output projection's work per token.
	HeadFLOPsPerToken int64 `json:"head_flops_per_token" yaml:"head_flops_per_token"`
	// HeadType (optional) is the output projection's ggml type; a profile's
	// per-format efficiency then applies to it.
	HeadType QuantType `json:"head_type,omitempty" yaml:"head_type,omitempty"`
	// KVBytesPerToken is the KV-cache memory one context token costs (the
	// attention layers'; recurrent layers keep a fixed LayerSpec.StateBytes).
	KVBytesPerToken int64 `json:"kv_bytes_per_token" yaml:"kv_bytes_per_token"`

	// Source says where the shape and sizes come from (a model card, a GGUF header, a trace).
	Source string `json:"source,omitempty" yaml:"source,omitempty"`
}

// LayerSpec is one MoE layer.
type LayerSpec struct {
	Block int `json:"block" yaml:"block"` // transformer block index in the model file

	// ExpertBytes is the storage of one routed expert on this layer (sum of Tensors).
	ExpertBytes int64 `json:"expert_bytes" yaml:"expert_bytes"`
	// Tensors are the per-expert slices of the expert tensors (gate, up, down) in
	// file order; with the stock GGUF layout each is a separate file region.
	Tensors []ExpertTensor `json:"tensors,omitempty" yaml:"tensors,omitempty"`

	// DenseBytes are the resident weights this layer reads once per pass:
	// attention, router, norms, shared expert.
	DenseBytes int64 `json:"dense_bytes" yaml:"dense_bytes"`
	// DenseTypes (optional) splits DenseBytes by ggml type (attention
	// matrices in Q8_0, norms and router in F32, ...), one entry per type;
	// bytes they do not cover are charged at the profile's memory.efficiency.
	DenseTypes []TypeBytes `json:"dense_types,omitempty" yaml:"dense_types,omitempty"`
	// DenseFLOPsPerToken is the dense part's work per token.
	DenseFLOPsPerToken int64 `json:"dense_flops_per_token" yaml:"dense_flops_per_token"`
	// ExpertFLOPsPerToken is one routed expert's work per token routed to it.
	ExpertFLOPsPerToken int64 `json:"expert_flops_per_token" yaml:"expert_flops_per_token"`

	// Mixer is the layer's token mixer, when the spec states it: MixerAttention
	// (a KV cache that grows with context) or MixerRecurrent (a fixed-size
	// state, e.g. Gated DeltaNet). Empty means not stated; the fields below are
	// then zero. They feed the simulator's optional context cost.
	Mixer string `json:"mixer,omitempty" yaml:"mixer,omitempty"`
	// KVBytesPerToken is an attention layer's K and V bytes per context position.
	KVBytesPerToken int64 `json:"kv_bytes_per_token,omitempty" yaml:"kv_bytes_per_token,omitempty"`
	// AttnFLOPsPerPosition is an attention layer's work per token per context
	// position it attends to (scores and weighted sum: 4 × heads × head_dim).
	AttnFLOPsPerPosition int64 `json:"attn_flops_per_position,omitempty" yaml:"attn_flops_per_position,omitempty"`
	// StateBytes is a recurrent layer's fixed state, read and written each pass.
	StateBytes int64 `json:"state_bytes,omitempty" yaml:"state_bytes,omitempty"`
	// StateFLOPsPerToken is a recurrent layer's state update work per token.
	StateFLOPsPerToken int64 `json:"state_flops_per_token,omitempty" yaml:"state_flops_per_token,omitempty"`
}

// Token mixers of a layer (LayerSpec.Mixer).
const (
	MixerAttention = "attention"
	MixerRecurrent = "recurrent"
)

// HasContextShape reports whether every layer states its mixer, which the
// simulator's context cost needs.
func (m *ModelSpec) HasContextShape() bool {
	for i := range m.Layers {
		if m.Layers[i].Mixer == "" {
			return false
		}
	}
	return len(m.Layers) > 0
}

// RecurrentStateBytes is the recurrent state of every layer: memory that does
// not grow with context (0 when no layer states one).
func (m *ModelSpec) RecurrentStateBytes() int64 {
	var t int64
	for i := range m.Layers {
		t += m.Layers[i].StateBytes
	}
	return t
}

// ExpertTensor is one expert's slice of one 3-D expert tensor.
type ExpertTensor struct {
	Name  string    `json:"name" yaml:"name"` // e.g. "ffn_gate_exps"
	Type  QuantType `json:"type" yaml:"type"`
	Bytes int64     `json:"bytes" yaml:"bytes"` // bytes of one expert's slice
}

// MoELayers returns the number of MoE layers.
func (m *ModelSpec) MoELayers() int { return len(m.Layers) }

// TotalExpertBytes is the storage of every routed expert of every layer.
func (m *ModelSpec) TotalExpertBytes() int64 {
	var t int64
	for _, l := range m.Layers {
		t += l.ExpertBytes * int64(m.Experts)
	}
	return t
}

// MaxExpertBytes is the largest single expert.
func (m *ModelSpec) MaxExpertBytes() int64 {
	var mx int64
	for _, l := range m.Layers {
		mx = max(mx, l.ExpertBytes)
	}
	return mx
}
