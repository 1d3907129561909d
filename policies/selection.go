package policies

import (
	"math"
	"slices"
)

// scoreOf is scores[i] with NaN read as -Inf, so a corrupt score never wins.
func scoreOf(scores []float32, i int32) float32 {
	v := scores[i]
	if v != v {
		return float32(math.Inf(-1))
	}
	return v
}

// exp is math.Exp with exp(-Inf - -Inf) = exp(NaN) read as 0.
func exp(x float64) float64 {
	if x != x {
		return 0
	}
	return math.Exp(x)
}

// topIndices appends to dst the indices of the n highest scores, best first
// (ties: lower index first), skipping -Inf and NaN scores. It keeps the n best
// seen so far sorted by insertion, their values beside them, so the common
// case is one comparison per score; it allocates nothing for n <= 64 once dst
// has capacity n.
func topIndices(dst []int32, scores []float32, n int) []int32 {
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
