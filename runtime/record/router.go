package record

import (
	"fmt"
	"strings"
)

// Router is one MoE layer's router as the GGUF stores it: W is experts rows
// of hidden floats (ffn_gate_inp, ne = [hidden, experts]) and Bias the
// optional per-expert bias (ffn_gate_inp.bias; gpt-oss has one), both
// dequantized to float32. record and live both read routers with
// ModelCheck.Routers and score with Router.Scores, so a trace's lookahead
// and a live run's are the same numbers.
type Router struct {
	W, Bias []float32
}

// Scores writes W·x (+ Bias) into dst, one score per expert. Accumulation is
// float64 in row order, so results are deterministic.
func (r Router) Scores(dst, x []float32) {
	hidden := len(x)
	for e := range dst {
		row := r.W[e*hidden : (e+1)*hidden]
		var s float64
		for j, v := range row {
			s += float64(v) * float64(x[j])
		}
		dst[e] = float32(s)
	}
	for e, b := range r.Bias {
		dst[e] += b
	}
}

// Routers reads every MoE layer's router, in MoE layer order.
func (mc *ModelCheck) Routers() ([]Router, error) {
	out := make([]Router, len(mc.MoE.Layers))
	want := mc.MoE.Experts * mc.MoE.Hidden
	for i, l := range mc.MoE.Layers {
		w, err := mc.File.ReadTensorF32(l.Router)
		if err != nil {
			return nil, fmt.Errorf("lookahead needs the routers: %w", err)
		}
		if len(w) != want {
			return nil, fmt.Errorf("model %s: router %s has %d values, want experts %d × hidden %d", mc.File.Name, l.Router, len(w), mc.MoE.Experts, mc.MoE.Hidden)
		}
		out[i].W = w
		bias := strings.TrimSuffix(l.Router, ".weight") + ".bias"
		if _, ok := mc.File.Tensor(bias); ok {
			b, err := mc.File.ReadTensorF32(bias)
			if err != nil {
				return nil, fmt.Errorf("lookahead needs the router biases: %w", err)
			}
			if len(b) != mc.MoE.Experts {
				return nil, fmt.Errorf("model %s: router bias %s has %d values, want %d experts", mc.File.Name, bias, len(b), mc.MoE.Experts)
			}
			out[i].Bias = b
		}
	}
	return out, nil
}
