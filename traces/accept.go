package traces

import (
	"errors"
	"fmt"
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
// It fails when no decode step has a recorded pass, or a pass holds more
// than block tokens (the engine verified larger blocks).
func EstimateAcceptance(steps []Step, block int) (Acceptance, error) {
	if block < 2 {
		return Acceptance{}, fmt.Errorf("block %d: speculative blocks verify at least 2 tokens", block)
	}
	var a Acceptance
	for i := 0; i < len(steps); {
		s := &steps[i]
		if s.Phase != Decode || s.Pass < 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(steps) && steps[j].Phase == Decode && steps[j].Seq == s.Seq && steps[j].Pass == s.Pass {
			j++
		}
		n := j - i
		if n > block {
			return Acceptance{}, fmt.Errorf("recorded pass %d of sequence %d emitted %d tokens, more than a block of %d verifies", s.Pass, s.Seq, n, block)
		}
		a.Passes++
		a.Accepted += n - 1
		if n < block {
			a.Rejections++
		}
		i = j
	}
	if a.Passes == 0 {
		return Acceptance{}, errors.New("the trace records no decode passes (pass -1 everywhere): record it with pass ids, or state the acceptance")
	}
	if a.Accepted+a.Rejections > 0 {
		a.Accept = float64(a.Accepted) / float64(a.Accepted+a.Rejections)
	}
	return a, nil
}
