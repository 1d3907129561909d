package sim

import (
	"math/rand/v2"
	"sort"

	"github.com/lessim/lessim/traces"
)

// draftRouter routes rejected drafts. A rejected draft is a different token
// from the one the trace holds at its position (and every draft after it in
// the block follows a wrong prefix), so it must not be routed like the
// trace's next tokens: that would be a free, perfect prefetch of them. Traces
// do not record rejected drafts, so a draft's experts are drawn to match two
// statistics of the trace's decode tokens on each layer: how often a token
// repeats an expert of the token before it (reuse ρ_l, measured over
// consecutive decode tokens of a sequence), and how often each expert is
// selected (the layer's empirical distribution). Each of the k slots repeats,
// with probability ρ_l, an expert of the previous token in the block (the
// last accepted token, or the previous draft) not drawn yet; the other slots
// are drawn without replacement in proportion to the experts' counts. The
// draws come from a PCG stream of its own seeded by Config.Seed, so the
// acceptance draws stay as they were.
//
// A draft's router input is known to a real engine like any token's, so when
// the trace has lookahead scores a rejected draft gets some too: the stated
// predictor's (traces.PredictScores) for the draft's own drawn experts, with
// the recall the trace's own scores achieve at each depth (the share of true
// experts among the top-k scores) and traces.DefaultPredictOptions' false
// positives.
type draftRouter struct {
	cum    [][]int64 // per layer: cumulative selection counts over experts
	k      []int     // per layer: experts per draft, min(top-k, experts ever selected)
	reuse  []float64 // per layer: share of a token's experts the previous token also selected
	recall []float64 // per lookahead depth: the trace's own top-k recall
	fp     float64
	rng    *rand.Rand
	bufs   []*traces.Step // reused synthetic steps, one per rejected position
	mark   []bool         // scratch for PredictScores
}

// newDraftRouter counts the decode steps' selections per layer and measures
// their lookahead recall.
func newDraftRouter(steps []traces.Step, nL, nE, topK int, seed uint64) *draftRouter {
	d := &draftRouter{cum: make([][]int64, nL), k: make([]int, nL), mark: make([]bool, nE),
		fp:  traces.DefaultPredictOptions().FalsePositives,
		rng: rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))}
	d.recall = lookaheadRecall(steps)
	d.reuse = reuseRate(steps, nL)
	for l := range d.cum {
		d.cum[l] = make([]int64, nE)
	}
	for i := range steps {
		if steps[i].Phase != traces.Decode {
			continue
		}
		for l, ls := range steps[i].Layers {
			for _, x := range ls.Experts {
				d.cum[l][x]++
			}
		}
	}
	for l, c := range d.cum {
		support := 0
		for x := range c {
			if c[x] > 0 {
				support++
			}
			if x > 0 {
				c[x] += c[x-1]
			}
		}
		d.k[l] = min(topK, support)
	}
	return d
}

// block returns the tokens a verify pass over steps[i:j] runs when its first
// accepted tokens are emitted: those steps as traced, then j-i-accepted
// rejected drafts at the following positions with drawn routing and stated
// lookahead scores. The slice is valid until the next call.
func (d *draftRouter) block(span []*traces.Step, accepted int, dst []*traces.Step) []*traces.Step {
	dst = append(dst[:0], span[:accepted]...)
	for n := range len(span) - accepted {
		if n == len(d.bufs) {
			d.bufs = append(d.bufs, &traces.Step{Layers: make([]traces.LayerStep, len(d.cum))})
		}
		s := d.bufs[n]
		real, prev := span[accepted+n], dst[len(dst)-1]
		s.Seq, s.Pos, s.Phase, s.Pass = real.Seq, real.Pos, traces.Decode, -1
		for l := range s.Layers {
			s.Layers[l].Experts = d.draw(l, prev.Layers[l].Experts, s.Layers[l].Experts[:0])
		}
		d.lookahead(s)
		dst = append(dst, s)
	}
	return dst
}

