package traces

// Synthetic traces.
//
// Synth generates a routing trace for any model spec from a small, stated
// model of routing, so the simulator can run before anyone records a real
// trace. Every random draw comes from one of three PCG streams seeded by
// SynthOptions.Seed: the same spec and options give the same steps, bit for
// bit. The routing (popularity, reuse, rank order) has its own stream, so the
// experts selected do not depend on the gate values, the logits
// (SynthOptions.Logits) or the lookahead settings (LookaheadRecall,
// LookaheadDepth, DepthPenalty): a sweep over those compares one routing.
// Gate weights and logits draw from the second stream, lookahead scores from
// the third.
//
// The routing model, per MoE layer l of L and token t:
//
//   - Popularity. Each layer ranks its experts by a random permutation; the
//     expert of rank r is drawn with probability ∝ 1/(r+1)^s_l (Zipf-like),
//     s_l = Skew·(0.5 + 0.5·l/(L-1)). Early layers are flatter and
//     concentration rises with depth, as the reference route traces show
//     (README of the BigMoeOnEdge traces: qwen layer 0 touched 107 of 128
//     experts in 128 tokens). The default Skew 1.3 was chosen so that 128
//     tokens of the Qwen3-30B-A3B shape (48 layers, 128 experts, top-6, reuse
//     0.37) measure a static hot-list recall of about 0.30 and a reuse distance
//     of median 2, p90 27, near the BigMoeOnEdge traces (0.375 and 0.395,
//     median 3, p90 19 and 22). A Zipf law has a lighter head than those
//     traces' most popular experts, so it cannot match both at once.
//   - Reuse. Each expert selected by the previous token of the same sequence at
//     layer l is kept with probability Reuse; the rest of the top-k is drawn
//     from the popularity distribution, excluding the previous token's experts.
//     So the expected next-token overlap |sel_t ∩ sel_{t-1}|/k is exactly Reuse.
//     Reference: DESIGN.md "About 45% of an expert selection repeats at the
//     next token (median reuse distance 2)".
//   - Gate weights. The k selected gate logits are 1.5 + 0.6·N(0,1), sorted
//     descending; weights are their softmax (sum 1, descending). With Logits,
//     the other experts get logits N(-1,1) capped just below the smallest
//     selected logit, so the top-k of the logits is the selection.
//   - Lookahead. At depth d the scores for layer l+d are a full float32
//     vector whose top-k holds m of layer l+d's true experts, m = Recall_d·k
//     rounded randomly per token (so the mean is exactly Recall_d·k), with
//     Recall_d = LookaheadRecall − (d−1)·DepthPenalty. The top-k is filled
//     with false positives drawn from layer l+d's popularity. Score bands
//     (logit-like): predicted [3, 4.5); missed true experts [0.5, 2.5);
//     everyone else triangular noise in [−3, 1). Reference: DESIGN.md, stale-gate
//     next-layer recall 80.7% on Qwen3.6-35B-A3B, each extra layer of depth
//     about 3.5–4 points.
//
// Positions: sequence s has PromptTokens prefill tokens (one shared Pass)
// followed by Tokens decode tokens (one Pass each); Pos counts from 0 within a
// sequence and Pass counts from 0 over the whole trace. A sequence starts with
// no previous token, so its first token is drawn from popularity alone.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/lessim/lessim/devices"
)

