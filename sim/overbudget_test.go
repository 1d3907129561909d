package sim_test

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

// TestPrefillBeyondCache: a prompt whose distinct experts at one layer exceed
// the cache streams through it (the batch goes over budget, stated in the
// result) instead of failing; decode is unaffected and stays within budget.
func TestPrefillBeyondCache(t *testing.T) {
	m := tinyModel()
	steps := withPrompt(randomSteps(m, 40, 5), 12) // 12 prompt tokens × top-4 of 16 experts
	cfg := baseConfig(sim.MinCacheBytes(m, 1))     // 4 experts: less than one prompt layer's union
	cfg.Prefill = true
	for _, policy := range []string{"lru", "les", "oracle", "belady"} {
		res := run(t, cfg, steps, policy, policies.DefaultParams(m))
		if res.OverBudgetLoads == 0 || res.OverBudgetBytes <= 0 {
			t.Errorf("%s: over-budget loads %d, bytes %d; want some", policy, res.OverBudgetLoads, res.OverBudgetBytes)
		}
		if !strings.Contains(strings.Join(res.Warnings, "\n"), "more distinct experts than the cache holds") {
			t.Errorf("%s: no warning: %q", policy, res.Warnings)
		}
		if res.PrefillTokens != 12 || res.Tokens != 28 {
			t.Errorf("%s: prefill %d, decode %d tokens", policy, res.PrefillTokens, res.Tokens)
		}
	}
	// Decode alone never goes over budget at the minimum cache.
	cfg.Prefill = false
	if res := run(t, cfg, steps, "lru", policies.DefaultParams(m)); res.OverBudgetLoads != 0 {
		t.Errorf("decode went over budget: %d loads", res.OverBudgetLoads)
	}
}
