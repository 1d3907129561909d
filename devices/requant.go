package devices

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrExpertQuantUnchanged is wrapped by WithExpertQuant's error when every
// routed expert tensor of the model already has the requested type, so
// re-quantizing would change nothing.
var ErrExpertQuantUnchanged = errors.New("re-quantizing would change nothing")

// Expert tensor kinds as GGUF files name them (without "blk.N." and ".weight").
const (
	TensorGate   = "ffn_gate_exps"
	TensorUp     = "ffn_up_exps"
	TensorGateUp = "ffn_gate_up_exps" // gate and up fused into one tensor
	TensorDown   = "ffn_down_exps"
)

// WithExpertQuant returns a copy of m whose routed experts are stored in type
// q: the same weights, so the same routing and FLOPs, in q's block sizes.
// Everything else (dense weights, head, KV cache) is unchanged.
//
// Each expert tensor keeps its weights. Their count comes from the model's
// exact facts: a tensor of a known type holds bytes ÷ block bytes × block
// weights weights, which must equal its matrix shape from Hidden and
// ExpertFFN (gate and up: ExpertFFN rows of Hidden weights; down: Hidden rows
// of ExpertFFN); a layer that lists no tensors has gate, up and down of those
// shapes. ggml quantizes along rows, so a row must be a whole number of q's
// blocks. A model that lacks what this needs (Hidden or ExpertFFN, a tensor
// whose kind or type says nothing of its shape) is an error naming what is
// missing; so is q equal to every expert tensor's type already (wrapping
// ErrExpertQuantUnchanged).
//
// The copy's Variant says what changed ("q4_k_m, experts Q3_K") and its
// Source says how its sizes were derived.
func (m *ModelSpec) WithExpertQuant(q QuantType) (*ModelSpec, error) {
	if _, ok := quantBlocks[q]; !ok {
		return nil, fmt.Errorf("unknown quant type %q (valid: %s)", string(q), joinNames(QuantTypes()))
	}
	if m.Hidden < 1 || m.ExpertFFN < 1 {
		return nil, fmt.Errorf("model %s: re-quantizing its experts needs the shape of their matrices, hidden and expert_ffn, and its spec states hidden %d, expert_ffn %d; its source: %s",
			m.Name, m.Hidden, m.ExpertFFN, orNone(m.Source))
	}
	c := *m
	c.Layers = slices.Clone(m.Layers)
	var errs []error
	same := true
	for i := range c.Layers {
		l := &c.Layers[i]
		mats, err := m.expertMatrices(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("model %s: layer %d (block %d): %w", m.Name, i, l.Block, err))
			continue
		}
		l.Tensors, l.ExpertBytes = make([]ExpertTensor, 0, len(mats)), 0
		for _, mt := range mats {
			n, err := rowsBytes(q, mt.rows, mt.cols)
			if err != nil {
				errs = append(errs, fmt.Errorf("model %s: layer %d (block %d).%s in %s: %w", m.Name, i, l.Block, mt.name, q, err))
				continue
			}
			same = same && mt.from == q
			l.Tensors = append(l.Tensors, ExpertTensor{Name: mt.name, Type: q, Bytes: n})
			l.ExpertBytes += n
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if same {
		return nil, fmt.Errorf("model %s (%s): every expert tensor is %s already: %w", m.Name, orNone(m.Variant), q, ErrExpertQuantUnchanged)
	}
	c.Variant = "experts " + string(q)
	if m.Variant != "" {
		c.Variant = m.Variant + ", " + c.Variant
	}
	c.Source = fmt.Sprintf("%s; experts re-quantized to %s (the same weights in %s blocks of %d bytes per %d weights)",
		orNone(m.Source), q, q, quantBlocks[q].Bytes, quantBlocks[q].Weights)
	return &c, nil
}

// expertMatrix is one expert tensor's slice as a matrix: rows of cols
// weights (cols is the row length ggml quantizes along), and its type now
// ("" when the layer lists no tensors).
type expertMatrix struct {
	name       string
	rows, cols int64
	from       QuantType
}

// expertMatrices are the expert tensors of layer l with their shapes (see
// WithExpertQuant), each checked against its bytes.
func (m *ModelSpec) expertMatrices(l *LayerSpec) ([]expertMatrix, error) {
	h, f := int64(m.Hidden), int64(m.ExpertFFN)
	if len(l.Tensors) == 0 {
		return []expertMatrix{{TensorGate, f, h, ""}, {TensorUp, f, h, ""}, {TensorDown, h, f, ""}}, nil
	}
	shapes := map[string][2]int64{TensorGate: {f, h}, TensorUp: {f, h}, TensorGateUp: {2 * f, h}, TensorDown: {h, f}}
	var out []expertMatrix
	var errs []error
	for _, t := range l.Tensors {
		s, ok := shapes[t.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("expert tensor %q: its shape is unknown (known kinds: %s, %s, %s, %s)", t.Name, TensorGate, TensorUp, TensorGateUp, TensorDown))
			continue
		}
		b, ok := quantBlocks[t.Type]
		if !ok {
			errs = append(errs, fmt.Errorf("expert tensor %s: type %q is not one whose block size lessim knows (valid: %s), so its %d bytes do not tell its weights",
				t.Name, string(t.Type), joinNames(QuantTypes()), t.Bytes))
			continue
		}
		if t.Bytes%b.Bytes != 0 || t.Bytes/b.Bytes*b.Weights != s[0]*s[1] {
			errs = append(errs, fmt.Errorf("expert tensor %s: %d bytes of %s do not hold the %d × %d weights hidden %d and expert_ffn %d give",
				t.Name, t.Bytes, t.Type, s[0], s[1], h, f))
			continue
		}
		out = append(out, expertMatrix{t.Name, s[0], s[1], t.Type})
	}
	return out, errors.Join(errs...)
}

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}
