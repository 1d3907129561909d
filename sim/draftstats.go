package sim

import (
	"math"

	"github.com/lessim/lessim/traces"
)

// DraftStats are what the acceptance model routes rejected drafts by (see
// draftRouter), measured over a trace's decode tokens: per layer each
// expert's selection count and the reuse rate (the share of a token's
// experts that the previous decode token of the same sequence also
// selected), and per lookahead depth the recall of the trace's own scores
// (the share of true experts of layer l+d among the top-k of the scores
// computed at layer l, k = their count).
//
// Add every step of the trace in order: a run on a trace in memory measures
// them itself; a streamed run (RunSource) is handed them in
// Config.DraftStats, measured in a first pass. They are read-only once
// measured, so runs may share them.
type DraftStats struct {
	layers, experts int
	counts          [][]int64 // per layer: decode selections per expert
	same, all       []int64   // per layer: reused and all experts of decode tokens after a decode token
	hit, total      []int64   // per lookahead depth: true experts among the top-k, and all

	prev      [][]int32 // the previous step's experts per layer (a copy)
	prevSeq   int32
	prevValid bool // prev is a decode step
	top       topK // scratch: a score vector's k-th largest score
}

// NewDraftStats makes empty statistics for a model of layers × experts.
func NewDraftStats(layers, experts int) *DraftStats {
	d := &DraftStats{layers: layers, experts: experts,
		counts: make([][]int64, layers), same: make([]int64, layers), all: make([]int64, layers),
		prev: make([][]int32, layers)}
	for l := range d.counts {
		d.counts[l] = make([]int64, experts)
	}
	return d
}

// Add counts one step (the trace's next). Experts out of range and layers
// beyond the model's are ignored: the run validates steps as it reads them.
func (d *DraftStats) Add(s *traces.Step) {
	if s.Phase == traces.Draft {
		return // NB: not a token of the sequence: the next accepted one follows the last accepted one
	}
	decode := s.Phase == traces.Decode
	if decode {
		after := d.prevValid && d.prevSeq == s.Seq
		for l := range min(len(s.Layers), d.layers) {
			xs := s.Layers[l].Experts
			for _, x := range xs {
				if x >= 0 && int(x) < d.experts {
					d.counts[l][x]++
				}
				if after && containsExpert(d.prev[l], x) {
					d.same[l]++
				}
			}
			if after {
				d.all[l] += int64(len(xs))
			}
		}
		d.addRecall(s)
	}
	d.prevValid, d.prevSeq = decode, s.Seq
	if decode {
		for l := range d.prev {
			d.prev[l] = d.prev[l][:0]
			if l < len(s.Layers) {
				d.prev[l] = append(d.prev[l], s.Layers[l].Experts...)
			}
		}
	}
}

// addRecall counts a decode step's lookahead hits: a true expert of layer
// l+1+dd is a hit when fewer than k scores computed at layer l exceed its own
// (k = the layer's true experts), that is when its score reaches the k-th
// largest. A compact trace's empty vectors are read through their candidate
// index: a hit is a true expert among the first k candidates.
func (d *DraftStats) addRecall(s *traces.Step) {
	for l := range s.Layers {
		ls := &s.Layers[l]
		for dd, v := range ls.Lookahead {
			if l+1+dd >= len(s.Layers) {
				continue
			}
			truth := s.Layers[l+1+dd].Experts
			var hits int64
			switch {
			case len(v) > 0:
				hits = recallHits(v, truth, &d.top)
			case dd < len(ls.LookaheadIndex) && len(ls.LookaheadIndex[dd].Top) > 0:
				top := ls.LookaheadIndex[dd].Top
				hits = recallIndexHits(top[:min(len(top), len(truth))], truth)
			default:
				continue
			}
			for len(d.hit) <= dd {
				d.hit, d.total = append(d.hit, 0), append(d.total, 0)
			}
			d.hit[dd] += hits
			d.total[dd] += int64(len(truth))
		}
	}
}

// recallHits counts the experts of truth whose score in v has fewer than
// len(truth) scores above it. NB: equivalently, whose score is NaN (nothing is
// above a NaN) or at least the len(truth)-th largest non-NaN score; experts
// beyond a short vector are skipped (not counted as hits).
func recallHits(v []float32, truth []int32, top *topK) int64 {
	kth, ok := top.kth(v, len(truth))
	var hits int64
	for _, e := range truth {
		if int(e) >= len(v) || e < 0 {
			continue
		}
		if x := v[e]; !ok || x != x || x >= kth {
			hits++
		}
	}
	return hits
}

// recallIndexHits counts the experts of truth among the candidates top.
func recallIndexHits(top, truth []int32) int64 {
	var hits int64
	for _, e := range truth {
		if containsExpert(top, e) {
			hits++
		}
	}
	return hits
}

// topK finds the k-th largest value of a vector in reused scratch.
type topK struct{ heap []float32 }

// kth is the k-th largest non-NaN value of v (counting repeats); ok is false
// when v has fewer than k of them (then every value has fewer than k above it).
func (t *topK) kth(v []float32, k int) (float32, bool) {
	if k <= 0 {
		return float32(math.Inf(1)), true
	}
	h := t.heap[:0] // a min-heap of the k largest so far
	for _, x := range v {
		switch {
		case x != x:
		case len(h) < k:
			h = append(h, x)
			siftUp(h, len(h)-1)
		case x > h[0]:
			h[0] = x
			siftDown(h)
		}
	}
	t.heap = h
	if len(h) < k {
		return 0, false
	}
	return h[0], true
}

func siftUp(h []float32, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []float32) {
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1] < h[c] {
			c++
		}
		if h[i] <= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// recall is the measured recall per depth; nil when the trace has no scores.
func (d *DraftStats) recall() []float64 {
	if len(d.hit) == 0 {
		return nil
	}
	r := make([]float64, len(d.hit))
	for dd := range r {
		if d.total[dd] > 0 {
			r[dd] = float64(d.hit[dd]) / float64(d.total[dd])
		}
	}
	return r
}

// reuse is the measured reuse rate per layer.
func (d *DraftStats) reuse() []float64 {
	r := make([]float64, d.layers)
	for l := range r {
		if d.all[l] > 0 {
			r[l] = float64(d.same[l]) / float64(d.all[l])
		}
	}
	return r
}

// DraftStatsOf measures steps (a trace in memory).
func DraftStatsOf(steps []traces.Step, layers, experts int) *DraftStats {
	d := NewDraftStats(layers, experts)
	for i := range steps {
		d.Add(&steps[i])
	}
	return d
}
