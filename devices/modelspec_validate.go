package devices

import (
	"fmt"
	"strings"
)

// joinNames joins names for "valid: ..." lists.
func joinNames(names []string) string { return strings.Join(names, ", ") }

// Validate checks the spec's internal consistency and that every count,
// size and FLOP figure lies within its plausible range (the "model." rows of
// Bounds), and returns one error listing every problem, each as
// "model NAME: field: reason".
func (m *ModelSpec) Validate() error {
	ps := m.check(false)
	if len(ps) == 0 {
		return nil
	}
	return shapeError(m.Name, ps)
}

// RecordedProblems checks a spec as a trace file records it and returns every
// problem as "field: reason" (field as in the spec's JSON: "top_k",
// "layers[3].expert_bytes"), or nil. It is Validate except for what a trace's
// source may not know: hidden and expert_ffn may be 0 (an imported route
// trace records bytes, not the matrices' shape) and an expert tensor may have
// no quant type; whatever the spec states is checked as Validate checks it.
func (m *ModelSpec) RecordedProblems() []string { return m.check(true) }

// check lists every problem of the spec; recorded relaxes what a recorded
// spec may leave unknown (RecordedProblems).
func (m *ModelSpec) check(recorded bool) problems {
	var ps problems
	if strings.TrimSpace(m.Name) == "" {
		ps.add("name", "missing")
	}
	for _, d := range []struct {
		name string
		v    int
	}{
		{"experts", m.Experts}, {"top_k", m.TopK}, {"hidden", m.Hidden}, {"expert_ffn", m.ExpertFFN}, {"blocks", m.Blocks},
		{"shared_experts", m.SharedExperts}, {"shared_ffn", m.SharedFFN}, {"vocab", m.Vocab}, {"layers", len(m.Layers)},
	} {
		if recorded && d.v == 0 && (d.name == "hidden" || d.name == "expert_ffn") {
			continue // not recorded
		}
		ps.checkBound(d.name, "model."+d.name, float64(d.v))
	}
	if m.TopK > m.Experts && m.Experts >= 1 {
		ps.add("top_k", "must be <= experts (got %d > %d)", m.TopK, m.Experts)
	}
	if m.SharedExperts > 0 && m.SharedFFN < 1 {
		ps.add("shared_ffn", "must be >= 1 with %d shared experts (got %d)", m.SharedExperts, m.SharedFFN)
	}
	if m.Blocks >= 1 && len(m.Layers) > m.Blocks {
		ps.add("layers", "%d MoE layers but only %d blocks", len(m.Layers), m.Blocks)
	}
	var dense, kv int64
	for i, l := range m.Layers {
		p := fmt.Sprintf("layers[%d]", i)
		if l.Block < 0 || m.Blocks >= 1 && l.Block >= m.Blocks {
			ps.add(p+".block", "must be in [0,%d) (got %d)", m.Blocks, l.Block)
		}
		if i > 0 && l.Block <= m.Layers[i-1].Block {
			ps.add(p+".block", "must be greater than the previous layer's block %d (got %d)", m.Layers[i-1].Block, l.Block)
		}
		ps.checkBound(p+".expert_bytes", "model.layers[].expert_bytes", float64(l.ExpertBytes))
		if len(l.Tensors) > 0 {
			var sum int64
			for j, t := range l.Tensors {
				if _, ok := quantBlocks[t.Type]; !ok && !(recorded && t.Type == "") {
					ps.add(fmt.Sprintf("%s.tensors[%d].type", p, j), "unknown quant type %q (valid: %s)", string(t.Type), joinNames(QuantTypes()))
				}
				if t.Bytes <= 0 || t.Bytes > l.ExpertBytes {
					ps.add(fmt.Sprintf("%s.tensors[%d].bytes", p, j), "must be in [1, expert_bytes %d] (got %d)", l.ExpertBytes, t.Bytes)
				}
				sum += t.Bytes // NB: each term is at most 4 GiB once the check above passes
			}
			if sum != l.ExpertBytes {
				ps.add(p+".expert_bytes", "is %d but its tensors sum to %d", l.ExpertBytes, sum)
			}
		}
		ps.checkDenseTypes(p, &l)
		for _, v := range []struct {
			name string
			v    int64
		}{{"dense_bytes", l.DenseBytes}, {"dense_flops_per_token", l.DenseFLOPsPerToken}, {"expert_flops_per_token", l.ExpertFLOPsPerToken}} {
			ps.checkBound(p+"."+v.name, "model.layers[]."+v.name, float64(v.v))
		}
		dense += min(max(l.DenseBytes, 0), 1<<40) // clamped: bounded sums cannot overflow
		kv += min(max(l.KVBytesPerToken, 0), 1<<40)
		ps.checkMixer(p, &l)
	}
	if kv > 0 && kv > m.KVBytesPerToken {
		ps.add("kv_bytes_per_token", "%d is less than the layers' kv_bytes_per_token (%d): they are part of it", m.KVBytesPerToken, kv)
	}
	for _, v := range []struct {
		name string
		v    int64
	}{{"head_bytes", m.HeadBytes}, {"head_flops_per_token", m.HeadFLOPsPerToken}, {"kv_bytes_per_token", m.KVBytesPerToken}, {"non_expert_bytes", m.NonExpertBytes}} {
		ps.checkBound(v.name, "model."+v.name, float64(v.v))
	}
	if _, ok := quantBlocks[m.HeadType]; !ok && m.HeadType != "" {
		ps.add("head_type", "unknown quant type %q (valid: %s)", string(m.HeadType), joinNames(QuantTypes()))
	}
	if head := min(max(m.HeadBytes, 0), 1<<40); m.NonExpertBytes < dense+head && m.NonExpertBytes >= 0 {
		ps.add("non_expert_bytes", "%d is less than the layers' dense bytes plus the head (%d): they are part of it", m.NonExpertBytes, dense+head)
	}
	return ps
}

