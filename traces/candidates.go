package traces

import (
	"math"
	"slices"
)

// ScoreOf is scores[i] with NaN read as -Inf, so a corrupt score never wins.
func ScoreOf(scores []float32, i int32) float32 {
	v := scores[i]
	if v != v {
		return float32(math.Inf(-1))
	}
	return v
}

// ExpNaN0 is math.Exp with exp(-Inf - -Inf) = exp(NaN) read as 0.
func ExpNaN0(x float64) float64 {
	if x != x {
		return 0
	}
	return math.Exp(x)
}

// TopIndices appends to dst the indices of the n highest scores, best first
// (ties: lower index first), skipping -Inf and NaN scores. It keeps the n best
// seen so far sorted by insertion, their values beside them, so the common
// case is one comparison per score; it allocates nothing for n <= 64 once dst
// has capacity n.
func TopIndices(dst []int32, scores []float32, n int) []int32 {
	n = min(n, len(scores))
	if n <= 0 {
		return dst
	}
	dst = slices.Grow(dst, n)
	base := len(dst)
	idx := dst[base : base+n]
	var stack [64]float32
	vals := stack[:]
	if n > len(stack) {
		vals = make([]float32, n)
	}
	vals = vals[:n]
	// NB: worst is the bar a score must beat: -Inf until n are kept (which
	// also rejects -Inf), then the worst kept score (a tie loses on its higher
	// index). !(v > worst) rejects NaN too, so the common case is one comparison.
	worst := float32(math.Inf(-1))
	kept := 0
	for j, v := range scores {
		if !(v > worst) {
			continue
		}
		p := kept
		if kept == n {
			p = n - 1
		} else {
			kept++
		}
		for p > 0 && vals[p-1] < v {
			vals[p], idx[p] = vals[p-1], idx[p-1]
			p--
		}
		vals[p], idx[p] = v, int32(j)
		if kept == n {
			worst = vals[n-1]
		}
	}
	return dst[:base+kept]
}

// CandidateIndex is a lookahead score vector's candidates, precomputed once per
// trace so that policies need not rescan every expert's score at every layer
// of every run (derived data, stored only in compact-lookahead files: Meta.LookaheadTop).
type CandidateIndex struct {
	// Top are the indices of the highest valid scores, best first, ties lower
	// index first, as TopIndices returns them, at most the indexed count.
	Top []int32
	// Score are the scores of Top.
	Score []float32
	// Complete says Top holds every valid score of the vector (it may be
	// false when exactly the indexed count of scores are valid).
	Complete bool
	// ExpSum is Σ ExpNaN0(ScoreOf(s) − best) over the whole vector, in index
	// order, where best = the top score: the softmax denominator relative to
	// the best score. HasSum says it was computed (IndexLookahead withSums).
	ExpSum float64
	HasSum bool
}

// SoftmaxSum is the ExpSum of scores given its best valid score.
func SoftmaxSum(scores []float32, best float32) float64 {
	var sum float64
	for i := range scores {
		sum += ExpNaN0(float64(ScoreOf(scores, int32(i))) - float64(best))
	}
	return sum
}

// IndexLookahead fills LayerStep.LookaheadIndex of every step with the best
// maxCands candidates of each lookahead vector (maxCands >= 1) and, withSums,
// their softmax sums (needed only by cumulative-probability thresholds; they
// cost one exp per score). Policies use the index when it covers what they
// ask for and scan otherwise, so results are identical with or without it.
func IndexLookahead(steps []Step, maxCands int, withSums bool) {
	maxCands = max(maxCands, 1)
	n := 0
	for i := range steps {
		for l := range steps[i].Layers {
			n += len(steps[i].Layers[l].Lookahead)
		}
	}
	arena := make([]int32, 0, n*maxCands)
	scoreArena := make([]float32, 0, n*maxCands)
	index := make([]CandidateIndex, 0, n)
	for i := range steps {
		for l := range steps[i].Layers {
			ls := &steps[i].Layers[l]
			if len(ls.Lookahead) == 0 {
				ls.LookaheadIndex = nil
				continue
			}
			start := len(index)
			for _, sc := range ls.Lookahead {
				from := len(arena)
				arena = TopIndices(arena, sc, maxCands)
				ci := CandidateIndex{Top: arena[from:len(arena):len(arena)]}
				for _, e := range ci.Top {
					scoreArena = append(scoreArena, sc[e])
				}
				ci.Score = scoreArena[from:len(scoreArena):len(scoreArena)]
				// Fewer than maxCands candidates means every valid score is in.
				ci.Complete = len(ci.Top) < maxCands
				if withSums && len(ci.Top) > 0 {
					ci.ExpSum, ci.HasSum = SoftmaxSum(sc, sc[ci.Top[0]]), true
				}
				index = append(index, ci)
			}
			ls.LookaheadIndex = index[start:len(index):len(index)]
		}
	}
}