// SynthOptions are the parameters of the synthetic routing model; see the
// comment at the top of synth.go. Start from DefaultSynthOptions: zero is a
// meaningful value for most fields (no reuse, no lookahead).
type SynthOptions struct {
	Seed         uint64  // seed of the PCG generator
	Tokens       int     // decode tokens per sequence
	PromptTokens int     // prefill tokens per sequence (one batched pass)
	Sequences    int     // independent sequences (prompts), ≥ 1
	Skew         float64 // Zipf exponent of expert popularity at the deepest layer, in [0, MaxSkew]
	Reuse        float64 // probability a previous-token expert is selected again, in [0,1]
	// LookaheadRecall is the mean share of layer l+1's true experts in the top-k
	// of the depth-1 lookahead scores, in [0,1].
	LookaheadRecall float64
	// LookaheadDepth is how many next layers get scores (0 = none).
	LookaheadDepth int
	// DepthPenalty is the recall lost per extra depth (0.0375 = 3.75 points).
	DepthPenalty float64
	// Logits also fills LayerStep.Logits (full router logits, len = experts).
	Logits bool
}

// MaxSkew is the largest Skew Validate takes. Routing measurements fit
// exponents near 1 (the default 1.3); at 10 the second most popular expert
// is already drawn 1/1024 as often as the first, so a larger exponent
// describes no router (and past about 1000 the weights underflow to 0).
const MaxSkew = 10

// DefaultSynthOptions returns the defaults: seed 1, 2,000 decode tokens, no
// prompt, one sequence, Skew 1.3, Reuse 0.45, LookaheadRecall 0.807 at depth 1,
// DepthPenalty 0.0375, no logits.
//
// Reference: Reuse 0.45 from DESIGN.md ("About 45% of an expert selection
// repeats at the next token"); recall 0.807 and the 3.5–4 points per extra
// layer from DESIGN.md (stale-gate router on Qwen3.6-35B-A3B).
func DefaultSynthOptions() SynthOptions {
	return SynthOptions{
		Seed:            1,
		Tokens:          2000,
		Sequences:       1,
		Skew:            1.3,
		Reuse:           0.45,
		LookaheadRecall: 0.807,
		LookaheadDepth:  1,
		DepthPenalty:    0.0375,
	}
}

// Validate reports every problem with o for a model of spec's shape at once.
func (o SynthOptions) Validate(spec *devices.ModelSpec) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if spec == nil {
		return errors.New("synth: model spec is nil")
	}
	L := len(spec.Layers)
	if L == 0 {
		add("synth: model %q has no MoE layers", spec.Name)
	}
	if spec.Experts <= 0 {
		add("synth: model %q has %d experts per layer, need ≥ 1", spec.Name, spec.Experts)
	}
	if spec.TopK <= 0 || spec.TopK > spec.Experts {
		add("synth: model %q top-k %d must be in [1, experts=%d]", spec.Name, spec.TopK, spec.Experts)
	}
	if o.Tokens < 0 {
		add("synth: tokens %d must be ≥ 0", o.Tokens)
	}
	if o.PromptTokens < 0 {
		add("synth: prompt tokens %d must be ≥ 0", o.PromptTokens)
	}
	if o.Tokens+o.PromptTokens <= 0 && o.Tokens >= 0 && o.PromptTokens >= 0 {
		add("synth: tokens + prompt tokens must be ≥ 1")
	}
	if o.Sequences < 1 {
		add("synth: sequences %d must be ≥ 1", o.Sequences)
	}
	if !(o.Skew >= 0 && o.Skew <= MaxSkew) {
		add("synth: skew %v must be in [0, %d]: a Zipf exponent; at %d the second expert is drawn 1/1024 as often as the first", o.Skew, MaxSkew, MaxSkew)
	}
	if !(o.Reuse >= 0 && o.Reuse <= 1) {
		add("synth: reuse %v must be in [0, 1]", o.Reuse)
	}
	if !(o.LookaheadRecall >= 0 && o.LookaheadRecall <= 1) {
		add("synth: lookahead recall %v must be in [0, 1]", o.LookaheadRecall)
	}
	if !(o.DepthPenalty >= 0 && o.DepthPenalty <= 1) {
		add("synth: depth penalty %v must be in [0, 1]", o.DepthPenalty)
	}
	if o.LookaheadDepth < 0 {
		add("synth: lookahead depth %d must be ≥ 0", o.LookaheadDepth)
	} else if L > 0 && o.LookaheadDepth > L-1 {
		add("synth: lookahead depth %d exceeds the %d following layers of a %d-layer model", o.LookaheadDepth, L-1, L)
	} else if o.LookaheadDepth > 1 && o.LookaheadRecall-float64(o.LookaheadDepth-1)*o.DepthPenalty < 0 {
		add("synth: lookahead recall %v minus %d × depth penalty %v is negative", o.LookaheadRecall, o.LookaheadDepth-1, o.DepthPenalty)
	}
	const maxSteps = 1 << 31
	if o.Sequences > 0 && o.Tokens >= 0 && o.PromptTokens >= 0 &&
		float64(o.Sequences)*float64(o.Tokens+o.PromptTokens) >= maxSteps {
		add("synth: %d sequences × %d tokens is too many steps", o.Sequences, o.Tokens+o.PromptTokens)
	}
	return errors.Join(errs...)
}

