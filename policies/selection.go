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
// (ties: lower index first), skipping -Inf and NaN scores. It keeps a min-heap
// of the n best seen so far (O(len·log n)) and sorts the survivors by
// insertion, so it allocates nothing once dst has capacity n.
func topIndices(dst []int32, scores []float32, n int) []int32 {
	n = min(n, len(scores))
	if n <= 0 {
		return dst
	}
	dst = slices.Grow(dst, n) // NB: h below appends within dst's spare capacity
	base := len(dst)
	// worse reports whether index a ranks below index b.
	worse := func(a, b int32) bool {
		va, vb := scoreOf(scores, a), scoreOf(scores, b)
		if va != vb {
			return va < vb
		}
		return a > b
	}
	h := dst[base:base]
	negInf := float32(math.Inf(-1))
	floor := negInf // score of h[0] once h is full: anything below cannot enter
	for j, v := range scores {
		// NB: the hot path is one comparison: once h is full, only a score
		// strictly above the floor can enter (a tie loses on its higher
		// index), and !(v > floor) also rejects NaN.
		if len(h) == n {
			if !(v > floor) {
				continue
			}
		} else if v != v || v == negInf {
			continue
		}
		i := int32(j)
		if len(h) < n {
			h = append(h, i)
			for j := len(h) - 1; j > 0; { // sift up: root is the worst kept
				p := (j - 1) / 2
				if !worse(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			if len(h) == n {
				floor = scoreOf(scores, h[0])
			}
			continue
		}
		if !worse(h[0], i) {
			continue
		}
		h[0] = i
		for j := 0; ; { // sift down
			l := 2*j + 1
			if l >= len(h) {
				break
			}
			m := l
			if r := l + 1; r < len(h) && worse(h[r], h[l]) {
				m = r
			}
			if !worse(h[m], h[j]) {
				break
			}
			h[j], h[m] = h[m], h[j]
			j = m
		}
		floor = scoreOf(scores, h[0])
	}
	for i := 1; i < len(h); i++ { // best first
		for j := i; j > 0 && worse(h[j-1], h[j]); j-- {
			h[j-1], h[j] = h[j], h[j-1]
		}
	}
	return dst[:base+len(h)]
}
