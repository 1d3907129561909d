package gguf

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/devices"
)

// fileTypes names llama.cpp's general.file_type values (enum llama_ftype in llama.h).
var fileTypes = map[uint64]string{
	0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1", 10: "q2_k",
	11: "q3_k_s", 12: "q3_k_m", 13: "q3_k_l", 14: "q4_k_s", 15: "q4_k_m", 16: "q5_k_s",
	17: "q5_k_m", 18: "q6_k", 19: "iq2_xxs", 20: "iq2_xs", 21: "q2_k_s", 22: "iq3_xs",
	23: "iq3_xxs", 24: "iq1_s", 25: "iq4_nl", 26: "iq3_s", 27: "iq3_m", 28: "iq2_s",
	29: "iq2_m", 30: "iq4_xs", 31: "iq1_m", 32: "bf16", 36: "tq1_0", 37: "tq2_0", 38: "mxfp4_moe",
}

// kvCacheBytesPerValue assumes llama.cpp's default F16 KV cache.
const kvCacheBytesPerValue = 2

// ModelSpec builds the simulator's model description from the file:
//   - Layers: one per MoE block, with each expert tensor's per-expert slice (name, type,
//     bytes) in file order, ExpertBytes their sum, ExpertFLOPsPerToken 2 per expert weight;
//   - DenseBytes/DenseFLOPsPerToken: the block's other tensors (attention, norms, router,
//     shared expert), and DenseTypes their bytes by type (HeadType the head's). Blocks without experts (e.g. deepseek2's leading dense blocks) are
//     added to the next MoE layer (trailing ones to the last), so per-pass totals hold;
//   - NonExpertBytes: every tensor that is not a routed expert, including embeddings
//     and the head; HeadBytes: output.weight, or token_embd.weight when tied;
//   - KVBytesPerToken: blocks × heads_kv × (key_length + value_length) × 2 (F16 cache;
//     approximate for compressed or recurrent caches such as deepseek2's MLA);
//   - each layer's mixer (attention, with its KV bytes and attention FLOPs per
//     position, times the blocks charged to it) when every block is full
//     attention, for the simulator's context cost (stateMixers); else none.
//
// FLOPs count 2 per weight per token for matrices read by matmul; the token embedding
// is a row lookup and counts none.
func (f *File) ModelSpec() (*devices.ModelSpec, error) {
	m, err := f.MoE()
	if err != nil {
		return nil, err
	}
	arch := m.Arch
	var problems []string
	if m.TopK <= 0 {
		problems = append(problems, fmt.Sprintf("%s.expert_used_count is missing", arch))
	}
	if m.TopK > m.Experts {
		problems = append(problems, fmt.Sprintf("%s.expert_used_count %d exceeds the expert count %d", arch, m.TopK, m.Experts))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", f.Name, strings.Join(problems, "; "))
	}

	spec := &devices.ModelSpec{
		Arch: arch, Blocks: m.Blocks, Experts: m.Experts, TopK: m.TopK,
		SharedExperts: m.SharedExperts, Hidden: m.Hidden, ExpertFFN: m.ExpertFFN,
		Source: "gguf:" + filepath.Base(f.Name),
	}
	spec.Name, _ = f.String("general.name")
	if spec.Name == "" {
		spec.Name = strings.TrimSuffix(filepath.Base(f.Name), filepath.Ext(f.Name))
	}
	if ft, ok := f.Uint("general.file_type"); ok {
		spec.Variant = fileTypes[ft]
	}
	if u, ok := f.uintOrMax(arch + ".expert_shared_feed_forward_length"); ok {
		spec.SharedFFN = int(u)
	}
	if toks, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		spec.Vocab = len(toks)
	} else if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
		spec.Vocab = int(t.Dims[1])
	}

	layerOf := map[int]int{} // block → index in m.Layers
	for i, l := range m.Layers {
		layerOf[l.Block] = i
		ls := devices.LayerSpec{Block: l.Block}
		for _, t := range l.Tensors {
			ls.Tensors = append(ls.Tensors, devices.ExpertTensor{Name: t.Kind, Type: t.Type.Name(), Bytes: t.ExpertBytes})
			ls.ExpertBytes += t.ExpertBytes
			ls.ExpertFLOPsPerToken += 2 * t.Elements
		}
		spec.Layers = append(spec.Layers, ls)
	}
	// owner is the MoE layer a dense block's work is charged to.
	owner := func(block int) int {
		for i, l := range m.Layers {
			if l.Block >= block {
				return i
			}
		}
		return len(m.Layers) - 1
	}
	expert := map[string]bool{}
	for _, l := range m.Layers {
		for _, t := range l.Tensors {
			expert[t.Tensor] = true
		}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if expert[t.Name] {
			continue
		}
		spec.NonExpertBytes += t.Bytes
		b, _, ok := blockTensor(t.Name)
		if !ok {
			continue
		}
		ls := &spec.Layers[owner(b)]
		ls.DenseBytes += t.Bytes
		ls.DenseFLOPsPerToken += 2 * t.Elements()
		addType(&ls.DenseTypes, t.Type.Name(), t.Bytes)
	}
	head, ok := f.Tensor("output.weight")
	if !ok {
		head, ok = f.Tensor("token_embd.weight")
	}
	if ok {
		spec.HeadBytes = head.Bytes
		spec.HeadFLOPsPerToken = 2 * head.Elements()
		if _, err := devices.ParseQuantType(string(head.Type.Name())); err == nil {
			spec.HeadType = head.Type.Name()
		}
	}
	spec.KVBytesPerToken = f.kvBytesPerToken(arch, m)
	blocks := make([]int64, len(m.Layers)) // blocks charged to each MoE layer
	for b := range m.Blocks {
		blocks[owner(b)]++
	}
	f.stateMixers(spec, blocks)
	return spec, nil
}

// addType adds bytes of type q to a layer's dense bytes by type, when q is
// a type whose block size devices knows (the others stay unlisted, charged
// at the profile's memory.efficiency).
func addType(ts *[]devices.TypeBytes, q devices.QuantType, bytes int64) {
	if _, err := devices.ParseQuantType(string(q)); err != nil || bytes <= 0 {
		return
	}
	for i := range *ts {
		if (*ts)[i].Type == q {
			(*ts)[i].Bytes += bytes
			return
		}
	}
	*ts = append(*ts, devices.TypeBytes{Type: q, Bytes: bytes})
}

// kvBytesPerToken is the F16 KV cache of one context token over all blocks.
func (f *File) kvBytesPerToken(arch string, m *MoE) int64 {
	return int64(m.Blocks) * f.attention(arch, m.Hidden).kvBytes()
}