// synthMeta is the Meta of a synthetic trace: the spec, the depth and every
// generator parameter in Info.
func synthMeta(spec *devices.ModelSpec, o SynthOptions) Meta {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return Meta{
		Model:          cloneModelSpecForTrace(spec),
		LookaheadDepth: o.LookaheadDepth,
		HasLogits:      o.Logits,
		Origin:         "synth",
		Info: map[string]string{
			"generator":        "lessim synth v1 (zipf popularity per layer, previous-token reuse, stated lookahead recall)",
			"seed":             strconv.FormatUint(o.Seed, 10),
			"tokens":           strconv.Itoa(o.Tokens),
			"prompt_tokens":    strconv.Itoa(o.PromptTokens),
			"sequences":        strconv.Itoa(o.Sequences),
			"skew":             f(o.Skew),
			"reuse":            f(o.Reuse),
			"lookahead_recall": f(o.LookaheadRecall),
			"lookahead_depth":  strconv.Itoa(o.LookaheadDepth),
			"depth_penalty":    f(o.DepthPenalty),
			"logits":           strconv.FormatBool(o.Logits),
		},
	}
}

// cloneModelSpecForTrace deep-copies spec so a trace's Meta does not alias the caller's spec.
func cloneModelSpecForTrace(spec *devices.ModelSpec) devices.ModelSpec {
	c := *spec
	c.Layers = slices.Clone(spec.Layers)
	for i := range c.Layers {
		c.Layers[i].Tensors = slices.Clone(c.Layers[i].Tensors)
	}
	return c
}

// Synth generates a synthetic trace for spec; see the comment at the top of
// synth.go for the model. The steps share a few large backing arrays.
func Synth(spec *devices.ModelSpec, opt SynthOptions) (Meta, []Step, error) {
	if err := opt.Validate(spec); err != nil {
		return Meta{}, nil, err
	}
	g := newSynthGen(spec, opt)
	n := opt.Sequences * (opt.PromptTokens + opt.Tokens)
	L, E, K := g.L, g.E, g.K
	depths := 0 // lookahead vectors per step
	for l := range L {
		depths += g.depthAt(l)
	}
	steps := make([]Step, n)
	layers := make([]LayerStep, n*L)
	experts := make([]int32, n*L*K)
	weights := make([]float32, n*L*K)
	look := make([][]float32, n*depths)
	scores := make([]float32, n*depths*E)
	var logits []float32
	if opt.Logits {
		logits = make([]float32, n*L*E)
	}
	for i := range steps {
		steps[i].Layers = layers[i*L : (i+1)*L : (i+1)*L]
		for l := range steps[i].Layers {
			ls := &steps[i].Layers[l]
			j := i*L + l
			ls.Experts = experts[j*K : (j+1)*K : (j+1)*K]
			ls.Weights = weights[j*K : (j+1)*K : (j+1)*K]
			if logits != nil {
				ls.Logits = logits[j*E : (j+1)*E : (j+1)*E]
			}
			if d := g.depthAt(l); d > 0 {
				ls.Lookahead = look[:d:d]
				look = look[d:]
				for k := range d {
					ls.Lookahead[k] = scores[:E:E]
					scores = scores[E:]
				}
			}
		}
		g.next(&steps[i])
	}
	return synthMeta(spec, opt), steps, nil
}

