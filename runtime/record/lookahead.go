package record

// scores computes the router's W·x (+ bias) into dst.
func (r router) scores(dst, x []float32) {
	RouterScores(dst, r.W, x)
	for e, b := range r.Bias {
		dst[e] += b
	}
}

// RouterScores computes W·x for a router matrix W stored as GGUF lays out
// ffn_gate_inp: experts rows of hidden floats (ne = [hidden, experts]). It
// writes one score per expert into dst. Accumulation is float64 in row order,
// so results are deterministic.
func RouterScores(dst, w, x []float32) {
	hidden := len(x)
	for e := range dst {
		row := w[e*hidden : (e+1)*hidden]
		var s float64
		for j, v := range row {
			s += float64(v) * float64(x[j])
		}
		dst[e] = float32(s)
	}
}
