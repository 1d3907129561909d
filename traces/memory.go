package traces

import "unsafe"

// MemoryBytes estimates the bytes that steps tokens of a trace described by m
// take in memory as ReadAll returns them from a Reader opened with cols, plus
// a candidate index (IndexLookahead) of indexCands per lookahead vector when
// indexCands > 0. It counts what a loaded trace holds per token and layer:
// the LayerStep itself, top-k experts, gate weights and residency flags, each
// kept vector (Meta.Model.Experts float32 per logit or lookahead vector,
// Meta.Model.Hidden per router input) and each index entry; it ignores
// allocator rounding and the slice's growth slack, so it is a floor, about
// right for long traces (the benchmarks compare it with the heap).
func MemoryBytes(m Meta, steps int64, cols Columns, indexCands int) int64 {
	p := cols.project(m)
	layers := int64(len(m.Model.Layers))
	k := int64(m.Model.TopK)
	const hdr = int64(unsafe.Sizeof([]float32(nil)))
	perLayer := int64(unsafe.Sizeof(LayerStep{})) + k*(4+4+1) // experts, weights, hit
	if p.HasLogits {
		perLayer += int64(m.Model.Experts) * 4
	}
	if p.HasRouterInputs {
		perLayer += int64(m.Model.Hidden) * 4
	}
	idx := int64(unsafe.Sizeof(CandidateIndex{}))
	if d := int64(p.LookaheadDepth); d > 0 && p.LookaheadTop > 0 {
		// Compact: an empty vector header and the stored index per depth.
		perLayer += d * (hdr + idx + int64(p.LookaheadTop)*(4+4))
	} else if d > 0 {
		perLayer += d * (hdr + int64(m.Model.Experts)*4)
		if indexCands > 0 {
			perLayer += d * (idx + int64(indexCands)*(4+4))
		}
	}
	perStep := int64(unsafe.Sizeof(Step{})) + layers*perLayer
	return steps * perStep
}