// draw appends layer l's experts for one rejected draft after a token that
// selected prev: k distinct experts; each slot repeats one of prev's not
// drawn yet with probability ρ_l, the others are drawn in proportion to their
// counts among those not yet drawn (successive sampling, by rejecting repeats).
func (d *draftRouter) draw(l int, prev, dst []int32) []int32 {
	for range d.k[l] {
		if len(prev) == 0 || d.rng.Float64() >= d.reuse[l] {
			continue
		}
		// NB: prev is a top-k list (a handful): scan for the j-th not drawn.
		free := 0
		for _, x := range prev {
			if !containsExpert(dst, x) {
				free++
			}
		}
		if free == 0 {
			break
		}
		j := d.rng.IntN(free)
		for _, x := range prev {
			if !containsExpert(dst, x) {
				if j == 0 {
					dst = append(dst, x)
					break
				}
				j--
			}
		}
	}
	c := d.cum[l]
	total := c[len(c)-1]
	for tries := 0; len(dst) < d.k[l]; tries++ {
		var x int32
		if tries < 64*d.k[l] {
			u := d.rng.Int64N(total)
			x = int32(sort.Search(len(c), func(i int) bool { return c[i] > u }))
		} else {
			// NB: only reached for extremely skewed layers; take the most
			// selected expert not drawn yet, deterministically.
			x = d.heaviestExcept(l, dst)
		}
		if !containsExpert(dst, x) {
			dst = append(dst, x)
		}
	}
	return dst
}

// heaviestExcept is layer l's most selected expert not in drawn (lowest index on ties).
func (d *draftRouter) heaviestExcept(l int, drawn []int32) int32 {
	c := d.cum[l]
	best, bestN := int32(-1), int64(0)
	for x := range c {
		n := c[x]
		if x > 0 {
			n -= c[x-1]
		}
		if n > bestN && !containsExpert(drawn, int32(x)) {
			best, bestN = int32(x), n
		}
	}
	return best
}

func containsExpert(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// lookahead fills s's lookahead scores for its own experts (none when the
// trace has none).
func (d *draftRouter) lookahead(s *traces.Step) {
	L := len(s.Layers)
	for l := range s.Layers {
		ls := &s.Layers[l]
		n := min(len(d.recall), L-1-l)
		if n <= 0 {
			ls.Lookahead = nil
			continue
		}
		if len(ls.Lookahead) != n {
			ls.Lookahead = make([][]float32, n)
			for i := range ls.Lookahead {
				ls.Lookahead[i] = make([]float32, len(d.mark))
			}
		}
		for i, v := range ls.Lookahead {
			traces.PredictScores(d.rng, v, s.Layers[l+1+i].Experts, d.recall[i], d.fp, d.mark)
		}
	}
}

// lookaheadRecall is, per lookahead depth, the share of decode tokens' true
// experts of layer l+d that are among the top-k (k = their count) of the
// scores computed at layer l; nil when the trace has no scores.
func lookaheadRecall(steps []traces.Step) []float64 {
	var hit, total []int64
	for i := range steps {
		s := &steps[i]
		if s.Phase != traces.Decode {
			continue
		}
		for l := range s.Layers {
			for dd, v := range s.Layers[l].Lookahead {
				if l+1+dd >= len(s.Layers) || len(v) == 0 {
					continue
				}
				for len(hit) <= dd {
					hit, total = append(hit, 0), append(total, 0)
				}
				truth := s.Layers[l+1+dd].Experts
				for _, e := range truth {
					if int(e) >= len(v) {
						continue // NB: a short vector; checkSteps does not size scores
					}
					above := 0
					for _, x := range v {
						if x > v[e] {
							above++
						}
					}
					if above < len(truth) {
						hit[dd]++
					}
				}
				total[dd] += int64(len(truth))
			}
		}
	}
	if len(hit) == 0 {
		return nil
	}
	r := make([]float64, len(hit))
	for dd := range r {
		if total[dd] > 0 {
			r[dd] = float64(hit[dd]) / float64(total[dd])
		}
	}
	return r
}

// reuseRate is, per layer, the share of decode tokens' experts that the
// previous decode token of the same sequence also selected on that layer.
func reuseRate(steps []traces.Step, nL int) []float64 {
	same, all := make([]int64, nL), make([]int64, nL)
	for i := 1; i < len(steps); i++ {
		a, b := &steps[i-1], &steps[i]
		if a.Phase != traces.Decode || b.Phase != traces.Decode || a.Seq != b.Seq {
			continue
		}
		for l := range b.Layers {
			for _, x := range b.Layers[l].Experts {
				if containsExpert(a.Layers[l].Experts, x) {
					same[l]++
				}
			}
			all[l] += int64(len(b.Layers[l].Experts))
		}
	}
	r := make([]float64, nL)
	for l := range r {
		if all[l] > 0 {
			r[l] = float64(same[l]) / float64(all[l])
		}
	}
	return r
}
