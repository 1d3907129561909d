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
// draws come from a PCG stream of their own seeded by Config.Seed, so the
// acceptance draws stay as they were.
//
// A draft's router input is known to a real engine like any token's, so when
// the trace has lookahead scores a rejected draft gets some too: the stated
// predictor's (traces.PredictScores) for the draft's own drawn experts, with
// the recall the trace's own scores achieve at each depth (the share of true
// experts among the top-k scores) and traces.DefaultPredictOptions' false
// positives. These scores come from a third PCG stream, so a draft's experts
// are the same whether or not the run reads lookahead scores (lru and les
// verify the same rejected drafts). A run whose policy does not read them
// gets none, as for a trace without scores (no recall to aim for): nothing
// would look at them, and drawing them costs a score vector per layer, depth
// and draft.
type draftRouter struct {
	cum    [][]int64 // per layer: cumulative selection counts over experts
	k      []int     // per layer: experts per draft, min(top-k, experts ever selected)
	reuse  []float64 // per layer: share of a token's experts the previous token also selected
	recall []float64 // per lookahead depth: the trace's own top-k recall
	fp     float64
	rng    *rand.Rand     // the drafts' experts
	laRng  *rand.Rand     // their lookahead scores
	bufs   []*traces.Step // reused synthetic steps, one per rejected position
	mark   []bool         // scratch for PredictScores
}

// newDraftRouter routes drafts by st, the trace's measured statistics,
// taking top-k experts per draft, with the PCG stream of seed; with scores,
// drafts get lookahead scores too.
func newDraftRouter(st *DraftStats, topK int, seed uint64, scores bool) *draftRouter {
	nL := st.layers
	d := &draftRouter{cum: make([][]int64, nL), k: make([]int, nL), mark: make([]bool, st.experts),
		fp:    traces.DefaultPredictOptions().FalsePositives,
		rng:   rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909)),
		laRng: rand.New(rand.NewPCG(seed, seed^0xbb67ae8584caa73b))}
	if scores {
		d.recall = st.recall()
	}
	d.reuse = st.reuse()
	for l := range d.cum {
		// NB: a copy: st is shared by runs.
		c := append([]int64(nil), st.counts[l]...)
		support := 0
		for x := range c {
			if c[x] > 0 {
				support++
			}
			if x > 0 {
				c[x] += c[x-1]
			}
		}
		d.cum[l], d.k[l] = c, min(topK, support)
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
// trace has none or the run reads none: no recall).
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
			traces.PredictScores(d.laRng, v, s.Layers[l+1+i].Experts, d.recall[i], d.fp, d.mark)
		}
	}
}
