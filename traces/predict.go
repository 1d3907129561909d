package traces

// Stated lookahead predictor.
//
// Traces without router scores (for example the BigMoeOnEdge imports) cannot
// show what a lookahead policy would have predicted. PredictLookahead fills
// LayerStep.Lookahead from a stated model of a predictor instead, so top-k and
// threshold policies can still run, with the predictor quality as an explicit
// parameter rather than a hidden assumption.
//
// The model, for token t, layer l and depth d = 1..Depth (target layer l+d
// with true selection S, k = |S|, E experts):
//
//   - each expert of S scores high with probability R_d = Recall − (d−1)·DepthPenalty;
//   - each other expert scores high with probability FalsePositives / (E − k),
//     so on average FalsePositives wrong experts look predicted;
//   - high scores are uniform in [3, 4.5), all others triangular in (−3, 1),
//     so a score threshold between 1 and 3 sees exactly the high set. A top-k
//     policy sees recall R_d plus the true experts that fill the remaining
//     slots by chance, about (1−R_d)·(k−kR_d−FP)/(E−kR_d−FP) when the high set
//     has fewer than k members, and a little less than R_d when it has more.
//
// Lookahead[d−1] is nil when the token has no recorded selection at layer l+d
// (e.g. llama.cpp's last prefill layer); layers near the end carry fewer than
// Depth vectors (len = min(Depth, L−1−l)), as synthetic traces do.

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
)

// PredictOptions are the stated predictor's parameters; start from DefaultPredictOptions.
type PredictOptions struct {
	Depth          int     // lookahead depth to fill, ≥ 1
	Recall         float64 // probability a true expert of layer l+1 scores high, in [0,1]
	FalsePositives float64 // expected wrong experts scoring high per token, layer and depth, ≥ 0
	DepthPenalty   float64 // recall lost per extra depth
	Seed           uint64
	// Replace allows overwriting scores the trace already carries.
	Replace bool
}

// DefaultPredictOptions returns depth 1, recall 0.807, 1.5 false positives,
// depth penalty 0.0375, seed 1.
//
// Reference: DESIGN.md, stale-gate next-layer router recall 80.7% on
// Qwen3.6-35B-A3B (top-8), about 3.5–4 points per extra layer; 1.5 false
// positives = 8 × (1 − 0.807), what a top-8 prediction of that recall carries.
func DefaultPredictOptions() PredictOptions {
	return PredictOptions{Depth: 1, Recall: 0.807, FalsePositives: 1.5, DepthPenalty: 0.0375, Seed: 1}
}

// Validate reports every problem with o for a trace with meta at once.
func (o PredictOptions) Validate(meta Meta) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	L, E, K := len(meta.Model.Layers), meta.Model.Experts, meta.Model.TopK
	if L < 2 {
		add("predict: the trace's model has %d MoE layers, lookahead needs ≥ 2", L)
	}
	if E < 1 {
		add("predict: the trace's model has %d experts per layer", E)
	}
	if o.Depth < 1 || (L >= 2 && o.Depth > L-1) {
		add("predict: depth %d must be in [1, %d]", o.Depth, max(L-1, 1))
	}
	if !(o.Recall >= 0 && o.Recall <= 1) {
		add("predict: recall %v must be in [0, 1]", o.Recall)
	}
	if !(o.DepthPenalty >= 0 && o.DepthPenalty <= 1) {
		add("predict: depth penalty %v must be in [0, 1]", o.DepthPenalty)
	} else if o.Depth > 1 && o.Recall-float64(o.Depth-1)*o.DepthPenalty < 0 {
		add("predict: recall %v minus %d × depth penalty %v is negative", o.Recall, o.Depth-1, o.DepthPenalty)
	}
	if !(o.FalsePositives >= 0) || (E > K && o.FalsePositives > float64(E-K)) {
		add("predict: false positives %v must be in [0, experts − top-k = %d]", o.FalsePositives, max(E-K, 0))
	}
	if meta.LookaheadDepth > 0 && !o.Replace {
		add("predict: the trace already carries lookahead scores (depth %d); set Replace to overwrite them", meta.LookaheadDepth)
	}
	return errors.Join(errs...)
}

