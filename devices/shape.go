package devices

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ExpertQuant is the storage type of each of one expert's three tensors.
type ExpertQuant struct {
	Gate QuantType `json:"gate"`
	Up   QuantType `json:"up"`
	Down QuantType `json:"down"`
}

// Uniform is an ExpertQuant with one type for gate, up and down.
func Uniform(q QuantType) ExpertQuant { return ExpertQuant{q, q, q} }

// Shape is what BuildSpec needs to lay out a MoE model: its dimensions, the
// quant types of its expert tensors, and either explicit dense sizes (from a
// GGUF header) or the attention shape to derive them from (synthetic models).
type Shape struct {
	Name, Arch, Variant, Source string

	// Blocks is the number of transformer blocks; 0 means len(MoEBlocks), or
	// MoELayers when MoEBlocks is nil.
	Blocks int
	// MoEBlocks are the block indices of the MoE layers in execution order;
	// nil means blocks 0..MoELayers-1.
	MoEBlocks []int
	// MoELayers is the MoE layer count when MoEBlocks is nil.
	MoELayers int

	Experts, TopK, SharedExperts int
	Hidden, ExpertFFN, SharedFFN int
	Vocab                        int

	// ExpertQuant is the default type of every layer's expert tensors;
	// LayerQuant overrides it by block index.
	ExpertQuant ExpertQuant
	LayerQuant  map[int]ExpertQuant

	// DenseBytes and DenseWeights, when set, give each MoE layer's resident
	// bytes and weight count (attention, router, norms, shared experts), in
	// MoEBlocks order. When DenseBytes is nil they are derived from a standard
	// grouped-query attention block: q and o Hidden×(Heads·HeadDim), k and v
	// Hidden×(KVHeads·HeadDim) and the shared experts in DenseType (attn_v
	// in AttnVType where given), the router Hidden×Experts, two norms and
	// the optional q/k norms in F32. When only DenseWeights is nil it is
	// estimated as DenseBytes at DenseType's bits per weight.
	DenseBytes   []int64
	DenseWeights []int64

	Heads, KVHeads, HeadDim int
	// QKNorm adds per-head q and k norms (2 × HeadDim F32) to each derived block, as Qwen3 has.
	QKNorm bool
	// AttnVType overrides the type of attn_v by block index (Q4_K_M gives
	// some layers' attn_v Q6_K).
	AttnVType map[int]QuantType
	// DenseType is the type of the attention and shared-expert matrices;
	// EmbedType and HeadType (token embedding, output projection) default to it.
	DenseType, EmbedType, HeadType QuantType

	// NonExpertBytes is every resident byte; 0 derives it as embedding + output
	// head + output norm + the layers' dense bytes (only possible when every
	// block is a MoE block).
	NonExpertBytes int64
	// KVBytesPerToken; 0 derives it as an F16 cache of K and V on every block:
	// Blocks × 2 × KVHeads × HeadDim × 2 bytes.
	KVBytesPerToken int64

	// Mixers, when set, states each MoE layer's token mixer (in MoEBlocks
	// order) for the simulator's optional context cost; nil leaves it unstated.
	Mixers []MixerShape
}

// MixerShape is one layer's token mixer as BuildSpec copies it into the
// LayerSpec fields of the same names.
type MixerShape struct {
	Mixer                                 string
	KVBytesPerToken, AttnFLOPsPerPosition int64
	StateBytes, StateFLOPsPerToken        int64
}

// AttentionMixer is a grouped-query attention layer with an F16 KV cache:
// K and V of kvHeads × headDim per position at 2 bytes, and 4 × heads ×
// headDim FLOPs per token per position (q·k scores and the weighted sum of
// v, one multiply-add = 2 FLOPs each).
func AttentionMixer(heads, kvHeads, headDim int) MixerShape {
	return MixerShape{Mixer: MixerAttention,
		KVBytesPerToken:      2 * int64(kvHeads) * int64(headDim) * 2,
		AttnFLOPsPerPosition: 4 * int64(heads) * int64(headDim)}
}