// SynthSource returns the same trace as Synth as a streaming Source that
// generates one step at a time into reused buffers (constant memory).
func SynthSource(spec *devices.ModelSpec, opt SynthOptions) (Meta, Source, error) {
	if err := opt.Validate(spec); err != nil {
		return Meta{}, nil, err
	}
	g := newSynthGen(spec, opt)
	s := &synthSource{g: g, left: opt.Sequences * (opt.PromptTokens + opt.Tokens)}
	s.step.Layers = make([]LayerStep, g.L)
	for l := range s.step.Layers {
		ls := &s.step.Layers[l]
		ls.Experts = make([]int32, g.K)
		ls.Weights = make([]float32, g.K)
		if opt.Logits {
			ls.Logits = make([]float32, g.E)
		}
		if d := g.depthAt(l); d > 0 {
			ls.Lookahead = make([][]float32, d)
			for k := range d {
				ls.Lookahead[k] = make([]float32, g.E)
			}
		}
	}
	return synthMeta(spec, opt), s, nil
}

// synthSource streams a synthetic trace.
type synthSource struct {
	g    *synthGen
	left int
	step Step
}

func (s *synthSource) Next() bool {
	if s.left <= 0 {
		return false
	}
	s.left--
	s.g.next(&s.step)
	return true
}

func (s *synthSource) Step() *Step { return &s.step }
func (s *synthSource) Err() error  { return nil }

// synthGen is the generator state shared by Synth and SynthSource.
type synthGen struct {
	opt     SynthOptions
	r       *rand.Rand // routing: popularity, reuse, rank order
	gates   *rand.Rand // gate weights and logits
	ahead   *rand.Rand // lookahead scores
	L, E, K int
	pop     []synthAlias // per layer popularity sampler
	prev    []int32      // L×K previous token's selection (valid when hasPrev)
	hasPrev bool
	mark    []uint32 // E stamps: mark[e] == stamp means e is excluded
	stamp   uint32
	tmp     []int32   // K scratch
	gate    []float64 // K scratch
	seq     int32
	pos     int32 // next position within seq
	pass    int32 // pass of the current token
	started bool
}

func newSynthGen(spec *devices.ModelSpec, opt SynthOptions) *synthGen {
	L, E, K := len(spec.Layers), spec.Experts, spec.TopK
	g := &synthGen{
		opt:   opt,
		r:     rand.New(rand.NewPCG(opt.Seed, 0x6c657373696d)),     // "lessim"
		gates: rand.New(rand.NewPCG(opt.Seed, 0x6c65737367617465)), // "lessgate"
		ahead: rand.New(rand.NewPCG(opt.Seed, 0x6c65737361686561)), // "lessahea"
		L:     L,
		E:     E,
		K:     K,
		pop:   make([]synthAlias, L),
		prev:  make([]int32, L*K),
		mark:  make([]uint32, E),
		tmp:   make([]int32, 0, K),
		gate:  make([]float64, K),
		pass:  -1,
	}
	w := make([]float64, E)
	for l := range L {
		frac := 0.0
		if L > 1 {
			frac = float64(l) / float64(L-1)
		}
		s := opt.Skew * (0.5 + 0.5*frac)
		perm := g.r.Perm(E)
		for rank, e := range perm {
			w[e] = math.Pow(float64(rank+1), -s)
		}
		g.pop[l] = newSynthAlias(w)
	}
	return g
}

// depthAt is the number of lookahead vectors layer l carries.
func (g *synthGen) depthAt(l int) int { return min(g.opt.LookaheadDepth, g.L-1-l) }

