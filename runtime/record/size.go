package record

import (
	"math/rand/v2"
	"slices"

	"github.com/lessim/lessim/runtime/gguf"
	"github.com/lessim/lessim/traces"
)

// TraceSize is what a recording's trace size is estimated from, before the
// model is loaded: the trace's Meta and steps of the shape Record writes,
// to measure with traces.EstimateSize (the size model trace synth and trace
// import use too), and how many steps it will have at least.
type TraceSize struct {
	// Meta is the trace's Meta as Record writes it (model spec, lookahead
	// depth, logits, router inputs) without the provenance in Info, a few
	// hundred bytes.
	Meta traces.Meta
	// DecodeSteps are the decode steps: Tokens per prompt, exactly.
	DecodeSteps int64
	// MinPromptSteps is a lower bound of the prefill steps, one per prompt
	// token: no token is longer than the model vocabulary's longest, so a
	// prompt of n bytes has at least n ÷ that many tokens (and at least one;
	// Record refuses a prompt that tokenizes to nothing). The exact count is
	// known only once llama.cpp has tokenized the prompts.
	MinPromptSteps int64
	// PromptExact says MinPromptSteps is the exact prompt token count: the
	// size Record hands Options.CheckSpace after tokenizing.
	PromptExact bool
}

// Steps is the trace's step count as far as it is known before tokenizing:
// DecodeSteps + MinPromptSteps.
func (s TraceSize) Steps() int64 { return s.DecodeSteps + s.MinPromptSteps }

// Sample returns a fresh source of steps shaped as Record writes them for
// o on mc's model (top-k experts and weights, logits, full lookahead score
// vectors, router inputs, compute time), filled with seeded random values.
// NB: full-entropy floats, as recorded scores and logits are: the synthetic
// generator's quantized scores would compress better than a real trace.
// Every step is a decode step (prefill rows carry compute_ns 0, a few bytes
// less), so the estimate errs high.
func (s TraceSize) Sample() traces.Source {
	m := &s.Meta.Model
	src := &shapeSource{r: rand.New(rand.NewPCG(1, 2)), left: int(min(s.Steps(), traces.SizeSample)), perm: make([]int32, m.Experts)}
	src.step.Layers = make([]traces.LayerStep, len(m.Layers))
	for i := range src.step.Layers {
		ls := &src.step.Layers[i]
		ls.Experts, ls.Weights = make([]int32, m.TopK), make([]float32, m.TopK)
		if s.Meta.HasLogits {
			ls.Logits = make([]float32, m.Experts)
		}
		if s.Meta.HasRouterInputs {
			ls.RouterInput = make([]float32, m.Hidden)
		}
		for range min(s.Meta.LookaheadDepth, len(m.Layers)-1-i) {
			ls.Lookahead = append(ls.Lookahead, make([]float32, m.Experts))
		}
	}
	return src
}

// EstimateTraceSize is what Record's trace for o on mc's model is
// estimated from (see TraceSize). o must have passed Validate.
func EstimateTraceSize(o *Options, mc *ModelCheck) TraceSize {
	ps := o.promptSet()
	spec := *mc.Spec
	s := TraceSize{
		Meta: traces.Meta{Model: spec, LookaheadDepth: o.LookaheadDepth, HasLogits: o.Logits,
			HasRouterInputs: o.RouterInputs, Origin: "record"},
		DecodeSteps: int64(len(ps.Prompts)) * int64(o.Tokens),
	}
	longest := longestToken(mc.File)
	for _, p := range ps.Prompts {
		s.MinPromptSteps += max(1, int64((len(p)+longest-1)/longest))
	}
	return s
}

// longestToken is the byte length of the vocabulary's longest token, at
// least 1. A token's text in the GGUF is never shorter than the bytes it
// stands for: byte-level BPE writes each byte as one character of one or
// two bytes, SentencePiece writes a space as "▁" (three bytes) and a byte as
// "<0xNN>". Without a vocabulary (llama.cpp cannot tokenize then) every
// prompt counts one token.
func longestToken(f *gguf.File) int {
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok {
		return 1 << 30
	}
	n := 1
	for _, t := range toks {
		n = max(n, len(t))
	}
	return n
}

// shapeSource yields steps of a recording's shape with random values.
type shapeSource struct {
	r    *rand.Rand
	left int
	pos  int32
	perm []int32
	step traces.Step
}

func (s *shapeSource) Next() bool {
	if s.left <= 0 {
		return false
	}
	s.left--
	s.step.Pos, s.step.Phase, s.step.Pass = s.pos, traces.Decode, s.pos
	s.pos++
	for i := range s.step.Layers {
		s.fill(&s.step.Layers[i])
	}
	return true
}

// fill draws one layer's values: distinct experts, descending weights that
// sum to 1, normal scores, logits and inputs, a compute time in tens of
// microseconds.
func (s *shapeSource) fill(ls *traces.LayerStep) {
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	sum := float32(0)
	for k := range ls.Experts {
		j := k + s.r.IntN(len(s.perm)-k)
		s.perm[k], s.perm[j] = s.perm[j], s.perm[k]
		ls.Experts[k] = s.perm[k]
		ls.Weights[k] = s.r.Float32() + 0.01
		sum += ls.Weights[k]
	}
	for k := range ls.Weights {
		ls.Weights[k] /= sum
	}
	slices.Sort(ls.Weights)
	slices.Reverse(ls.Weights)
	for _, v := range append([][]float32{ls.Logits, ls.RouterInput}, ls.Lookahead...) {
		for i := range v {
			v[i] = float32(s.r.NormFloat64())
		}
	}
	ls.ComputeNS = 10_000 + s.r.Int64N(90_000)
}

func (s *shapeSource) Step() *traces.Step { return &s.step }
func (s *shapeSource) Err() error         { return nil }
