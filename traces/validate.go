package traces

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// StepError lists every problem Validate found in one step.
type StepError struct {
	Seq, Pos int32
	// Problems are in layer order; at most maxStepProblems are kept.
	Problems []StepProblem
	// More counts problems found beyond those kept.
	More int
}

// StepProblem is one reason a step is invalid.
type StepProblem struct {
	// Layer is the MoE layer index the problem is in, or -1 for the whole step.
	Layer int
	Msg   string
}

// maxStepProblems bounds StepError.Problems so one garbage step cannot make
// a megabyte error message.
const maxStepProblems = 8

// Error renders all problems: "token (seq 0, pos 3): layer 5: expert 300 out of range [0,256); ...".
func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "token (seq %d, pos %d): ", e.Seq, e.Pos)
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		if p.Layer >= 0 {
			fmt.Fprintf(&b, "layer %d: ", p.Layer)
		}
		b.WriteString(p.Msg)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more problems", e.More)
	}
	return b.String()
}

// Validate checks one step against the trace's meta: one LayerStep per MoE
// layer; experts in [0, experts) without duplicates, at most top_k of them,
// exactly top_k in a decode token (only a prefill token may leave a layer
// unrouted);
// weights and hit flags absent or one per expert; logits, lookahead scores and
// router inputs absent or full-length and present only when meta says the
// trace carries them; no lookahead past the last MoE layer; lookahead
// scores finite (other floats are not range-checked). It returns a *StepError listing every problem, or nil.
// meta itself is assumed valid (Create, NewWriter and Open check it).
func Validate(meta Meta, s *Step) error {
	if s == nil {
		return errors.New("nil step")
	}
	var c stepChecker
	if e := c.check(&meta, s); e != nil {
		return e
	}
	return nil
}

// stepChecker is Validate with a reusable scratch bitmap, for the writer and
// reader which validate every step.
type stepChecker struct {
	seen []uint64 // bitmap over experts, all zero between uses
	err  StepError
}

// check returns nil or a *StepError valid until the next call.
func (c *stepChecker) check(m *Meta, s *Step) *StepError {
	c.err = StepError{Seq: s.Seq, Pos: s.Pos, Problems: c.err.Problems[:0]}
	if s.Seq < 0 {
		c.add(-1, "seq %d is negative", s.Seq)
	}
	if s.Pos < 0 {
		c.add(-1, "pos %d is negative", s.Pos)
	}
	if s.Phase > Draft {
		c.add(-1, "phase %d invalid (0 prefill, 1 decode, 2 rejected draft)", s.Phase)
	}
	if s.Phase == Draft && s.Pass < 0 {
		c.add(-1, "a rejected draft needs the pass that verified it (pass %d)", s.Pass)
	}
	if s.Pass < -1 {
		c.add(-1, "pass %d invalid (-1 means unknown)", s.Pass)
	}
	if len(s.Layers) != len(m.Model.Layers) {
		c.add(-1, "has %d layers, want %d", len(s.Layers), len(m.Model.Layers))
	}
	if words := (m.Model.Experts + 63) / 64; len(c.seen) < words {
		c.seen = make([]uint64, words)
	}
	for i := range s.Layers {
		c.checkLayer(m, s, i)
	}
	if len(c.err.Problems) == 0 {
		return nil
	}
	return &c.err
}

// add records a problem of layer (-1: the step's own), counting those past
// maxStepProblems.
func (c *stepChecker) add(layer int, format string, a ...any) {
	if len(c.err.Problems) == maxStepProblems {
		c.err.More++
		return
	}
	c.err.Problems = append(c.err.Problems, StepProblem{Layer: layer, Msg: fmt.Sprintf(format, a...)})
}

// checkLayer checks layer i of s: its selection, and each optional
// column's length against the model and the trace's meta.
func (c *stepChecker) checkLayer(m *Meta, s *Step, i int) {
	layers, experts := len(m.Model.Layers), m.Model.Experts
	ls := &s.Layers[i]
	n := len(ls.Experts)
	// NB: zero experts is valid in prefill only: in a batched prefill
	// llama.cpp keeps only the output row at the last layer, so other
	// prompt tokens are not routed there (imported and recorded traces
	// both show it). A decode pass routes its token at every MoE layer.
	routed := s.Phase == Decode || s.Phase == Draft
	if n == 0 && routed {
		c.add(i, "a decode token routes no experts (a decode pass routes every MoE layer)")
	}
	// NB: a decode token routes exactly top_k experts: fewer means the
	// meta's top_k was edited (or the rows cut), and would change every
	// result that reads it (candidate counts, the smallest cache) silently.
	if k := m.Model.TopK; k > 0 && (n > k || routed && n > 0 && n < k) {
		c.add(i, "%d experts selected, the model (%s) routes each token to %d", n, m.Model.Name, k)
	}
	for _, e := range ls.Experts {
		if e < 0 || int(e) >= experts {
			c.add(i, "expert %d out of range [0,%d)", e, experts)
			continue
		}
		w, bit := e/64, uint64(1)<<(e%64)
		if c.seen[w]&bit != 0 {
			c.add(i, "expert %d selected twice", e)
		}
		c.seen[w] |= bit
	}
	for _, e := range ls.Experts { // clear the bitmap for the next layer
		if e >= 0 && int(e) < experts {
			c.seen[e/64] = 0
		}
	}
	if ls.Weights != nil && len(ls.Weights) != n {
		c.add(i, "%d weights for %d experts", len(ls.Weights), n)
	}
	if ls.Hit != nil && len(ls.Hit) != n {
		c.add(i, "%d hit flags for %d experts", len(ls.Hit), n)
	}
	switch {
	case ls.Logits != nil && !m.HasLogits:
		c.add(i, "has logits but the trace meta says has_logits false")
	case ls.Logits != nil && len(ls.Logits) != experts:
		c.add(i, "%d logits, want %d", len(ls.Logits), experts)
	}
	if len(ls.Lookahead) > m.LookaheadDepth {
		c.add(i, "%d lookahead depths, the trace meta says lookahead_depth %d", len(ls.Lookahead), m.LookaheadDepth)
	}
	for d, sc := range ls.Lookahead {
		switch {
		case sc == nil:
		case i+d+1 >= layers:
			c.add(i, "lookahead depth %d scores layer %d, past the last MoE layer %d", d+1, i+d+1, layers-1)
		case len(sc) != experts:
			c.add(i, "lookahead depth %d has %d scores, want %d", d+1, len(sc), experts)
		default:
			for e, v := range sc {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					c.add(i, "lookahead depth %d scores expert %d %g, not a finite number", d+1, e, v)
					break
				}
			}
		}
	}
	switch {
	case ls.RouterInput != nil && !m.HasRouterInputs:
		c.add(i, "has a router input but the trace meta says has_router_inputs false")
	case ls.RouterInput != nil && len(ls.RouterInput) != m.Model.Hidden:
		c.add(i, "router input has %d values, want hidden size %d", len(ls.RouterInput), m.Model.Hidden)
	}
	if ls.ComputeNS < 0 {
		c.add(i, "compute_ns %d is negative", ls.ComputeNS)
	}
}
