package policies

import (
	"slices"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
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
	}{
		{"unknown name lists valid ones", "mru", Params{Model: m}},
		{"missing model", "lru", Params{}},
		{"empty model", "lru", Params{Model: testModel(0, 0)}},
		{"bad expert size", "lru", Params{Model: testModel(8, 2, 100, 0)}},
		{"every problem at once", "les", Params{Model: m, TopN: -1, Threshold: 2, MaxCandidates: -3, Depth: -1, MaxInflightBytes: -5, PinFraction: 1.5}},
		{"oracle needs a trace", "oracle", Params{Model: m}},
		{"pinned-hot needs a trace", "pinned-hot", Params{Model: m}},
		{"trace layers must match", "oracle", Params{Model: m, Trace: steps([][]int32{{0, 1}})}},
		{"trace experts in range", "pinned-hot", Params{Model: m, Trace: steps([][]int32{{0, 9}, {-1, 2}})}},
		{"long trace errors are capped", "oracle", Params{Model: m, Trace: make([]traces.Step, 25)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errgolden.Check(t, tc.policy, errgolden.Err(New(tc.policy, tc.p)))
		})
	}
}
