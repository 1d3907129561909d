package traces

import (
	"errors"
	"fmt"
	"maps"
)

// Acceptance is a speculative acceptance rate estimated from recorded passes.
type Acceptance struct {
	// Accept is the estimated probability that a draft is accepted given the
	// previous one was (the geometric model's α).
	Accept float64
	// Passes is the number of recorded decode passes it rests on.
	Passes int
	// Accepted is the drafts those passes accepted: Σ (tokens − 1).
	Accepted int
	// Rejections is the passes that emitted fewer than block tokens (each
	// ended at a rejected draft).
	Rejections int
}

// EstimateAcceptance estimates the geometric acceptance rate of a speculative
// engine that verified blocks of block tokens from the decode passes steps
// record: consecutive decode steps of one sequence sharing a Pass ≥ 0 were
// emitted by one verify pass. A pass of n tokens accepted n−1 drafts and,
// when n < block, then rejected one; a pass of block tokens accepted every
// draft. The maximum-likelihood α of the truncated geometric model is
// accepted ÷ (accepted + rejections).
//
// It fails when no decode step has a recorded pass, when no pass emitted
// more than one token (a *SingleTokenPassesError: the trace was decoded
// without drafts, or says nothing that tells it from one), or a pass holds
// more than block tokens (the engine verified larger blocks).
func EstimateAcceptance(steps []Step, block int) (Acceptance, error) {
	var c PassSizes
	for i := range steps {
		c.Add(&steps[i])
	}
	return c.Acceptance(block)
}

// PassSizes counts a trace's recorded decode passes by their tokens, step
// by step (a streamed trace's first pass), for EstimateAcceptance.
type PassSizes struct {
	sizes  map[int]passSize // passes by tokens
	group  int64            // passes closed so far
	seq    int32            // the open pass's sequence and id
	pass   int32
	n      int   // its tokens (0: none open)
	drafts int64 // rejected drafts recorded (Phase Draft)
}

// passSize is how many passes had one size, and the first of them (the
// group-th pass of the trace, its id and sequence).
type passSize struct {
	count, first int64
	pass, seq    int32
}

// Add counts the trace's next step.
func (c *PassSizes) Add(s *Step) {
	if s.Phase == Draft {
		c.drafts++
		return
	}
	if c.n > 0 && s.Phase == Decode && s.Seq == c.seq && s.Pass == c.pass {
		c.n++
		return
	}
	c.close()
	if s.Phase == Decode && s.Pass >= 0 {
		c.seq, c.pass, c.n = s.Seq, s.Pass, 1
	}
}

// close counts the open pass, if any.
func (c *PassSizes) close() {
	if c.n == 0 {
		return
	}
	if c.sizes == nil {
		c.sizes = map[int]passSize{}
	}
	ps, ok := c.sizes[c.n]
	if !ok {
		ps = passSize{first: c.group, pass: c.pass, seq: c.seq}
	}
	ps.count++
	c.sizes[c.n] = ps
	c.group++
	c.n = 0
}

// Acceptance is EstimateAcceptance over the steps added so far.
func (c *PassSizes) Acceptance(block int) (Acceptance, error) {
	if block < 2 {
		return Acceptance{}, fmt.Errorf("block %d: speculative blocks verify at least 2 tokens", block)
	}
	// NB: on a copy: more steps may be added after.
	cc := *c
	cc.sizes = maps.Clone(c.sizes)
	cc.close()
	var a Acceptance
	over, first := 0, int64(-1)
	for n, ps := range cc.sizes {
		if n > block && (first < 0 || ps.first < first) {
			over, first = n, ps.first
		}
		a.Passes += int(ps.count)
		a.Accepted += int(ps.count) * (n - 1)
		if n < block {
			a.Rejections += int(ps.count)
		}
	}
	if first >= 0 {
		ps := cc.sizes[over]
		return Acceptance{}, fmt.Errorf("recorded pass %d of sequence %d emitted %d tokens, more than a block of %d verifies", ps.pass, ps.seq, over, block)
	}
	if a.Passes == 0 {
		return Acceptance{}, errors.New("the trace records no decode passes (pass -1 everywhere): record it with pass ids, or state the acceptance")
	}
	if a.Accepted == 0 && cc.drafts == 0 {
		// NB: n−1 = 0 for every pass. Counting each as a rejection would
		// estimate α 0 from a trace decoded without drafts.
		return Acceptance{}, &SingleTokenPassesError{Passes: a.Passes}
	}
	if a.Accepted+a.Rejections > 0 {
		a.Accept = float64(a.Accepted) / float64(a.Accepted+a.Rejections)
	}
	return a, nil
}

// SingleTokenPassesError is EstimateAcceptance's refusal of a trace whose
// recorded decode passes each emitted one token and which records no
// rejected draft: a plain decode (no drafts) records exactly that, so the
// passes say nothing about how often a draft is accepted. (A trace recorded
// with a drafter whose every draft was rejected holds its drafts, and
// estimates α 0.)
type SingleTokenPassesError struct {
	// Passes is the number of recorded decode passes.
	Passes int
}

func (e *SingleTokenPassesError) Error() string {
	return fmt.Sprintf("each of the trace's %d recorded decode passes emitted one token, as a decode without drafts does: it tells nothing about acceptance (estimating from it would give 0); state the acceptance, or record the trace with a drafter", e.Passes)
}
