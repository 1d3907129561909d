package gguf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// SynthOptions describes a synthetic MoE model for SynthMoE. The zero value of a
// field means "use the default" (see DefaultSynthOptions) except RouterCorrelation
// and Seed, which are used as given.
type SynthOptions struct {
	Arch      string // llama.cpp architecture: "qwen3moe", "olmoe" (needs heads×head-dim = hidden, heads-kv = heads) or "gpt-oss"
	Layers    int    // transformer blocks, every one MoE
	Experts   int    // routed experts per layer
	TopK      int    // experts used per token
	Hidden    int    // embedding length (n_embd)
	ExpertFFN int    // expert feed-forward length (n_ff_exp)
	Heads     int    // attention heads
	HeadsKV   int    // key/value heads (grouped-query attention)
	HeadDim   int    // key and value length per head (also the rotary dimension)
	Context   int    // training context length written to the header
	Vocab     int    // vocabulary size: 3 special + 256 byte tokens + pieces
	Quant     string // "f16", "q8_0", "q4_k", "q3_k" or "mxfp4": type of the matrices (norms and routers stay F32)
	// ExpertQuant is the routed experts' type, one of Quant's; empty means Quant.
	ExpertQuant string

	// Quantize encodes the K-quants and MXFP4 (nil: only f16 and q8_0 can be
	// written). lessim's llama.cpp build passes ggml's own quantizer
	// (runtime/llama.Quantize), so the bytes are exactly what ggml writes.
	Quantize Quantizer

	// RouterCorrelation (0..1) controls how much adjacent layers' routing agrees, and
	// so how well lookahead (layer l+1's router applied to layer l's router input, the
	// ffn_norm output) predicts layer l+1's experts. It sets two things (see scales):
	//   - the residual update size: each MoE sublayer adds a vector of RMS
	//     UpdateRMS(ρ) = sqrt((1/c² − 1)/2), c = 0.5 + 0.495·ρ, to a residual stream that
	//     starts at RMS 1 (attention adds about a third of that times AttentionScale,
	//     since it averages value vectors over the context). Smaller updates keep
	//     consecutive router inputs closer; the stream grows with depth, so later layers
	//     are more alike than c says;
	//   - router sharing: W_l = ρ·W_{l−1} + sqrt(1−ρ²)·N_l, so the same expert index
	//     tends to win on adjacent layers as ρ grows ("same-index" below).
	// Lookahead recall rises with ρ. Measured with the reference forward pass in
	// calibrate_test.go (48 random tokens decoded with a KV cache; q8_0; seeds 7 and 1),
	// and for the 8-layer shape also by llama.cpp itself (runtime/record on its built-in
	// prompts, 32 decode tokens each; "ll." columns):
	//
	//	shape                            ρ    attn. scale  sharing  recall  ll.   same-index  reuse  ll.
	//	8 layers × 64, top-8, h 512      0    1            0        0.64          0.12        0.16
	//	                                 0.5  1            0        0.70          0.33        0.14
	//	                                 0.7  1            0        0.75    0.75  0.46        0.15   0.14
	//	                                 0.9  1            0        0.83    0.82  0.67        0.14   0.12
	//	                                 1    1            0        0.94          0.94        0.12
	//	                                 0.7  4            0        0.64    0.63  0.44        0.43   0.41
	//	                                 0.9  4            0        0.72          0.61        0.25
	//	                                 0.7  4            0.97     0.76    0.78  0.45        0.45   0.56
	//	                                 0.9  4            0.97     0.80    0.80  0.63        0.32   0.42
	//	default: 16 × 64, top-8, h 1024  0    1            0        0.72          0.13        0.17
	//	                                 0.7  1            0        0.79          0.47        0.15
	//	                                 0.9  1            0        0.84          0.67        0.15
	//	                                 1    1            0        0.93          0.93        0.16
	//	                                 0.7  2            0.97     0.85          0.46        0.54
	//	                                 0.7  4            0.97     0.86          0.46        0.72
	//	                                 0.9  2            0.97     0.87          0.68        0.42
	//	                                 0.9  4            0.97     0.87          0.66        0.61
	//
	// (reuse: the share of a token's experts the previous token used on the same layer.)
	// Chance is TopK/Experts (0.125 here). The attention knobs act more strongly on
	// deeper models (shared attention accumulates over more layers). Trained models:
	// stale-gate recall 0.81–0.89, about 45% of a selection repeats at the next token
	// (DESIGN.md); on the default shape ρ 0.9, AttentionScale 2, AttentionSharing 0.97
	// comes closest to both (TrainedLikeSynthOptions).
	RouterCorrelation float64

	// AttentionScale multiplies the attention sublayer's output (0 means 1). Larger
	// values mix more of the preceding context into each token's residual stream, so
	// consecutive tokens pick more of the same experts (temporal reuse, which LRU-like
	// caches feed on), at the cost of lookahead recall, because attention then moves
	// the residual more between layers. See the table on RouterCorrelation.
	AttentionScale float64

	// AttentionSharing (0..1) makes the attention matrices (q, k, v, output) of adjacent
	// layers alike, as the routers are: W_l = s·W_{l−1} + sqrt(1−s²)·N_l. Then each layer's
	// attention adds much the same context vector, so a large AttentionScale raises
	// next-token reuse without moving the router input between layers: the recall lost to
	// AttentionScale comes back (table on RouterCorrelation). 0, the default, gives
	// independent layers.
	AttentionSharing float64

	Seed uint64 // seed of every random weight (PCG, math/rand/v2)
}