// checkDenseTypes checks a layer's optional split of its dense bytes by
// type: known types, each once, positive bytes summing to at most
// dense_bytes.
func (ps *problems) checkDenseTypes(p string, l *LayerSpec) {
	var sum int64
	seen := map[QuantType]bool{}
	for j, t := range l.DenseTypes {
		q := fmt.Sprintf("%s.dense_types[%d]", p, j)
		if _, ok := quantBlocks[t.Type]; !ok {
			ps.add(q+".type", "unknown quant type %q (valid: %s)", string(t.Type), joinNames(QuantTypes()))
		} else if seen[t.Type] {
			ps.add(q+".type", "%s is listed twice", t.Type)
		}
		seen[t.Type] = true
		if t.Bytes <= 0 || t.Bytes > l.DenseBytes {
			ps.add(q+".bytes", "must be in [1, dense_bytes %d] (got %d)", l.DenseBytes, t.Bytes)
			continue
		}
		if sum > l.DenseBytes-t.Bytes { // NB: sum + t.Bytes > dense_bytes, without overflow
			ps.add(p+".dense_types", "sum to more than dense_bytes %d", l.DenseBytes)
			return
		}
		sum += t.Bytes
	}
}

// checkBound reports v at path when it lies outside the bound of field.
func (ps *problems) checkBound(path, field string, v float64) {
	b := bound(field)
	text := fmt.Sprintf("%.0f", v)
	if b.Kind == Size {
		text += " B"
	}
	if msg := b.check(v, text); msg != "" {
		ps.add(path, "%s", msg)
	}
}

// checkMixer checks one layer's optional context shape: an attention layer
// states its KV bytes and attention work and no state, a recurrent layer its
// state and no KV, and a layer without a mixer none of them.
func (ps *problems) checkMixer(p string, l *LayerSpec) {
	for _, v := range []struct {
		name string
		v    int64
	}{{"kv_bytes_per_token", l.KVBytesPerToken}, {"attn_flops_per_position", l.AttnFLOPsPerPosition}, {"state_bytes", l.StateBytes}, {"state_flops_per_token", l.StateFLOPsPerToken}} {
		ps.checkBound(p+"."+v.name, "model.layers[]."+v.name, float64(v.v))
	}
	attn := l.KVBytesPerToken != 0 || l.AttnFLOPsPerPosition != 0
	state := l.StateBytes != 0 || l.StateFLOPsPerToken != 0
	switch l.Mixer {
	case "":
		if attn || state {
			ps.add(p+".mixer", "missing: kv_bytes_per_token, attn_flops_per_position, state_bytes and state_flops_per_token need the layer's mixer (%s or %s)", MixerAttention, MixerRecurrent)
		}
	case MixerAttention:
		if l.KVBytesPerToken <= 0 || l.AttnFLOPsPerPosition <= 0 || state {
			ps.add(p+".mixer", "an attention layer needs kv_bytes_per_token > 0 and attn_flops_per_position > 0, and no state_bytes or state_flops_per_token")
		}
	case MixerRecurrent:
		if l.StateBytes <= 0 || attn {
			ps.add(p+".mixer", "a recurrent layer needs state_bytes > 0 and no kv_bytes_per_token or attn_flops_per_position")
		}
	default:
		ps.add(p+".mixer", "unknown mixer %q (valid: %s, %s)", l.Mixer, MixerAttention, MixerRecurrent)
	}
}
