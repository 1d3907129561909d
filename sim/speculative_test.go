package sim_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// specConfig is baseConfig with block-4 speculative decoding at acceptance a.
func specConfig(a float64) sim.Config {
	cfg := baseConfig(40 * mib)
	cfg.SpecBlock, cfg.SpecAccept, cfg.Seed = 4, a, 5
	return cfg
}

// TestDrafterCost isolates the drafter's cost: off (no cost stated) it is
// zero; on, every pass of n tokens runs n-1 draft steps of
// max(bytes ÷ (bandwidth × efficiency), FLOPs ÷ flops) each, computed by hand,
// and with lru (no prefetch in flight across passes) the run is longer by
// exactly that. Without speculative decoding a stated drafter changes nothing.
func TestDrafterCost(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 400, 11)
	p := policies.DefaultParams(m)
	for _, tc := range []struct {
		name                  string
		bytes, flops, draftNS int64
		accept                float64
		drafts                int64
		perDraft              int64
	}{
		// 1 MiB at 50e9 × 0.5 B/s = 41,943.04 ns, rounded up; FLOPs 1 MiB at 1e12 = 1,048.576 ns.
		{"bytes-bound, all accepted", mib, mib, 0, 1, 100 * 3, 41944},
		// 2e9 FLOP at 1e12 FLOP/s = 2 ms, above 1 MiB's 41,944 ns.
		{"flops-bound, all accepted", mib, 2e9, 0, 1, 100 * 3, 2_000_000},
		// Acceptance 0: 400 passes, blocks of min(4, 400-i) tokens: 397 × 3 + 2 + 1 + 0 drafts.
		{"bytes-bound, none accepted", mib, 0, 0, 0, 397*3 + 3, 41944},
		// A measured time per draft token replaces the bytes' and FLOPs'.
		{"measured", mib, 2e9, 123_457, 1, 100 * 3, 123_457},
	} {
		off := run(t, specConfig(tc.accept), steps, "lru", p)
		if off.DraftNS != 0 {
			t.Fatalf("%s: draft time %d with no drafter cost", tc.name, off.DraftNS)
		}
		on := specConfig(tc.accept)
		on.Drafter, on.DraftBytes, on.DraftFLOPs, on.DraftNS = "explicit", tc.bytes, tc.flops, tc.draftNS
		res := run(t, on, steps, "lru", p)
		if want := tc.drafts * tc.perDraft; res.DraftNS != want {
			t.Errorf("%s: draft time %d ns, want %d drafts × %d ns = %d", tc.name, res.DraftNS, tc.drafts, tc.perDraft, want)
		}
		if res.TimeNS != off.TimeNS+res.DraftNS {
			t.Errorf("%s: time %d, want %d without drafter + %d drafting", tc.name, res.TimeNS, off.TimeNS, res.DraftNS)
		}
		if res.TimeNS != res.ComputeNS+res.StallNS+res.DraftNS {
			t.Errorf("%s: time %d != compute %d + stall %d + draft %d", tc.name, res.TimeNS, res.ComputeNS, res.StallNS, res.DraftNS)
		}
		if res.Tokens != off.Tokens || res.Misses != off.Misses {
			t.Errorf("%s: drafting changed tokens (%d vs %d) or misses (%d vs %d)", tc.name, res.Tokens, off.Tokens, res.Misses, off.Misses)
		}
		on.KeepSeries = true
		var series int64
		for _, s := range run(t, on, steps, "lru", p).Series {
			series += s.DraftNS
		}
		if series != res.DraftNS {
			t.Errorf("%s: series draft time %d, total %d", tc.name, series, res.DraftNS)
		}
	}
	plain, drafter := baseConfig(40*mib), baseConfig(40*mib)
	drafter.Drafter, drafter.DraftBytes = "explicit", mib
	a, _ := json.Marshal(run(t, plain, steps, "les", p))
	b, _ := json.Marshal(run(t, drafter, steps, "les", p))
	if !bytes.Equal(a, b) {
		t.Errorf("a drafter without speculative decoding changed the result:\n%s\n%s", a, b)
	}
}

// With every draft accepted there are no rejected drafts, so the acceptance
// model verifies exactly the passes a trace recording blocks of 4 holds:
// both runs are the same, field by field, except for the warning.
func TestAllAcceptedEqualsRecordedPasses(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 301, 19)
	for _, pol := range []string{"lru", "les", "oracle"} {
		model := run(t, specConfig(1), steps, pol, policies.DefaultParams(m))
		rec := slices.Clone(steps)
		for i := range rec {
			rec[i].Pass = int32(i / 4)
		}
		cfg := baseConfig(40 * mib)
		cfg.SpecFromTrace = true
		replay := run(t, cfg, rec, pol, policies.DefaultParams(m))
		if model.RejectedDrafts != 0 {
			t.Errorf("%s: %d rejected drafts at acceptance 1", pol, model.RejectedDrafts)
		}
		model.Warnings, replay.Warnings = nil, nil
		a, _ := json.Marshal(model)
		b, _ := json.Marshal(replay)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: acceptance 1 differs from recorded blocks of 4:\n%s\n%s", pol, a, b)
		}
	}
}

