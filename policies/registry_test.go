package policies

import (
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/traces"
)

func TestRegistry(t *testing.T) {
	want := []string{"belady", "les", "lfu", "lru", "ondemand", "oracle", "pinned-hot"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	m := testModel(8, 2, 100, 100)
	tr := steps([][]int32{{0, 1}, {2, 3}})
	for _, n := range Names() {
		if Describe(n) == "" {
			t.Errorf("Describe(%q) is empty", n)
		}
		p := DefaultParams(m)
		p.Trace = tr
		pol, err := New(n, p)
		if err != nil {
			t.Errorf("New(%q): %v", n, err)
			continue
		}
		if pol.Name() != n {
			t.Errorf("New(%q).Name() = %q", n, pol.Name())
		}
	}
	if Describe("nope") != "" {
		t.Errorf("Describe of an unknown name is not empty")
	}
}

func TestNewErrors(t *testing.T) {
	m := testModel(8, 2, 100, 100)
	cases := []struct {
		name   string
		policy string
		p      Params
		want   []string // every fragment must appear
	}{
		{"unknown name lists valid ones", "mru", Params{Model: m},
			[]string{`unknown policy "mru"`, "belady, les, lfu, lru, ondemand, oracle, pinned-hot"}},
		{"missing model", "lru", Params{}, []string{"model: missing"}},
		{"empty model", "lru", Params{Model: testModel(0, 0)}, []string{"needs layers, experts and top_k"}},
		{"bad expert size", "lru", Params{Model: testModel(8, 2, 100, 0)}, []string{"layer 1: expert_bytes must be positive"}},
		{"every problem at once", "les", Params{Model: m, TopN: -1, Threshold: 2, MaxCandidates: -3, Depth: -1, MaxInflightBytes: -5, PinFraction: 1.5},
			[]string{"top-n", "threshold", "max candidates", "depth", "max inflight bytes", "pin fraction"}},
		{"oracle needs a trace", "oracle", Params{Model: m}, []string{"trace: missing"}},
		{"pinned-hot needs a trace", "pinned-hot", Params{Model: m}, []string{"trace: missing"}},
		{"trace layers must match", "oracle", Params{Model: m, Trace: steps([][]int32{{0, 1}})},
			[]string{"trace step 0: has 1 MoE layers"}},
		{"trace experts in range", "pinned-hot", Params{Model: m, Trace: steps([][]int32{{0, 9}, {-1, 2}})},
			[]string{"step 0 layer 0: expert 9 out of range", "step 0 layer 1: expert -1 out of range"}},
		{"long trace errors are capped", "oracle", Params{Model: m, Trace: make([]traces.Step, 25)},
			[]string{"trace step 9:", "15 more problems"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.policy, tc.p)
			if err == nil {
				t.Fatalf("New(%q) succeeded", tc.policy)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
