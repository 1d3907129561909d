package traces

import "slices"

// DraftOverlap is how a trace's recorded rejected drafts (Phase Draft) route,
// per MoE layer: the share of a draft's experts that were also selected by
// the token before it in its verify pass (the pass's last accepted token, or
// the draft before it), by the pass's accepted tokens (their union), and by
// the next accepted token of its sequence (the first of the next pass, which
// took the pass's first rejected draft's position). Drafts at a sequence's
// end have no next token and are left out of Next. The acceptance model's
// draw of a rejected draft's experts (sim's draftRouter) repeats an expert of
// the token before it with the decode tokens' next-token reuse: Prev is what
// a recorded engine did instead.
type DraftOverlap struct {
	Drafts       int64     `json:"drafts"`
	Prev         float64   `json:"prev"` // over all layers
	Block        float64   `json:"block"`
	Next         float64   `json:"next"`
	PrevByLayer  []float64 `json:"prev_by_layer"`
	BlockByLayer []float64 `json:"block_by_layer"`
	NextByLayer  []float64 `json:"next_by_layer"`
}

// draftAcc measures DraftOverlap step by step.
type draftAcc struct {
	drafts                   int64
	prev, block, next, slots []int64   // per layer: overlapping experts, and a draft's experts
	nextSlots                []int64   // per layer: a draft's experts that had a next token
	seq, pass                int32     // the open pass
	open                     bool      // a decode pass is open
	last                     [][]int32 // per layer: the previous token of the pass
	union                    [][]int32 // per layer: the pass's accepted tokens' experts
	pending                  [][][]int32
}

func newDraftAcc(layers int) *draftAcc {
	return &draftAcc{prev: make([]int64, layers), block: make([]int64, layers), next: make([]int64, layers),
		slots: make([]int64, layers), nextSlots: make([]int64, layers), last: make([][]int32, layers), union: make([][]int32, layers)}
}

func overlap(a, b []int32) int64 {
	var n int64
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return n
}

// add counts the trace's next step.
func (a *draftAcc) add(s *Step) {
	switch {
	case s.Phase == Prefill:
		a.open, a.pending = false, a.pending[:0]
	case s.Phase == Draft:
		if !a.open || s.Seq != a.seq || s.Pass != a.pass {
			return // NB: a draft without its pass's accepted tokens (cut trace): nothing to measure against
		}
		a.drafts++
		d := make([][]int32, len(a.last))
		for l := range min(len(s.Layers), len(a.last)) {
			xs := s.Layers[l].Experts
			a.prev[l] += overlap(xs, a.last[l])
			a.block[l] += overlap(xs, a.union[l])
			a.slots[l] += int64(len(xs))
			a.last[l] = append(a.last[l][:0], xs...)
			d[l] = slices.Clone(xs)
		}
		a.pending = append(a.pending, d)
	case !a.open || s.Seq != a.seq || s.Pass != a.pass || s.Pass < 0:
		if a.open && s.Seq == a.seq {
			for _, d := range a.pending {
				for l := range min(len(s.Layers), len(d)) {
					a.next[l] += overlap(d[l], s.Layers[l].Experts)
					a.nextSlots[l] += int64(len(d[l]))
				}
			}
		}
		a.pending = a.pending[:0]
		a.open, a.seq, a.pass = true, s.Seq, s.Pass
		for l := range a.union {
			a.union[l] = a.union[l][:0]
		}
		fallthrough
	default:
		for l := range min(len(s.Layers), len(a.last)) {
			xs := s.Layers[l].Experts
			a.last[l] = append(a.last[l][:0], xs...)
			for _, x := range xs {
				if !slices.Contains(a.union[l], x) {
					a.union[l] = append(a.union[l], x)
				}
			}
		}
	}
}

// result is the overlap measured; nil when the trace recorded no drafts.
func (a *draftAcc) result() *DraftOverlap {
	if a.drafts == 0 {
		return nil
	}
	o := &DraftOverlap{Drafts: a.drafts}
	var p, b, n, s, ns int64
	for l := range a.prev {
		o.PrevByLayer = append(o.PrevByLayer, frac(a.prev[l], a.slots[l]))
		o.BlockByLayer = append(o.BlockByLayer, frac(a.block[l], a.slots[l]))
		o.NextByLayer = append(o.NextByLayer, frac(a.next[l], a.nextSlots[l]))
		p, b, n, s, ns = p+a.prev[l], b+a.block[l], n+a.next[l], s+a.slots[l], ns+a.nextSlots[l]
	}
	o.Prev, o.Block, o.Next = frac(p, s), frac(b, s), frac(n, ns)
	return o
}