// BuildSpec lays out the model described by s and validates the result. Every
// problem with s is reported at once.
func BuildSpec(s Shape) (*ModelSpec, error) {
	var ps problems
	r := s.resolve(&ps)
	if len(ps) > 0 {
		return nil, shapeError(s.Name, ps)
	}
	m := &ModelSpec{
		Name: s.Name, Arch: s.Arch, Variant: s.Variant, Source: s.Source,
		Blocks: r.nBlocks, Experts: s.Experts, TopK: s.TopK, SharedExperts: s.SharedExperts,
		Hidden: s.Hidden, ExpertFFN: s.ExpertFFN, SharedFFN: s.SharedFFN, Vocab: s.Vocab,
	}
	var denseSum int64
	for i, b := range r.blocks {
		l := s.layer(i, b, r, &ps)
		denseSum += l.DenseBytes
		m.Layers = append(m.Layers, l)
	}
	s.resident(m, r, denseSum, &ps)
	if len(ps) > 0 {
		return nil, shapeError(s.Name, ps)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// resolvedShape is what BuildSpec's checks settle before any layer is laid
// out: the MoE blocks, the block count, the dense types with their defaults
// applied, and whether dense bytes are derived.
type resolvedShape struct {
	blocks                         []int
	nBlocks                        int
	denseType, embedType, headType QuantType
	derive                         bool
}

// resolve checks s's counts, lists and types, adding each problem to ps, and
// returns what the layout needs.
func (s Shape) resolve(ps *problems) resolvedShape {
	r := resolvedShape{blocks: s.MoEBlocks, nBlocks: s.Blocks, derive: s.DenseBytes == nil}
	if r.blocks == nil {
		if s.MoELayers < 1 {
			ps.add("moe_layers", "must be >= 1 when no MoE block indices are given (got %d)", s.MoELayers)
		}
		for i := range max(s.MoELayers, 0) {
			r.blocks = append(r.blocks, i)
		}
	} else if s.MoELayers != 0 && s.MoELayers != len(r.blocks) {
		ps.add("moe_layers", "is %d but %d MoE block indices are given", s.MoELayers, len(r.blocks))
	}
	if r.nBlocks == 0 && len(r.blocks) > 0 {
		r.nBlocks = slices.Max(r.blocks) + 1
	}
	for _, b := range slices.Sorted(maps.Keys(s.LayerQuant)) {
		if !slices.Contains(r.blocks, b) {
			ps.add(fmt.Sprintf("layer_quant[%d]", b), "block %d is not a MoE block", b)
		}
	}
	s.checkLists(ps, len(r.blocks), r.derive)
	r.denseType, r.embedType, r.headType = s.DenseType, s.EmbedType, s.HeadType
	if r.embedType == "" {
		r.embedType = r.denseType
	}
	if r.headType == "" {
		r.headType = r.denseType
	}
	for _, t := range []struct {
		name   string
		q      QuantType
		needed bool
	}{
		{"dense_type", r.denseType, r.derive || s.DenseWeights == nil},
		{"embed_type", r.embedType, s.NonExpertBytes == 0 && s.Vocab > 0},
		{"head_type", r.headType, s.Vocab > 0},
	} {
		if _, ok := quantBlocks[t.q]; t.needed && !ok {
			ps.add(t.name, "unknown quant type %q (valid: %s)", string(t.q), joinNames(QuantTypes()))
		}
	}
	s.checkDims(ps, r)
	return r
}

// checkLists checks that the per-layer lists have one entry per MoE layer.
func (s Shape) checkLists(ps *problems, layers int, derive bool) {
	if !derive && len(s.DenseBytes) != layers {
		ps.add("dense_bytes", "has %d entries for %d MoE layers", len(s.DenseBytes), layers)
	}
	if s.Mixers != nil && len(s.Mixers) != layers {
		ps.add("mixers", "has %d entries for %d MoE layers", len(s.Mixers), layers)
	}
	if s.DenseWeights != nil && len(s.DenseWeights) != layers {
		ps.add("dense_weights", "has %d entries for %d MoE layers", len(s.DenseWeights), layers)
	}
}

// checkDims checks the dimensions the layout derives sizes from.
func (s Shape) checkDims(ps *problems, r resolvedShape) {
	if r.derive && (s.Heads < 1 || s.KVHeads < 1 || s.HeadDim < 1) {
		ps.add("attention", "heads, kv_heads and head_dim must be >= 1 to derive dense bytes (got %d, %d, %d), or give dense_bytes", s.Heads, s.KVHeads, s.HeadDim)
	}
	if s.NonExpertBytes == 0 && r.nBlocks > len(r.blocks) {
		ps.add("non_expert_bytes", "must be given: %d of %d blocks have no experts and their dense FFN size is unknown", r.nBlocks-len(r.blocks), r.nBlocks)
	}
	for _, d := range []struct {
		name string
		v    int
	}{{"hidden", s.Hidden}, {"expert_ffn", s.ExpertFFN}, {"experts", s.Experts}} {
		if d.v < 1 {
			ps.add(d.name, "must be >= 1 (got %d)", d.v)
		}
	}
}

// layer lays out MoE layer i (block b): its expert tensors in their quant
// type, its dense bytes and FLOPs, and its mixer when stated.
func (s Shape) layer(i, b int, r resolvedShape, ps *problems) LayerSpec {
	h, f := int64(s.Hidden), int64(s.ExpertFFN)
	q := s.ExpertQuant
	if o, ok := s.LayerQuant[b]; ok {
		q = o
	}
	l := LayerSpec{Block: b, ExpertFLOPsPerToken: 2 * 3 * h * f}
	for _, t := range []struct {
		name       string
		q          QuantType
		rows, cols int64 // cols is the row length ggml quantizes along
	}{{"ffn_gate_exps", q.Gate, f, h}, {"ffn_up_exps", q.Up, f, h}, {"ffn_down_exps", q.Down, h, f}} {
		n, err := rowsBytes(t.q, t.rows, t.cols)
		if err != nil {
			ps.add(fmt.Sprintf("layers[%d] (block %d).%s", i, b, t.name), "%v", err)
			continue
		}
		l.Tensors = append(l.Tensors, ExpertTensor{Name: t.name, Type: t.q, Bytes: n})
		l.ExpertBytes += n
	}
	var weights int64
	if r.derive {
		var err error
		l.DenseBytes, weights, err = s.gqaDense(b, r.denseType)
		if err != nil {
			ps.add(fmt.Sprintf("layers[%d] (block %d).dense", i, b), "%v", err)
		}
	} else {
		l.DenseBytes = s.DenseBytes[i]
		weights = int64(float64(l.DenseBytes) * 8 / r.denseType.BitsPerWeight())
	}
	if s.DenseWeights != nil {
		weights = s.DenseWeights[i]
	}
	l.DenseFLOPsPerToken = 2 * weights
	if s.Mixers != nil {
		x := s.Mixers[i]
		l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition = x.Mixer, x.KVBytesPerToken, x.AttnFLOPsPerPosition
		l.StateBytes, l.StateFLOPsPerToken = x.StateBytes, x.StateFLOPsPerToken
	}
	return l
}

// resident sets m's output head, its resident (non-expert) bytes and its KV
// bytes per token: each as stated, or derived (denseSum is the layers' dense
// bytes).
func (s Shape) resident(m *ModelSpec, r resolvedShape, denseSum int64, ps *problems) {
	h, vocab := int64(s.Hidden), int64(s.Vocab)
	if vocab > 0 {
		var err error
		if m.HeadBytes, err = rowsBytes(r.headType, vocab, h); err != nil {
			ps.add("head", "%v", err)
		}
		m.HeadFLOPsPerToken = 2 * vocab * h
	}
	m.NonExpertBytes = s.NonExpertBytes
	if m.NonExpertBytes == 0 {
		var embed int64
		if vocab > 0 {
			var err error
			if embed, err = rowsBytes(r.embedType, vocab, h); err != nil {
				ps.add("embedding", "%v", err)
			}
		}
		m.NonExpertBytes = embed + m.HeadBytes + 4*h + denseSum // 4*h: F32 output norm
	}
	m.KVBytesPerToken = s.KVBytesPerToken
	if m.KVBytesPerToken == 0 {
		m.KVBytesPerToken = int64(r.nBlocks) * 2 * int64(s.KVHeads) * int64(s.HeadDim) * 2
	}
}

// gqaDense derives one block's dense bytes and weights from a standard
// grouped-query attention layout (see Shape.DenseBytes).
func (s Shape) gqaDense(block int, dt QuantType) (bytes, weights int64, err error) {
	h := int64(s.Hidden)
	qDim, kvDim := int64(s.Heads*s.HeadDim), int64(s.KVHeads*s.HeadDim)
	shared := int64(s.SharedExperts) * int64(s.SharedFFN)
	vt := dt
	if t, ok := s.AttnVType[block]; ok {
		vt = t
	}
	mats := []struct {
		q          QuantType
		rows, cols int64
	}{
		{dt, qDim, h}, {dt, kvDim, h}, {vt, kvDim, h}, {dt, h, qDim}, // q, k, v, o
		{dt, 2 * shared, h}, {dt, h, shared}, // shared gate+up, down
	}
	var errs []error
	for _, mt := range mats {
		if mt.rows == 0 {
			continue
		}
		n, e := rowsBytes(mt.q, mt.rows, mt.cols)
		errs = append(errs, e)
		bytes += n
		weights += mt.rows * mt.cols
	}
	f32 := h*int64(s.Experts) + 2*h // router, attention and FFN norms
	if s.QKNorm {
		f32 += 2 * int64(s.HeadDim)
	}
	bytes += 4 * f32
	weights += f32
	return bytes, weights, errors.Join(errs...)
}

// rowsBytes is the storage of a rows×cols tensor of type q; ggml quantizes
// each row of cols weights separately, so cols must be a whole number of blocks.
func rowsBytes(q QuantType, rows, cols int64) (int64, error) {
	b, ok := quantBlocks[q]
	if !ok {
		return 0, fmt.Errorf("unknown quant type %q (valid: %s)", string(q), joinNames(QuantTypes()))
	}
	if cols%b.Weights != 0 {
		return 0, fmt.Errorf("row length %d is not a whole number of %s blocks of %d", cols, q, b.Weights)
	}
	return rows * (cols / b.Weights) * b.Bytes, nil
}

func shapeError(name string, ps problems) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = fmt.Errorf("model %s: %s", name, p)
	}
	return errors.Join(errs...)
}
