package llama

import (
	"slices"
	"testing"
)

func TestMoEArchitectures(t *testing.T) {
	list := MoEArchitectures()
	if !slices.IsSorted(list) {
		t.Fatalf("moeArchitectures is not sorted (IsMoEArchitecture binary-searches it): %v", list)
	}
	for _, tc := range []struct {
		arch string
		want bool
	}{{"qwen3moe", true}, {"deepseek2", true}, {"gpt-oss", true}, {"qwen2", false}, {"nomic-bert-moe", false}, {"", false}} {
		if got := IsMoEArchitecture(tc.arch); got != tc.want {
			t.Errorf("IsMoEArchitecture(%q) = %v", tc.arch, got)
		}
	}
}
