package experiment

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"
)

// TestContextCostResolves: --context-cost on the built-in hybrid model takes
// its layer mixers from the built-in spec (the trace's metadata has none),
// counts its recurrent state against cache auto, and makes decode slower;
// off, the plan has neither.
func TestContextCostResolves(t *testing.T) {
	var in Inputs
	plan := func(opts map[string]string) *Plan {
		t.Helper()
		s, err := FromOptions(opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := in.Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	off := plan(map[string]string{"tokens": "40"})
	on := plan(map[string]string{"tokens": "40", "context-cost": "true"})
	if off.Config.ContextCost || off.Model.HasContextShape() || off.Meta.Model.HasContextShape() {
		t.Error("context cost off: the plan states layer mixers")
	}
	if !on.Config.ContextCost || !on.Model.HasContextShape() || on.Meta.Model.HasContextShape() {
		t.Errorf("context cost on: config %v, model shape %v, trace metadata shape %v (want true, true, false)",
			on.Config.ContextCost, on.Model.HasContextShape(), on.Meta.Model.HasContextShape())
	}
	if d := off.Config.CacheBytes - on.Config.CacheBytes; d != on.Model.RecurrentStateBytes() || d <= 0 {
		t.Errorf("cache auto shrank by %d, want the recurrent state's %d", d, on.Model.RecurrentStateBytes())
	}
	a, err := off.Run()
	if err != nil {
		t.Fatal(err)
	}
	b, err := on.Run()
	if err != nil {
		t.Fatal(err)
	}
	if a.Result.ContextNS != 0 || b.Result.ContextNS <= 0 {
		t.Errorf("context time %d off, %d on", a.Result.ContextNS, b.Result.ContextNS)
	}
}

// TestContextCostNeedsAShapedModel: a trace of a model that is not built in
// and states no mixers is refused with what its spec must give.
func TestContextCostNeedsAShapedModel(t *testing.T) {
	m, err := devices.LookupModel(DefaultModel, "")
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "my-model"
	o := traces.DefaultSynthOptions()
	o.Tokens = 20
	meta, steps, err := traces.Synth(m, o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := traces.WriteFile(path, meta, traces.NewSliceSource(steps)); err != nil {
		t.Fatal(err)
	}
	s, err := FromOptions(map[string]string{"trace": path, "context-cost": "true"})
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	_, err = in.Resolve(s)
	errgolden.Check(t, "no mixers", err)
}

// TestContextShorterThanTraceRefused: a stated context shorter than the
// trace's longest sequence is refused before the run (the KV cache must hold
// every position), for a synthetic trace, a trace file in memory and one
// streamed (its footer's statistics); as long as the sequence, it runs.
func TestContextShorterThanTraceRefused(t *testing.T) {
	file := writeTrace(t, 12, 3, 1, nil) // positions 0 to 14
	for _, tc := range []struct {
		name   string
		in     *Inputs
		opts   map[string]string
		longst int
	}{
		{"synthetic", &Inputs{}, map[string]string{"tokens": "20"}, 20},
		{"synthetic context cost", &Inputs{}, map[string]string{"tokens": "20", "context-cost": "true"}, 20},
		{"file", &Inputs{}, map[string]string{"trace": file, "policy": "lru"}, 15},
		{"file streamed", &Inputs{StreamAbove: -1}, map[string]string{"trace": file, "policy": "lru", "cache": "2GiB"}, 15},
	} {
		for _, ctx := range []int{1, tc.longst - 1} {
			opts := map[string]string{"context": strconv.Itoa(ctx)}
			maps.Copy(opts, tc.opts)
			s, err := FromOptions(opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tc.in.Resolve(s)
			errgolden.Check(t, fmt.Sprintf("%s, context %d", tc.name, ctx), err)
		}
		opts := map[string]string{"context": strconv.Itoa(tc.longst)}
		maps.Copy(opts, tc.opts)
		if _, streamed := resolveRun(t, tc.in, opts); streamed != (tc.in.StreamAbove < 0) {
			t.Errorf("%s: streamed %v", tc.name, streamed)
		}
	}
}