// TestRejectedDraftsAreTheirOwn: a rejected draft is routed by a draw from
// its layer's empirical distribution, not as the trace's next token. Even
// steps select experts 0-3 on every layer, odd steps 8-11; at acceptance 0
// with blocks of 2, each pass verifies one real token and one rejected draft.
// Routed like the trace, the draft would always be the other set (a perfect
// prefetch of the next pass); drawn, it takes 4 of the 8 experts the layer
// ever selected, each pass some of both sets.
func TestRejectedDraftsAreTheirOwn(t *testing.T) {
	m := tinyModel()
	const n = 40
	steps := make([]traces.Step, n)
	for i := range steps {
		steps[i] = traces.Step{Pos: int32(i), Phase: traces.Decode, Pass: int32(i), Layers: make([]traces.LayerStep, len(m.Layers))}
		base := int32(0)
		if i%2 == 1 {
			base = 8
		}
		for l := range steps[i].Layers {
			steps[i].Layers[l].Experts = []int32{base, base + 1, base + 2, base + 3}
		}
	}
	cfg := baseConfig(40 * mib)
	cfg.SpecBlock, cfg.SpecAccept, cfg.Seed = 2, 0, 3
	type passLayer struct{ pass, layer int }
	unions := map[passLayer][]int{}
	pol := mustPolicy(t, "lru")
	res, err := sim.RunTap(cfg, steps, pol, func(u sim.UseRecord) {
		k := passLayer{int(u.Pass), u.Layer}
		unions[k] = append(unions[k], u.Expert)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passes != n || res.Tokens != n || res.RejectedDrafts != n-1 {
		t.Fatalf("passes %d tokens %d rejected %d, want %d, %d, %d", res.Passes, res.Tokens, res.RejectedDrafts, n, n, n-1)
	}
	mixed := 0
	for k, u := range unions {
		own := 0
		if k.pass%2 == 1 {
			own = 8
		}
		slices.Sort(u)
		for _, x := range u {
			if x > 11 || (x > 3 && x < 8) {
				t.Fatalf("pass %d layer %d: expert %d was never selected by the trace", k.pass, k.layer, x)
			}
		}
		for x := own; x < own+4; x++ {
			if !slices.Contains(u, x) {
				t.Fatalf("pass %d layer %d: real token's expert %d not used (%v)", k.pass, k.layer, x, u)
			}
		}
		if k.pass < n-1 && len(u) < 8 {
			mixed++ // the draft shared experts with the real token: not the next token's set
		}
	}
	if mixed == 0 {
		t.Fatalf("every draft was routed exactly like the next token")
	}
	if res.Uses >= int64(8*(n-1)+4)*int64(len(m.Layers)) {
		t.Fatalf("uses %d: drafts routed as the next tokens would give %d", res.Uses, (8*(n-1)+4)*len(m.Layers))
	}
	again, err := sim.Run(cfg, steps, mustPolicy(t, "lru"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Uses != res.Uses || again.TimeNS != res.TimeNS {
		t.Fatalf("rerun differs: uses %d vs %d, time %d vs %d", again.Uses, res.Uses, again.TimeNS, res.TimeNS)
	}
}

// A free drafter is warned about; a stated cost is not.
func TestFreeDrafterWarns(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 50, 2)
	free := run(t, specConfig(0.5), steps, "lru", policies.DefaultParams(m))
	if !hasWarningIn(free.Warnings, "the drafter is free") {
		t.Errorf("free drafter not warned: %q", free.Warnings)
	}
	cfg := specConfig(0.5)
	cfg.Drafter, cfg.DraftBytes = "explicit", mib
	if paid := run(t, cfg, steps, "lru", policies.DefaultParams(m)); hasWarningIn(paid.Warnings, "drafter is free") {
		t.Errorf("paid drafter warned as free: %q", paid.Warnings)
	}
	cfg.DraftBytes = -1
	_, err := sim.Run(cfg, steps, mustPolicy(t, "lru"))
	errgolden.Check(t, "negative-drafter", err)
}

func hasWarningIn(ws []string, s string) bool {
	return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, s) })
}

// hiddenSlice is a Source over steps in memory that RunSource cannot see
// through (traces.SliceOf fails), as it cannot a trace file.
type hiddenSlice struct{ traces.Source }