// DefaultSynthOptions is the 16-layer, 64-expert, top-8, hidden-1024 qwen3moe model of
// DESIGN.md (about 1.7 GB in Q8_0), with RouterCorrelation 0.7 and seed 1.
func DefaultSynthOptions() SynthOptions {
	return SynthOptions{
		Arch: "qwen3moe", Layers: 16, Experts: 64, TopK: 8, Hidden: 1024, ExpertFFN: 512,
		Heads: 16, HeadsKV: 4, HeadDim: 64, Context: 4096, Vocab: 1024, Quant: "q8_0",
		RouterCorrelation: 0.7, AttentionScale: 1, Seed: 1,
	}
}

// TrainedLikeSynthOptions is DefaultSynthOptions with the routing statistics closest to
// trained models in the table on SynthOptions.RouterCorrelation: RouterCorrelation 0.9,
// AttentionScale 2 and AttentionSharing 0.97 (measured on this shape: lookahead recall
// 0.87, 42% of a token's experts reused by the next token). Other shapes need their
// own settings: the attention knobs act more strongly on deeper models.
func TrainedLikeSynthOptions() SynthOptions {
	o := DefaultSynthOptions()
	o.RouterCorrelation, o.AttentionScale, o.AttentionSharing = 0.9, 2, 0.97
	return o
}

// ApplyPreset sets the routing knobs of the named preset ("default": none;
// "trained-like": TrainedLikeSynthOptions') on o, except those given says
// were set explicitly (by their flag names: router-correlation,
// attention-scale, attention-sharing).
func (o *SynthOptions) ApplyPreset(name string, given func(flag string) bool) error {
	switch name {
	case "default":
		return nil
	case "trained-like":
		t := TrainedLikeSynthOptions()
		for flag, f := range map[string][2]*float64{
			"router-correlation": {&o.RouterCorrelation, &t.RouterCorrelation},
			"attention-scale":    {&o.AttentionScale, &t.AttentionScale},
			"attention-sharing":  {&o.AttentionSharing, &t.AttentionSharing},
		} {
			if !given(flag) {
				*f[0] = *f[1]
			}
		}
		return nil
	}
	return fmt.Errorf("unknown preset %q (valid: default, trained-like)", name)
}

// EnsureDefaults fills zero fields from DefaultSynthOptions (not RouterCorrelation or Seed).
func (o *SynthOptions) EnsureDefaults() {
	d := DefaultSynthOptions()
	setStr := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setInt := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setStr(&o.Arch, d.Arch)
	setStr(&o.Quant, d.Quant)
	setInt(&o.Layers, d.Layers)
	setInt(&o.Experts, d.Experts)
	setInt(&o.TopK, d.TopK)
	setInt(&o.Hidden, d.Hidden)
	setInt(&o.ExpertFFN, d.ExpertFFN)
	setInt(&o.Heads, d.Heads)
	setInt(&o.HeadsKV, d.HeadsKV)
	setInt(&o.HeadDim, d.HeadDim)
	setInt(&o.Context, d.Context)
	setInt(&o.Vocab, d.Vocab)
	if o.AttentionScale == 0 {
		o.AttentionScale = d.AttentionScale
	}
}