// PredictLookahead returns a copy of steps whose Lookahead holds scores from
// the stated predictor (see the comment at the top of predict.go), and meta
// updated with the depth and the model in Info["predictor"]. The copies share
// Experts, Weights, Logits, Hit and RouterInput with steps, which are not
// modified. Same inputs and seed give the same scores.
func PredictLookahead(meta Meta, steps []Step, opt PredictOptions) (Meta, []Step, error) {
	if err := opt.Validate(meta); err != nil {
		return Meta{}, nil, err
	}
	L, E := len(meta.Model.Layers), meta.Model.Experts
	vectors := 0
	for i, st := range steps {
		if len(st.Layers) != L {
			return Meta{}, nil, fmt.Errorf("predict: step %d (seq %d pos %d): %d layers, the model has %d", i, st.Seq, st.Pos, len(st.Layers), L)
		}
		for l, ls := range st.Layers {
			for _, e := range ls.Experts {
				if e < 0 || int(e) >= E {
					return Meta{}, nil, fmt.Errorf("predict: step %d (seq %d pos %d) layer %d: expert %d out of range [0, %d)", i, st.Seq, st.Pos, l, e, E)
				}
			}
			for d := range min(opt.Depth, L-1-l) {
				if len(st.Layers[l+d+1].Experts) > 0 {
					vectors++
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(opt.Seed, 0x707265646963)) // "predic"
	out := make([]Step, len(steps))
	layers := make([]LayerStep, len(steps)*L)
	heads := make([][]float32, 0, len(steps)*L*opt.Depth)
	slab := make([]float32, vectors*E)
	mark := make([]bool, E)
	for i, st := range steps {
		out[i] = st
		out[i].Layers = layers[i*L : (i+1)*L : (i+1)*L]
		copy(out[i].Layers, st.Layers)
		for l := range out[i].Layers {
			ls := &out[i].Layers[l]
			n := min(opt.Depth, L-1-l)
			if n <= 0 {
				ls.Lookahead = nil
				continue
			}
			start := len(heads)
			for d := range n {
				truth := st.Layers[l+d+1].Experts
				if len(truth) == 0 {
					heads = append(heads, nil)
					continue
				}
				v := slab[:E:E]
				slab = slab[E:]
				recall := max(0, opt.Recall-float64(d)*opt.DepthPenalty)
				predictScores(r, v, truth, recall, opt.FalsePositives, mark)
				heads = append(heads, v)
			}
			ls.Lookahead = heads[start:len(heads):len(heads)]
		}
	}
	m := meta
	m.LookaheadDepth = opt.Depth
	m.Info = maps.Clone(meta.Info)
	if m.Info == nil {
		m.Info = map[string]string{}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	m.Info["predictor"] = fmt.Sprintf("stated recall %s, fp %s, seed %d, depth %d, depth penalty %s: "+
		"each true expert of layer l+d scores high with probability recall − (d−1)·penalty, each other expert with probability fp/(experts − k); "+
		"high scores uniform in [3, 4.5), others triangular in (−3, 1)",
		f(opt.Recall), f(opt.FalsePositives), opt.Seed, opt.Depth, f(opt.DepthPenalty))
	return m, out, nil
}

// PredictScores fills v (len = experts) with one lookahead vector of the
// stated predictor for a target layer whose true selection is truth: each
// true expert scores high with probability recall, each other expert with
// probability fp / (experts − k) (see the comment at the top of predict.go).
// mark is scratch of len(v), all false, and is left so.
func PredictScores(r *rand.Rand, v []float32, truth []int32, recall, fp float64, mark []bool) {
	predictScores(r, v, truth, recall, fp, mark)
}

// predictScores fills v for a target layer whose true selection is truth.
func predictScores(r *rand.Rand, v []float32, truth []int32, recall, fp float64, mark []bool) {
	for _, e := range truth {
		mark[e] = true
	}
	pFP := 0.0
	if others := len(v) - len(truth); others > 0 {
		pFP = min(1, fp/float64(others))
	}
	for e := range v {
		p := pFP
		if mark[e] {
			p = recall
		}
		if r.Float64() < p {
			v[e] = 3 + 1.5*r.Float32()
		} else {
			u := r.Uint64()
			a := float32(u>>40) / (1 << 24)
			b := float32(u&(1<<24-1)) / (1 << 24)
			v[e] = 2*(a+b) - 3
		}
	}
	for _, e := range truth {
		mark[e] = false
	}
}