// TestStreamedSpeculative: speculative decoding with the acceptance model on
// a trace RunSource cannot hold needs the draft statistics handed in
// (Config.DraftStats); with them, measured step by step as a first pass
// does, the result is the in-memory run's, byte for byte (with prefill, lru
// and les, whose drafts get lookahead scores at the measured recall, and
// oracle).
func TestStreamedSpeculative(t *testing.T) {
	m := tinyModel()
	steps := withPrompt(randomSteps(m, 240, 23), 12)
	cfg := specConfig(0.6)
	cfg.Prefill = true
	fresh := func(policy string) sim.Policy {
		p := policies.DefaultParams(m)
		p.Trace = steps
		pol, err := policies.New(policy, p)
		if err != nil {
			t.Fatal(err)
		}
		return pol
	}
	for _, policy := range []string{"lru", "les", "oracle"} {
		want, _ := json.Marshal(run(t, cfg, steps, policy, policies.DefaultParams(m)))

		_, err := sim.RunSource(cfg, hiddenSlice{traces.NewSliceSource(steps)}, fresh(policy))
		errgolden.Check(t, policy, err)
		st := sim.NewDraftStats(len(m.Layers), m.Experts)
		for i := range steps {
			st.Add(&steps[i])
		}
		c := cfg
		c.DraftStats = st
		res, err := sim.RunSource(c, hiddenSlice{traces.NewSliceSource(steps)}, fresh(policy))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(res); !bytes.Equal(got, want) {
			t.Errorf("%s: streamed with draft statistics differs from in memory:\n%s\n%s", policy, got, want)
		}
	}
}

// TestRecordedDraftsReplayed: a trace that records its verify passes' rejected
// drafts (Phase Draft) is replayed exactly with SpecFromTrace: each pass runs
// its accepted token and its draft, the draft's experts (4-7, which no
// accepted token selects) used in the pass as recorded, counted as a rejected
// draft and not as a token. Without SpecFromTrace the drafts emitted nothing
// and are not run.
func TestRecordedDraftsReplayed(t *testing.T) {
	m := tinyModel()
	const n = 30
	var steps []traces.Step
	for i := range n {
		for _, ph := range []traces.Phase{traces.Decode, traces.Draft} {
			s := traces.Step{Pos: int32(i + 1), Phase: ph, Pass: int32(i), Layers: make([]traces.LayerStep, len(m.Layers))}
			if ph == traces.Decode {
				s.Pos = int32(i)
			}
			base := int32(8 * (i % 2))
			if ph == traces.Draft {
				base = 4
			}
			for l := range s.Layers {
				s.Layers[l].Experts = []int32{base, base + 1, base + 2, base + 3}
			}
			steps = append(steps, s)
		}
	}
	cfg := baseConfig(40 * mib)
	cfg.SpecFromTrace = true
	drafts := map[int]int{} // pass → uses of experts 4-7
	res, err := sim.RunTap(cfg, steps, mustPolicy(t, "lru"), func(u sim.UseRecord) {
		if u.Expert >= 4 && u.Expert < 8 {
			drafts[int(u.Pass)]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passes != n || res.Tokens != n || res.RejectedDrafts != n {
		t.Fatalf("passes %d tokens %d rejected %d, want %d each", res.Passes, res.Tokens, res.RejectedDrafts, n)
	}
	if res.Uses != int64(8*n*len(m.Layers)) || len(drafts) != n {
		t.Fatalf("uses %d (want %d), passes using the drafts' experts %d (want %d)", res.Uses, 8*n*len(m.Layers), len(drafts), n)
	}
	for p, u := range drafts {
		if u != 4*len(m.Layers) {
			t.Fatalf("pass %d used the draft's experts %d times, want %d", p, u, 4*len(m.Layers))
		}
	}
	// The drafter is charged for each pass's draft (its second token).
	cfg.Drafter, cfg.DraftNS = "model", 250_000
	charged := run(t, cfg, steps, "lru", policies.DefaultParams(m))
	if charged.DraftNS != n*250_000 || charged.TimeNS != res.TimeNS+charged.DraftNS || charged.Misses != res.Misses {
		t.Fatalf("drafter charged %d ns (want %d), time %d (want %d + drafting)", charged.DraftNS, n*250_000, charged.TimeNS, res.TimeNS)
	}
	plain := run(t, baseConfig(40*mib), steps, "lru", policies.DefaultParams(m))
	if plain.Tokens != n || plain.Passes != n || plain.RejectedDrafts != 0 || plain.Uses != int64(4*n*len(m.Layers)) {
		t.Fatalf("plain replay: tokens %d passes %d rejected %d uses %d, want %d, %d, 0, %d", plain.Tokens, plain.Passes, plain.RejectedDrafts, plain.Uses, n, n, 4*n*len(m.Layers))
	}
}