// synthArchs are the architectures SynthMoE can write. qwen3moe and olmoe share
// the tensor set (llama-model.cpp); they differ in that olmoe's q/k norms span the
// whole embedding (so heads×head-dim must equal hidden and heads-kv equal heads),
// its expert FFN length is feed_forward_length, and it does not renormalize the
// top-k weights (so its MoE updates are smaller than UpdateRMS; the calibration
// table is for qwen3moe). gpt-oss (llama.cpp's openai-moe) has biases on the
// attention, the router (blk.N.ffn_gate_inp.bias) and the experts, attention
// sinks, sliding-window attention on every other block, a post-attention norm in
// place of ffn_norm and no q/k norms; its router input is that norm's output.
var synthArchs = []string{"gpt-oss", "olmoe", "qwen3moe"}

// synthQuants maps SynthOptions.Quant to the matrix type.
var synthQuants = map[string]TypeID{"f16": TypeF16, "q8_0": TypeQ8_0, "q4_k": TypeQ4_K, "q3_k": TypeQ3_K, "mxfp4": TypeMXFP4}

// synthQuantNames lists synthQuants' keys for messages.
const synthQuantNames = "f16, q8_0, q4_k, q3_k, mxfp4"

// expertQuant is the experts' type name: ExpertQuant, or Quant.
func (o SynthOptions) expertQuant() string {
	if o.ExpertQuant == "" {
		return strings.ToLower(o.Quant)
	}
	return strings.ToLower(o.ExpertQuant)
}

// Upper bounds of SynthOptions: far above any real model (the largest MoE
// models have under 100 layers, under 200 heads of 128 to 256, contexts of at
// most a few million tokens), low enough that sizes cannot overflow and a typo
// is caught before a multi-terabyte file is started.
const (
	maxLayers     = 4096
	maxHeads      = 1 << 12
	maxContext    = 1 << 24
	maxSynthBytes = float64(1 << 40) // 1 TiB
)

// approxBytes estimates the file size from the matrices (expert, attention,
// router, embedding and output), in float64 so it cannot overflow.
func (o SynthOptions) approxBytes(qt, et TypeID) float64 {
	per := func(t TypeID) float64 { g := ggmlTypes[t]; return float64(g.BlockBytes) / float64(g.BlockWeights) }
	h, ffn, L, E := float64(o.Hidden), float64(o.ExpertFFN), float64(o.Layers), float64(o.Experts)
	attn := 2*h*float64(o.Heads*o.HeadDim) + 2*h*float64(o.HeadsKV*o.HeadDim)
	return L*E*3*h*ffn*per(et) + (L*attn+2*float64(o.Vocab)*h)*per(qt) + L*E*h*4 // routers stay F32
}

// minVocab is the special and byte tokens plus the "▁" piece.
const minVocab = 3 + 256 + 1

