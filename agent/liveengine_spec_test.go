package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runtime/live"
)

// TestApplySpecRefusesSimulatorOnly: settings only the simulator can honour
// are refused, each with its reason, not ignored.
func TestApplySpecRefusesSimulatorOnly(t *testing.T) {
	m, err := devices.LookupModel(devices.Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	refuse := func(cond bool, what string) {
		if cond {
			bad = append(bad, what)
		}
	}
	s := experiment.DefaultSpec()
	s.Cache.Size = "1GiB"
	s.ExpertQuant, s.ContextCost = "Q3_K", true
	o := live.DefaultOptions()
	applySpec(&o, &s, m, "", refuse)
	if len(bad) != 2 {
		t.Errorf("refused %q, want expert_quant and context_cost", bad)
	}
	errgolden.Check(t, "simulator only", errors.New(strings.Join(bad, "; ")))
	bad = nil
	s.ExpertQuant, s.ContextCost = "", false
	if applySpec(&o, &s, m, "", refuse); len(bad) > 0 || o.Cache != 1<<30 {
		t.Errorf("without them: refused %v, cache %d", bad, o.Cache)
	}
	// The drafts' routing is the model's on the engine: a stated reuse is refused.
	r := 0.5
	s.Speculative = &experiment.Speculative{Block: 2, Accept: 0.5, Drafter: &experiment.Drafter{Kind: experiment.DrafterControlled}, DraftReuse: &r}
	if applySpec(&o, &s, m, "", refuse); len(bad) != 1 || !strings.HasPrefix(bad[0], "speculative.draft_reuse") {
		t.Errorf("draft_reuse: refused %q", bad)
	}
}