// next fills st (whose buffers are sized by Synth/SynthSource) with the next token.
func (g *synthGen) next(st *Step) {
	per := int32(g.opt.PromptTokens + g.opt.Tokens)
	if !g.started {
		g.started = true
	} else if g.pos == per {
		g.seq++
		g.pos = 0
		g.hasPrev = false
	}
	phase := Decode
	if g.pos < int32(g.opt.PromptTokens) {
		phase = Prefill
	}
	if phase == Decode || g.pos == 0 {
		g.pass++
	}
	st.Seq, st.Pos, st.Phase, st.Pass = g.seq, g.pos, phase, g.pass
	g.pos++

	for l := range g.L {
		g.selectLayer(l, st.Layers[l].Experts)
	}
	for l := range g.L {
		ls := &st.Layers[l]
		g.gateWeights(ls)
		for d := range ls.Lookahead {
			g.lookahead(l+d+1, st.Layers[l+d+1].Experts, g.recallAt(d+1), ls.Lookahead[d])
		}
	}
	for l := range g.L {
		copy(g.prev[l*g.K:(l+1)*g.K], st.Layers[l].Experts)
	}
	g.hasPrev = true
}

// recallAt is the lookahead recall target at depth d ≥ 1.
func (g *synthGen) recallAt(d int) float64 {
	return max(0, g.opt.LookaheadRecall-float64(d-1)*g.opt.DepthPenalty)
}

// newStamp starts a new exclusion set.
func (g *synthGen) newStamp() uint32 {
	g.stamp++
	if g.stamp == 0 { // NB: wrapped after 2^32 sets; old marks could collide.
		clear(g.mark)
		g.stamp = 1
	}
	return g.stamp
}

// selectLayer draws layer l's top-k into dst (rank order decided later by gateWeights).
func (g *synthGen) selectLayer(l int, dst []int32) {
	st := g.newStamp()
	chosen := g.tmp[:0]
	if g.hasPrev {
		prev := g.prev[l*g.K : (l+1)*g.K]
		for _, e := range prev {
			g.mark[e] = st
			if g.r.Float64() < g.opt.Reuse {
				chosen = append(chosen, e)
			}
		}
		if g.E-g.K < g.K-len(chosen) { // NB: too few experts left outside prev: allow dropped prev experts again.
			st = g.newStamp()
			for _, e := range chosen {
				g.mark[e] = st
			}
		}
	}
	chosen = g.fill(g.r, &g.pop[l], chosen, st, g.K)
	// Random rank order: the gate logits are assigned to ranks afterwards.
	for i := len(chosen) - 1; i > 0; i-- {
		j := g.r.IntN(i + 1)
		chosen[i], chosen[j] = chosen[j], chosen[i]
	}
	copy(dst, chosen)
	g.tmp = chosen[:0]
}

// fill appends draws from a with r (excluding marked experts, marking the
// new ones) until chosen has want experts; enough unmarked experts must exist.
func (g *synthGen) fill(r *rand.Rand, a *synthAlias, chosen []int32, st uint32, want int) []int32 {
	tries := 0
	for len(chosen) < want {
		var e int32
		if tries < 64 {
			e = a.sample(r)
			tries++
			if g.mark[e] == st {
				continue
			}
		} else {
			// NB: the excluded experts hold most of the mass; draw exactly from the rest.
			e = a.sampleExcluding(r, g.mark, st)
		}
		g.mark[e] = st
		chosen = append(chosen, e)
	}
	return chosen
}