// Validate reports every problem with the options at once.
func (o SynthOptions) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !slices.Contains(synthArchs, o.Arch) {
		bad("arch %q is not supported (valid: %s)", o.Arch, strings.Join(synthArchs, ", "))
	}
	if o.Arch == "olmoe" {
		if o.Heads*o.HeadDim != o.Hidden {
			bad("olmoe needs heads×head-dim = hidden, got %d×%d = %d, hidden %d", o.Heads, o.HeadDim, o.Heads*o.HeadDim, o.Hidden)
		}
		if o.HeadsKV != o.Heads {
			bad("olmoe needs heads-kv = heads (its k norm spans the embedding), got %d and %d", o.HeadsKV, o.Heads)
		}
	}
	qt, okQuant := synthQuants[strings.ToLower(o.Quant)]
	if !okQuant {
		bad("quant %q is not supported (valid: %s)", o.Quant, synthQuantNames)
	}
	et, okExpert := qt, okQuant
	if o.ExpertQuant != "" {
		if et, okExpert = synthQuants[strings.ToLower(o.ExpertQuant)]; !okExpert {
			bad("expert quant %q is not supported (valid: %s)", o.ExpertQuant, synthQuantNames)
		}
	}
	okQuant = okQuant && okExpert
	for _, t := range []TypeID{qt, et} {
		if okQuant && t != TypeF16 && t != TypeQ8_0 && o.Quantize == nil {
			bad("%s needs ggml's quantizer, which only lessim's llama.cpp build has (make build)", strings.ToLower(string(t.Name())))
			break
		}
	}
	positive := []struct {
		name string
		v    int
	}{{"layers", o.Layers}, {"experts", o.Experts}, {"top-k", o.TopK}, {"hidden", o.Hidden},
		{"expert-ffn", o.ExpertFFN}, {"heads", o.Heads}, {"heads-kv", o.HeadsKV}, {"head-dim", o.HeadDim},
		{"context", o.Context}, {"vocab", o.Vocab}}
	for _, p := range positive {
		if p.v <= 0 {
			bad("%s must be positive, got %d", p.name, p.v)
		}
	}
	if o.TopK > o.Experts {
		bad("top-k %d exceeds experts %d", o.TopK, o.Experts)
	}
	if o.Experts > 1<<16 {
		bad("experts %d is too many (at most 65536)", o.Experts)
	}
	if o.HeadsKV > 0 && o.Heads%o.HeadsKV != 0 {
		bad("heads %d is not a multiple of heads-kv %d", o.Heads, o.HeadsKV)
	}
	if o.HeadDim%2 != 0 {
		bad("head-dim %d must be even (rotary pairs)", o.HeadDim)
	}
	if o.Vocab > 0 && o.Vocab < minVocab {
		bad("vocab %d is below the minimum %d (3 special + 256 byte tokens + the space piece)", o.Vocab, minVocab)
	}
	if math.IsNaN(o.RouterCorrelation) || o.RouterCorrelation < 0 || o.RouterCorrelation > 1 {
		bad("router-correlation %v must be within 0..1", o.RouterCorrelation)
	}
	if math.IsNaN(o.AttentionScale) || o.AttentionScale <= 0 || o.AttentionScale > 100 {
		bad("attention-scale %v must be within (0, 100]", o.AttentionScale)
	}
	if math.IsNaN(o.AttentionSharing) || o.AttentionSharing < 0 || o.AttentionSharing > 1 {
		bad("attention-sharing %v must be within 0..1", o.AttentionSharing)
	}
	if okQuant {
		// Every matrix row is quantized whole: rows are hidden (q, k, v,
		// gate, up, embedding, head), heads×head-dim (attention output) or
		// expert-ffn (down) long.
		for _, p := range []struct {
			name string
			v    int
			ts   []TypeID
		}{{"hidden", o.Hidden, []TypeID{qt, et}}, {"expert-ffn", o.ExpertFFN, []TypeID{et}}, {"heads×head-dim", o.Heads * o.HeadDim, []TypeID{qt}}} {
			for _, t := range p.ts {
				if n := ggmlTypes[t].BlockWeights; p.v > 0 && int64(p.v)%n != 0 {
					bad("%s %d is not a multiple of %d (the %s block size)", p.name, p.v, n, strings.ToLower(string(t.Name())))
					break
				}
			}
		}
	}
	// Each size alone is capped first, so products below cannot overflow.
	const maxDim = 1 << 20
	for _, p := range []struct {
		name   string
		v, max int
	}{{"hidden", o.Hidden, maxDim}, {"expert-ffn", o.ExpertFFN, maxDim}, {"heads", o.Heads, maxHeads},
		{"heads-kv", o.HeadsKV, maxHeads}, {"head-dim", o.HeadDim, maxHeads}, {"vocab", o.Vocab, maxDim},
		{"layers", o.Layers, maxLayers}, {"context", o.Context, maxContext}} {
		if p.v > p.max {
			bad("%s %d is too large (at most %d)", p.name, p.v, p.max)
		}
	}
	if o.Heads <= maxHeads && o.HeadDim <= maxHeads && o.Heads*o.HeadDim > maxDim {
		bad("heads×head-dim %d is too large (at most %d)", o.Heads*o.HeadDim, maxDim)
	}
	if okQuant && len(errs) == 0 {
		if b := o.approxBytes(qt, et); b > maxSynthBytes {
			bad("the model would be about %.0f GiB (routed experts alone: layers × experts × 3 × hidden × expert-ffn weights); at most %d GiB", b/(1<<30), int64(maxSynthBytes)>>30)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid synthetic model options: %w", errors.Join(errs...))
	}
	return nil
}

// UpdateRMS is the RMS of each sublayer's contribution to the residual stream that
// SynthMoE aims for at router correlation rho (the residual stream starts at RMS 1).
func UpdateRMS(rho float64) float64 {
	c := targetCosine(rho)
	return math.Sqrt((1/(c*c) - 1) / 2)
}

// targetCosine is the intended cosine between consecutive layers' router inputs.
func targetCosine(rho float64) float64 { return 0.5 + float64(0.495*rho) } // NB: no FMA
