package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/sim"
)

// synthReplay is the plan of a replay of a short synthetic Qwen3-30B-A3B
// trace with an LRU cache of a quarter of the expert bytes on device d.
func synthReplay(t *testing.T, layout sim.Layout, d *devices.Device) *experiment.Plan {
	t.Helper()
	return replayPlan(t, func(s *experiment.Spec) {
		s.Model = &experiment.Model{Name: "qwen3-30b-a3b"}
		y := experiment.DefaultSynthetic()
		y.Tokens, y.PromptTokens, y.Seed = 48, 8, 7
		s.Trace = experiment.Trace{Synthetic: &y}
		s.Cache = experiment.Cache{Size: "25%"}
		s.Layout = string(layout)
	}, d, &experiment.Inputs{})
}

// replayPlan resolves DefaultSpec with policy lru, prefill and device d,
// edited by edit, through in.
func replayPlan(t *testing.T, edit func(*experiment.Spec), d *devices.Device, in *experiment.Inputs) *experiment.Plan {
	t.Helper()
	s := experiment.DefaultSpec()
	s.Device = experiment.Device{Profile: d}
	s.Policy, s.Prefill = experiment.Policy{Name: "lru"}, true
	edit(&s)
	p, err := in.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// measure simulates plan on d and returns it as a measured run (wall time
// and bytes read per decode token).
func measure(t *testing.T, plan *experiment.Plan, d *devices.Device) *runs.Run {
	t.Helper()
	res, err := plan.RunOn(d)
	if err != nil {
		t.Fatal(err)
	}
	run := &runs.Run{Name: "synth.csv", Fields: []runs.Field{runs.FieldWall, runs.FieldRead}}
	for i, s := range res.Series {
		run.Tokens = append(run.Tokens, runs.Token{Step: i + 1, WallNS: s.TimeNS, ReadBytes: s.FlashBytes,
			IONS: -1, ComputeNS: -1, StallNS: -1, MgmtNS: -1, MajorFaults: -1, CPUNS: -1, CacheHitPct: -1})
	}
	return run
}

// TestFromRunFlashScaleBounded: a run on flash faster than any valid scale
// of the profile's curve (its latency is lower) is fitted with the scale at
// the largest valid value, not refused with the profile file blamed for a
// candidate's invalid curve (calibrate --layout gguf-mmap on the reference
// run failed so: "profiles/ufs4-phone-12gb.yaml: flash.aggregate[0]:
// transfer rate after removing flash.latency ... is outside [1 MB/s, 1 TB/s]").
func TestFromRunFlashScaleBounded(t *testing.T) {
	base, d := phone(t)
	truth := *d
	truth.MemEfficiency, truth.Flash.LatencyNS = 0.3, 20_000
	for _, c := range []*[]devices.CurvePoint{&truth.Flash.SingleLane, &truth.Flash.Aggregate} {
		*c = slices.Clone(*c)
		for i := range *c {
			(*c)[i].BytesPerSec *= 4
		}
	}
	for _, layout := range []sim.Layout{sim.LayoutGGUFMmap, sim.LayoutPerExpert} {
		t.Run(string(layout), func(t *testing.T) {
			rp := synthReplay(t, layout, &truth)
			got, err := FromRun(base, rp, measure(t, rp, &truth), "synth.csv")
			if err != nil {
				t.Fatal(err)
			}
			if got.BytesMatched != got.BytesChecked || got.BytesChecked != got.Tokens {
				t.Errorf("bytes matched on %d of %d (%d tokens)", got.BytesMatched, got.BytesChecked, got.Tokens)
			}
			// The scale is at most its bound, about 3.56 (where
			// flash.aggregate[0] reaches flash.latency); gguf-mmap, the
			// layout of the calibrate failure, is fitted at it. Per-expert
			// reads fit a little below it (3.42 on this routing): the
			// truth's lower latency is not a parameter of the fit.
			scale := got.Params[1]
			atBound := scale.Why == "at its bound"
			if scale.Name != ParamFlashScale || !scale.Identified || scale.Value < 3 || scale.Value > 3.6 || layout == sim.LayoutGGUFMmap && !atBound {
				t.Errorf("flash scale %+v, want identified in [3, 3.6], at its bound with gguf-mmap", scale)
			}
			for _, p := range got.Params {
				if math.IsNaN(p.SE) || math.IsInf(p.SE, 0) || math.IsNaN(p.Value) {
					t.Errorf("%+v: not finite", p)
				}
			}
			if _, err := got.Profile.Device(); err != nil {
				t.Errorf("fitted profile invalid: %v", err)
			}
		})
	}
}

// TestFromRunRecoversGGUFMmap: a gguf-mmap run on the profile's own flash
// with another memory efficiency is fitted back to it, every token's bytes
// matched.
func TestFromRunRecoversGGUFMmap(t *testing.T) {
	base, err := devices.LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	truthP := base.Clone()
	truthP.Memory.Efficiency.Set("0.3", "test")
	truth, err := truthP.Device()
	if err != nil {
		t.Fatal(err)
	}
	rp := synthReplay(t, sim.LayoutGGUFMmap, truth)
	got, err := FromRun(base, rp, measure(t, rp, truth), "synth.csv")
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Errors; e.P90Abs > 0.01 {
		t.Errorf("|error| p90 %.2f%%, want the truth recovered", 100*e.P90Abs)
	}
	if eff := got.Params[0]; math.Abs(eff.Value/0.3-1) > 0.02 {
		t.Errorf("memory.efficiency %+v, want 0.3", eff)
	}
	if got.BytesMatched != got.Tokens {
		t.Errorf("bytes matched on %d of %d", got.BytesMatched, got.Tokens)
	}
}

// TestFromRunRefusesOtherReplay: a run whose bytes the replay does not
// reproduce (a cache three times larger than the run's) is refused, naming
// the counts and the threshold; so is it by FromRuns (validate's fit of live
// runs) for a demand-only policy (lru), whose loads do not depend on timing,
// but not for a prefetching one (les), whose live loads differ a little
// from its replay's.
func TestFromRunRefusesOtherReplay(t *testing.T) {
	base, rp, run := selfRun(t)
	d, err := base.Device()
	if err != nil {
		t.Fatal(err)
	}
	triple := func(s *experiment.Spec) {
		s.Cache = experiment.Cache{Bytes: 3 * rp.Config.CacheBytes}
		s.Trace = rp.Spec.Trace
		s.Model = rp.Spec.Model
		s.Layout = rp.Spec.Layout
	}
	other := replayPlan(t, triple, d, &experiment.Inputs{})
	_, err = FromRun(base, other, run, "synth.csv")
	errgolden.Check(t, "FromRun", err)
	_, err = FromRuns(base, []Measured{{Plan: rp, Run: run}, {Plan: other, Run: run}}, "synth")
	errgolden.Check(t, "FromRuns", err)
	les := replayPlan(t, func(s *experiment.Spec) { triple(s); s.Policy = experiment.Policy{Name: "les"} }, d, &experiment.Inputs{})
	if _, err := FromRuns(base, []Measured{{Plan: les, Run: run}}, "synth"); err != nil {
		t.Errorf("FromRuns, les: %v", err)
	}
}

// TestFromRunTokenCount: the trace must decode exactly the run's tokens,
// in both directions.
func TestFromRunTokenCount(t *testing.T) {
	base, rp, run := selfRun(t)
	short := *run
	short.Tokens = run.Tokens[:24]
	long := *run
	long.Tokens = append(slices.Clone(run.Tokens), run.Tokens[:3]...)
	for _, r := range []*runs.Run{&short, &long} {
		_, err := FromRun(base, rp, r, "synth.csv")
		errgolden.Check(t, fmt.Sprintf("%d tokens", len(r.Tokens)), err)
	}
}

// selfRun is the ufs4-phone-12gb profile, a per-expert replay and that
// replay's run measured on the profile's own device.
func selfRun(t *testing.T) (*devices.Profile, *experiment.Plan, *runs.Run) {
	t.Helper()
	base, d := phone(t)
	rp := synthReplay(t, sim.LayoutPerExpert, d)
	return base, rp, measure(t, rp, d)
}

// phone is the ufs4-phone-12gb profile and its device.
func phone(t *testing.T) (*devices.Profile, *devices.Device) {
	t.Helper()
	base, err := devices.LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	d, err := base.Device()
	if err != nil {
		t.Fatal(err)
	}
	return base, d
}

// TestFromRunScalesFormats: a profile stating per-format efficiencies is
// fitted by one factor on memory.efficiency and the formats the run's
// model reads (Qwen3-30B-A3B Q4_K_M: Q4_K and Q6_K experts); a run whose
// truth has all of them 1.5 times the base's is fitted back to it, and a
// stated format the model does not read (MXFP4) is kept and said so.
func TestFromRunScalesFormats(t *testing.T) {
	base, err := devices.LoadProfile("ufs4-phone-12gb")
	if err != nil {
		t.Fatal(err)
	}
	d, err := base.Device()
	if err != nil {
		t.Fatal(err)
	}
	base = base.Clone()
	eff := d.MemEfficiency
	set := func(p *devices.Profile, k float64) {
		p.Memory.Efficiency.Set(fmt.Sprintf("%.6g", k*eff), "test")
		p.Memory.FormatEfficiency = map[string]devices.Quantity{"Q4_K": q(fmt.Sprintf("%.6g", k*0.2)), "Q6_K": q(fmt.Sprintf("%.6g", k*0.15)), "MXFP4": q("0.4")}
	}
	set(base, 1)
	truthP := base.Clone()
	set(truthP, 1.5)
	truth, err := truthP.Device()
	if err != nil {
		t.Fatal(err)
	}
	rp := synthReplay(t, sim.LayoutPerExpert, truth)
	got, err := FromRun(base, rp, measure(t, rp, truth), "synth.csv")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := got.Profile.Device()
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[devices.QuantType]float64{"Q4_K": 0.3, "Q6_K": 0.225, "MXFP4": 0.4} {
		if e := fd.FormatEfficiency[q]; math.Abs(e/want-1) > 0.02 {
			t.Errorf("%s: efficiency %.4g, want %.4g", q, e, want)
		}
	}
	if e := fd.MemEfficiency; math.Abs(e/(1.5*eff)-1) > 0.02 {
		t.Errorf("memory.efficiency %.4g, want %.4g", e, 1.5*eff)
	}
	var scaled, unread bool
	for _, k := range got.Kept {
		scaled = scaled || strings.HasPrefix(k, "memory.format_efficiency of Q4_K, Q6_K: scaled")
		unread = unread || strings.HasPrefix(k, "memory.format_efficiency of MXFP4: no weights")
	}
	if !scaled || !unread {
		t.Errorf("kept %q: want the scaled formats and the unread one", got.Kept)
	}
	if base.Memory.FormatEfficiency["Q4_K"].Value != "0.2" {
		t.Errorf("the fit changed its base profile: %+v", base.Memory.FormatEfficiency["Q4_K"])
	}
}

func q(v string) devices.Quantity {
	var x devices.Quantity
	x.Set(v, "test")
	return x
}

// TestFromRunsHostThreads: on a profile with the contention model (2
// cores, reads that cost the cores), runs at 1 and 2 compute threads (a
// grid's points) are fitted from a base that states 1 thread, each
// replayed with its own threads: both runs are reproduced within 1% at
// p90. Replayed at the base's one thread (the bug this pins), they are not.
func TestFromRunsHostThreads(t *testing.T) {
	p, _ := phone(t)
	p.Compute.Cores.Set("2", "test")
	p.Compute.Background.Set("0.5", "test")
	p.Flash.ReadCPU.Set("20 us", "test")
	p.Flash.CopyRate.Set("1 GB/s", "test")
	var ms []Measured
	for _, threads := range []string{"1", "2"} {
		truthP := p.Clone()
		truthP.Compute.Threads.Set(threads, "test")
		truth, err := truthP.Device()
		if err != nil {
			t.Fatal(err)
		}
		rp := synthReplay(t, sim.LayoutPerExpert, truth)
		ms = append(ms, Measured{Plan: rp, Run: measure(t, rp, truth)})
	}
	got, err := FromRuns(p, ms, "synth.csv")
	if err != nil {
		t.Fatal(err)
	}
	if got.Errors.P90Abs > 0.01 {
		t.Errorf("params %+v: |error| p90 %.4f, want both runs reproduced", got.Params, got.Errors.P90Abs)
	}
}