// gateWeights fills normalized descending weights (and logits when present) for ls.Experts.
func (g *synthGen) gateWeights(ls *LayerStep) {
	z := g.gate[:len(ls.Experts)]
	for i := range z {
		z[i] = 1.5 + 0.6*g.gates.NormFloat64()
	}
	slices.Sort(z)
	slices.Reverse(z)
	sum := 0.0
	for i := range z {
		sum += math.Exp(z[i] - z[0])
	}
	for i := range z {
		ls.Weights[i] = float32(math.Exp(z[i]-z[0]) / sum)
	}
	if ls.Logits == nil {
		return
	}
	zmin := float32(z[len(z)-1])
	for e := range ls.Logits {
		v := float32(g.gates.NormFloat64() - 1)
		ls.Logits[e] = min(v, zmin-0.01)
	}
	for i, e := range ls.Experts {
		ls.Logits[e] = float32(z[i])
	}
}

// lookahead fills out with scores for a layer whose true selection is truth and
// whose popularity sampler is g.pop[target].
func (g *synthGen) lookahead(target int, truth []int32, recall float64, out []float32) {
	K := len(truth)
	want := recall * float64(K)
	m := int(want)
	if g.ahead.Float64() < want-float64(m) {
		m++
	}
	// Triangular low noise in (−3, 1): the sum of two 16-bit uniforms, two
	// scores per 64-bit draw (this loop is most of Synth's time).
	const unit = 2.0 / (1 << 16)
	for e := 0; e < len(out); e += 2 {
		u := g.ahead.Uint64()
		out[e] = float32(u>>48+(u>>32)&0xffff)*unit - 3
		if e+1 < len(out) {
			out[e+1] = float32((u>>16)&0xffff+u&0xffff)*unit - 3
		}
	}
	hits := append(g.tmp[:0], truth...)
	for i := range m { // partial Fisher-Yates: hits[:m] are predicted
		j := i + g.ahead.IntN(K-i)
		hits[i], hits[j] = hits[j], hits[i]
	}
	st := g.newStamp()
	for i, e := range hits {
		g.mark[e] = st
		if i < m {
			out[e] = 3 + 1.5*g.ahead.Float32()
		} else {
			out[e] = 0.5 + 2*g.ahead.Float32()
		}
	}
	// K−m false positives from the target layer's popularity (fewer when the
	// layer has fewer than K experts outside the truth).
	fp := g.fill(g.ahead, &g.pop[target], hits[:0], st, min(K-m, g.E-K))
	for _, e := range fp {
		out[e] = 3 + 1.5*g.ahead.Float32()
	}
	g.tmp = fp[:0]
}

// synthAlias samples an index with given weights in O(1) (Vose's alias method).
type synthAlias struct {
	prob  []float64
	alias []int32
	w     []float64 // normalized weights, for sampleExcluding
}

func newSynthAlias(w []float64) synthAlias {
	n := len(w)
	a := synthAlias{prob: make([]float64, n), alias: make([]int32, n), w: make([]float64, n)}
	sum := 0.0
	for _, v := range w {
		sum += v
	}
	scaled := make([]float64, n)
	var small, large []int32
	for i, v := range w {
		a.w[i] = v / sum
		scaled[i] = v / sum * float64(n)
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range large {
		a.prob[i], a.alias[i] = 1, i
	}
	for _, i := range small { // rounding leftovers
		a.prob[i], a.alias[i] = 1, i
	}
	return a
}

func (a *synthAlias) sample(r *rand.Rand) int32 {
	i := r.IntN(len(a.prob))
	if r.Float64() < a.prob[i] {
		return int32(i)
	}
	return a.alias[i]
}

// sampleExcluding draws exactly from the weights restricted to experts with
// mark[e] != st. At least one such expert must exist.
func (a *synthAlias) sampleExcluding(r *rand.Rand, mark []uint32, st uint32) int32 {
	total := 0.0
	last := int32(-1)
	for e, w := range a.w {
		if mark[e] != st {
			total += w
			last = int32(e)
		}
	}
	x := r.Float64() * total
	for e, w := range a.w {
		if mark[e] != st {
			if x < w {
				return int32(e)
			}
			x -= w
		}
	}
	return last
}
