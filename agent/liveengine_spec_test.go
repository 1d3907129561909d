package agent

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
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
	applySpec(&o, &s, m, refuse)
	got := strings.Join(bad, "; ")
	for _, want := range []string{"expert_quant: the live engine runs the GGUF's own types", "context_cost: a simulator option"} {
		if !strings.Contains(got, want) {
			t.Errorf("refused %q, want one containing %q", got, want)
		}
	}
	bad = nil
	s.ExpertQuant, s.ContextCost = "", false
	if applySpec(&o, &s, m, refuse); len(bad) > 0 || o.Cache != 1<<30 {
		t.Errorf("without them: refused %v, cache %d", bad, o.Cache)
	}
}
