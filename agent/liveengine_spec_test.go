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
	s := experiment.DefaultSpec()
	s.Cache.Size = "1GiB"
	s.ExpertQuant, s.ContextCost = "Q3_K", true
	o := live.DefaultOptions()
	_, err = applySpec(&o, &s, m)
	for _, want := range []string{"expert_quant: the live engine runs the GGUF's own types", "context_cost: a simulator option"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
	s.ExpertQuant, s.ContextCost = "", false
	if _, err := applySpec(&o, &s, m); err != nil {
		t.Errorf("without them: %v", err)
	}
}
