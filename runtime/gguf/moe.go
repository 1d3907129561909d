package gguf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MoE is the Mixture-of-Experts view of a file: which blocks route to experts and
// where each expert's bytes are.
type MoE struct {
	Arch          string
	Blocks        int // transformer blocks (<arch>.block_count)
	Experts       int // routed experts per MoE layer
	TopK          int // experts used per token (<arch>.expert_used_count; 0 if absent)
	SharedExperts int // <arch>.expert_shared_count, or 1 if shared-expert tensors exist
	Hidden        int // <arch>.embedding_length, else token_embd.weight's row length
	ExpertFFN     int // <arch>.expert_feed_forward_length, else from the expert tensors
	Layers        []MoELayer
}

// MoELayer is one block with routed experts.
type MoELayer struct {
	Block   int
	Router  string        // router tensor name (blk.N.ffn_gate_inp.weight), "" if absent
	Tensors []ExpertSlice // per-expert tensors in file order
}

// ExpertSlice is a tensor whose slowest dimension is the expert index, so expert e
// owns bytes [Offset + e·ExpertBytes, Offset + (e+1)·ExpertBytes).
type ExpertSlice struct {
	Kind        string // the name without "blk.N." and ".weight", e.g. "ffn_gate_exps"
	Tensor      string // full tensor name, e.g. "blk.3.ffn_gate_exps.weight"
	Type        TypeID
	Offset      int64 // absolute file offset of expert 0
	ExpertBytes int64 // bytes of one expert's slice
	Elements    int64 // values of one expert's slice
}

// Range is the absolute byte range [Start, End) of expert e in this tensor.
func (s ExpertSlice) Range(e int) (start, end int64) {
	start = s.Offset + int64(e)*s.ExpertBytes
	return start, start + s.ExpertBytes
}

// ExpertBytes is one expert's storage on this layer (the sum over its tensors).
func (l MoELayer) ExpertBytes() int64 {
	var n int64
	for _, t := range l.Tensors {
		n += t.ExpertBytes
	}
	return n
}

// ByteRange is an absolute file byte range [Start, End).
type ByteRange struct{ Start, End int64 }

// ExpertRanges are the file regions of expert e, one per expert tensor, in file order
// (three with the stock gate/up/down layout).
func (l MoELayer) ExpertRanges(e int) []ByteRange {
	out := make([]ByteRange, len(l.Tensors))
	for i, t := range l.Tensors {
		out[i].Start, out[i].End = t.Range(e)
	}
	return out
}

// blockTensor splits "blk.N.kind.suffix" into N and kind.
func blockTensor(name string) (block int, kind string, ok bool) {
	rest, found := strings.CutPrefix(name, "blk.")
	if !found {
		return 0, "", false
	}
	num, rest, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	b, err := strconv.Atoi(num)
	if err != nil || b < 0 {
		return 0, "", false
	}
	kind, _, _ = strings.Cut(rest, ".")
	return b, kind, true
}

// isExpertKind reports whether a block tensor kind holds routed experts: ffn_gate_exps,
// ffn_up_exps, ffn_down_exps, ffn_gate_up_exps and their biases/scales.
func isExpertKind(kind string) bool { return strings.HasSuffix(kind, "_exps") }

// MoE builds the expert view. Expert tensors are the blk.N.*_exps tensors whose last
// dimension is the expert count (from <arch>.expert_count, or from the tensors when
// that key is absent). A file without them is an error naming the architecture.
func (f *File) MoE() (*MoE, error) {
	arch := f.Arch()
	if arch == "" {
		return nil, fmt.Errorf("%s: no general.architecture", f.Name)
	}
	m := &MoE{Arch: arch}
	get := func(key string) int {
		u, _ := f.uintOrMax(arch + "." + key)
		return int(min(u, 1<<31-1))
	}
	m.Blocks = get("block_count")
	m.Experts = get("expert_count")
	m.TopK = get("expert_used_count")
	m.SharedExperts = get("expert_shared_count")
	m.Hidden = get("embedding_length")
	m.ExpertFFN = get("expert_feed_forward_length")

	countFrom := arch + ".expert_count" // where m.Experts came from, for errors
	byBlock := map[int]*MoELayer{}
	hasShared := false
	for i := range f.Tensors {
		t := &f.Tensors[i]
		b, kind, ok := blockTensor(t.Name)
		if !ok {
			continue
		}
		if strings.HasSuffix(kind, "_shexp") {
			hasShared = true
		}
		if !isExpertKind(kind) || len(t.Dims) < 2 {
			continue
		}
		n := t.Dims[len(t.Dims)-1]
		if m.Experts == 0 {
			m.Experts, countFrom = int(min(n, 1<<31-1)), "tensor "+t.Name
		}
		if n != int64(m.Experts) {
			return nil, fmt.Errorf("%s: tensor %s has %d experts in its last dimension, %s has %d", f.Name, t.Name, n, countFrom, m.Experts)
		}
		l := byBlock[b]
		if l == nil {
			l = &MoELayer{Block: b}
			byBlock[b] = l
		}
		if suffix := t.Name[strings.LastIndex(t.Name, ".")+1:]; suffix != "weight" {
			kind += "." + suffix // e.g. gpt-oss's ffn_gate_exps.bias
		}
		l.Tensors = append(l.Tensors, ExpertSlice{
			Kind: kind, Tensor: t.Name, Type: t.Type, Offset: t.FileOffset,
			ExpertBytes: t.Bytes / n, Elements: t.Elements() / n,
		})
		if m.ExpertFFN == 0 && (kind == "ffn_gate_exps" || kind == "ffn_up_exps") && len(t.Dims) == 3 {
			m.ExpertFFN = int(t.Dims[1])
		}
	}
	if len(byBlock) == 0 {
		return nil, fmt.Errorf("%s: no MoE layers found (architecture %s)", f.Name, arch)
	}
	if m.Hidden == 0 { // fall back to the embedding's row length
		if t, ok := f.Tensor("token_embd.weight"); ok {
			m.Hidden = int(t.Dims[0])
		}
	}
	if m.SharedExperts == 0 && hasShared {
		m.SharedExperts = 1
	}
	for _, l := range byBlock {
		slices.SortFunc(l.Tensors, func(a, b ExpertSlice) int { return compareInt64(a.Offset, b.Offset) })
		if r := fmt.Sprintf("blk.%d.ffn_gate_inp.weight", l.Block); f.hasTensor(r) {
			l.Router = r
		}
		m.Layers = append(m.Layers, *l)
		m.Blocks = max(m.Blocks, l.Block+1)
	}
	slices.SortFunc(m.Layers, func(a, b MoELayer) int { return a.Block - b.Block })
	return m, nil
}

func (f *File) hasTensor(name string) bool {
	_, ok := f.tensorIndex[name]
	return ok
}
