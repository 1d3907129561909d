package traces

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// passes builds one sequence's decode steps, n[i] tokens in pass i.
func passes(n ...int) []Step {
	var steps []Step
	for p, k := range n {
		for range k {
			steps = append(steps, Step{Pos: int32(len(steps)), Phase: Decode, Pass: int32(p)})
		}
	}
	return steps
}

// By hand: blocks of 4; passes of 4, 2, 1, 3 tokens accepted 3+1+0+2 = 6
// drafts and ended at 3 rejections (the pass of 4 accepted all), so
// α = 6 / (6 + 3) = 2/3.
func TestEstimateAcceptance(t *testing.T) {
	steps := append(passes(4, 2, 1, 3), Step{Phase: Prefill, Pass: 0})
	a, err := EstimateAcceptance(steps, 4)
	if err != nil {
		t.Fatal(err)
	}
	if a.Passes != 4 || a.Accepted != 6 || a.Rejections != 3 || a.Accept != 6.0/9 {
		t.Fatalf("got %+v, want 4 passes, 6 accepted, 3 rejections, α 2/3", a)
	}
	// Every pass full: α 1. No pass longer than one token: α 0.
	if a, _ := EstimateAcceptance(passes(3, 3), 3); a.Accept != 1 {
		t.Errorf("full blocks: α %g, want 1", a.Accept)
	}
	if a, err := EstimateAcceptance(passes(1, 2, 1), 3); err != nil || a.Accept != 1.0/4 || a.Rejections != 3 {
		t.Errorf("one two-token pass among single ones: %+v, %v; want α 1/4 and 3 rejections", a, err)
	}
}

// A trace decoded without drafts (one token per pass) is refused: counting
// each pass as a rejection would quietly estimate α 0.
func TestEstimateAcceptanceSingleTokenPasses(t *testing.T) {
	_, err := EstimateAcceptance(append(passes(1, 1, 1), Step{Phase: Prefill, Pass: 9}), 3)
	var e *SingleTokenPassesError
	if !errors.As(err, &e) || e.Passes != 3 {
		t.Fatalf("error %v, want a SingleTokenPassesError of 3 passes", err)
	}
	errgolden.Check(t, "one-token-passes", err)
}

func TestEstimateAcceptanceErrors(t *testing.T) {
	unknown := passes(1, 1)
	for i := range unknown {
		unknown[i].Pass = -1
	}
	for _, tc := range []struct {
		steps []Step
		block int
		want  string
	}{
		{passes(2), 1, "at least 2"},
		{passes(5), 4, "emitted 5 tokens, more than a block of 4"},
		{unknown, 4, "records no decode passes"},
	} {
		if _, err := EstimateAcceptance(tc.steps, tc.block); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("block %d: error %v, want %q", tc.block, err, tc.want)
		}
	}
}

// PassSizes counts as it goes: asked midway (the open pass counted, on a
// copy), it answers for the steps so far and keeps counting; the first
// pass over the block is the one named, whatever its size's later passes.
func TestPassSizesStreaming(t *testing.T) {
	steps := passes(4, 2, 6, 1, 5, 3)
	var c PassSizes
	for i := range steps[:6] { // passes of 4 and 2
		c.Add(&steps[i])
	}
	if a, err := c.Acceptance(4); err != nil || a.Passes != 2 || a.Accepted != 4 || a.Rejections != 1 {
		t.Fatalf("midway: %+v, %v; want 2 passes, 4 accepted, 1 rejection", a, err)
	}
	for i := range steps[6:] {
		c.Add(&steps[6+i])
	}
	errgolden.Check(t, "pass-2-of-sequence", errgolden.Err(c.Acceptance(4)))
	a, err := c.Acceptance(6)
	if want, _ := EstimateAcceptance(steps, 6); err != nil || a != want || a.Passes != 6 {
		t.Fatalf("streamed %+v (%v), slice %+v", a, err, want)
	}
}

// A trace recorded with a drafter whose every draft was rejected holds its
// drafts: its one-token passes are rejections, α 0, not a refusal.
func TestEstimateAcceptanceRecordedDrafts(t *testing.T) {
	steps := passes(1, 1)
	steps = slices.Insert(steps, 1, Step{Pos: 1, Phase: Draft, Pass: 0})
	a, err := EstimateAcceptance(steps, 2)
	if err != nil || a.Accept != 0 || a.Passes != 2 || a.Rejections != 2 {
		t.Fatalf("%+v, %v; want α 0 over 2 passes, 2 rejections", a, err)
	}
}
