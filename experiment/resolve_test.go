package experiment

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/traces"

	"github.com/lessim/lessim/sim"
)

// specsToResolve covers every policy and the options that change resolution.
func specsToResolve(t *testing.T) map[string]map[string]string {
	t.Helper()
	file := writeTrace(t, 60, 8, 1, pairPasses)
	bare := writeTrace(t, 60, 0, 0, nil)
	return map[string]map[string]string{
		"les":          {"tokens": "60"},
		"les-params":   {"tokens": "60", "threshold": "0.9", "max-candidates": "10", "depth": "2", "max-inflight": "64MiB"},
		"les-off":      {"tokens": "60", "no-prefetch": "true", "layout": "gguf-mmap", "cached-first": "false"},
		"lru-spec":     {"tokens": "60", "policy": "lru", "spec-block": "3", "spec-accept": "0.5", "accept-seed": "9", "drafter": "mtp"},
		"spec-data":    {"trace": file, "policy": "les", "spec-block": "2", "spec-accept-from-trace": "true", "drafter": "explicit", "drafter-bytes": "300MB", "drafter-flops": "6e8"},
		"lfu":          {"tokens": "60", "policy": "lfu", "cache": "10%", "context": "4096"},
		"ondemand":     {"tokens": "60", "policy": "ondemand", "device": "ipad-pro-m4", "variant": "mixed-q3k-experts"},
		"oracle":       {"tokens": "60", "policy": "oracle", "cache": "2GiB", "seed": "4"},
		"pinned-hot":   {"tokens": "60", "policy": "pinned-hot", "pin-fraction": "0.25"},
		"file":         {"trace": file, "policy": "les", "prefill": "true", "spec-from-trace": "true"},
		"predictor":    {"trace": bare, "predict-recall": "0.7", "predict-fp": "2", "predict-seed": "5", "depth": "2"},
		"predictor-ts": {"trace": bare, "predict-recall": "0.7", "threshold": "0.5"},
		"context-cost": {"trace": file, "prefill": "true", "context-cost": "true"},
		"page-cache":   {"tokens": "60", "policy": "lru", "layout": "gguf-mmap", "page-cache": "free-ram", "mmap-neighbours": "true"},
		"expert-quant": {"trace": file, "expert-quant": "Q2_K", "context-cost": "true"},
		"synth-quant":  {"tokens": "60", "policy": "lru", "expert-quant": "Q4_K"},
	}
}

func TestResolveIsAFixpoint(t *testing.T) {
	var in Inputs
	for name, opts := range specsToResolve(t) {
		t.Run(name, func(t *testing.T) {
			s, err := FromOptions(opts)
			if err != nil {
				t.Fatal(err)
			}
			p, err := in.Resolve(s)
			if err != nil {
				t.Fatal(err)
			}
			o, err := p.Run()
			if err != nil {
				t.Fatal(err)
			}
			// The resolved spec resolves to itself and runs to the same result,
			// also with fresh inputs (no state carried between runs).
			var fresh Inputs
			p2, err := fresh.Resolve(o.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p2.Spec, o.Spec) || p2.Spec.Hash() != o.Hash {
				t.Fatalf("resolving the resolved spec changed it:\n%+v\n%+v", p2.Spec, o.Spec)
			}
			o2, err := p2.Run()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o2.Result, o.Result) {
				t.Errorf("same spec, different result:\n%+v\n%+v", o2.Result, o.Result)
			}
			if o.Result.Source != "simulated" || o.Result.Unmeasured != nil {
				t.Errorf("source %q, unmeasured %v", o.Result.Source, o.Result.Unmeasured)
			}
		})
	}
}

// TestResolvedSpecStatesDefaults: a resolved spec states what a default meant.
func TestResolvedSpecStatesDefaults(t *testing.T) {
	p, err := new(Inputs).Resolve(DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Spec
	if r.Model.Variant != "q4_k_m" || r.Device.Profile == nil || r.Cache.Bytes <= 0 ||
		r.Policy.LES == nil || r.Policy.LES.TopN != 8 || r.Policy.LES.Depth != 1 {
		t.Errorf("resolved spec: %+v, les %+v", r, r.Policy.LES)
	}
	p, err = new(Inputs).Resolve(Spec{Version: 1, Model: &Model{Name: DefaultModel}, Trace: Trace{Synthetic: &Synthetic{Tokens: 10, Sequences: 1}},
		Device: Device{Name: DefaultDevice}, Policy: Policy{Name: "pinned-hot"}, Cache: Cache{Size: "3GiB"}, Layout: DefaultLayout})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Policy.PinnedHot == nil || p.Spec.Policy.PinnedHot.PinFraction != 0.5 {
		t.Errorf("pinned-hot: %+v", p.Spec.Policy)
	}
}

// TestInputsShareTraces: one read per file, one generation per synthetic
// trace, shared steps, across many (concurrent) resolutions.
func TestInputsShareTraces(t *testing.T) {
	path := writeTrace(t, 40, 0, 1, nil)
	reads := 0
	in := Inputs{ReadTrace: func(p string) (*LoadedTrace, error) { reads++; return ReadTraceFile(p) }}
	var wg sync.WaitGroup
	plans := make([]*Plan, 6)
	for i, pol := range []string{"lru", "les", "oracle", "lfu", "ondemand", "pinned-hot"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := FromOptions(map[string]string{"trace": path, "policy": pol, "cache": "2GiB"})
			if err == nil {
				plans[i], err = in.Resolve(s)
			}
			if err == nil {
				_, err = plans[i].Run()
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if reads != 1 {
		t.Errorf("the trace was read %d times", reads)
	}
	if &plans[0].Steps[0].Layers[0].Experts[0] != &plans[1].Steps[0].Layers[0].Experts[0] {
		t.Error("runs do not share the trace's routing")
	}
}

func TestResolveRefuses(t *testing.T) {
	withLookahead := writeTrace(t, 20, 0, 1, nil)
	noPrefill := writeTrace(t, 20, 0, 0, nil)
	for _, tc := range []struct {
		name string
		opts map[string]string
		edit func(*Spec)
	}{
		{"depth beyond trace", map[string]string{"trace": withLookahead, "depth": "2"}, nil},
		{"depth on bare trace", map[string]string{"trace": noPrefill, "depth": "2"}, nil},
		{"predictor on lookahead", map[string]string{"trace": withLookahead, "predict-recall": "0.8"}, nil},
		{"digest", map[string]string{"trace": withLookahead}, func(s *Spec) { s.Trace.SHA256 = strings.Repeat("0", 64) }},
		{"cache disagrees", map[string]string{"cache": "3GiB"}, func(s *Spec) { s.Cache.Bytes = 1 << 30 }},
		{"cache too small", map[string]string{"cache": "10MiB"}, nil},
		{"missing file", map[string]string{"trace": "nope.parquet"}, nil},
		{"unknown device", map[string]string{"device": "pixel"}, nil},
		{"unknown variant", map[string]string{"variant": "q2"}, nil},
		{"top_n beyond experts", map[string]string{"tokens": "20", "top-n": "257"}, nil},
		{"max_candidates beyond experts", map[string]string{"tokens": "20", "threshold": "0.5", "max-candidates": "257"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromOptions(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(&s)
			}
			_, err = new(Inputs).Resolve(s)
			errgolden.Check(t, "refused", err)
		})
	}
}

// TestResolveCandidatesBeforeMemory: a les candidate count far beyond the
// model's experts is refused as such, not as a run that needs more memory
// than there is (the memory estimate counts at most every expert).
func TestResolveCandidatesBeforeMemory(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
	}{
		{map[string]string{"tokens": "20", "top-n": "1000000000"}},
		{map[string]string{"tokens": "20", "threshold": "0.5", "max-candidates": "1000000000"}},
	} {
		s, err := FromOptions(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		in := &Inputs{MaxMemory: 1 << 30}
		errgolden.Check(t, fmt.Sprint(tc.opts), errgolden.Err(in.Resolve(s)))
	}
}

// TestResolveWarns: settings the trace gives nothing to act on are named.
func TestResolveWarns(t *testing.T) {
	bare := writeTrace(t, 20, 0, 0, nil)
	s, err := FromOptions(map[string]string{"trace": bare, "prefill": "true", "spec-from-trace": "true"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := new(Inputs).Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"les cannot prefetch", "no prefill tokens", "no decode pass of the trace verified more than one token"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
}

func TestCheckFinite(t *testing.T) {
	r := &sim.Result{HitRate: 0.5}
	if err := checkFinite(r); err != nil {
		t.Fatal(err)
	}
	r.TokensPerSec = math.NaN()
	errgolden.Check(t, "NaN", checkFinite(r))
}

// TestSpeculativeResolution: the drafter's cost reaches the simulator (mtp
// computed by hand from the model spec: the last layer's dense bytes, top-k
// experts and the output head), a missing drafter is refused with how to
// state one, and the acceptance is estimated from recorded passes of two
// (every pass full, so α = 1 for blocks of 2 and 0.5 for blocks of 3:
// one accepted draft per pass against one rejection).
func TestSpeculativeResolution(t *testing.T) {
	s, err := FromOptions(map[string]string{"tokens": "20", "spec-block": "3", "drafter": "mtp"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := new(Inputs).Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	m, last := p.Model, p.Model.Layers[len(p.Model.Layers)-1]
	wantB := last.DenseBytes + int64(m.TopK)*last.ExpertBytes + m.HeadBytes
	wantF := last.DenseFLOPsPerToken + int64(m.TopK)*last.ExpertFLOPsPerToken + m.HeadFLOPsPerToken
	if p.Config.Drafter != "mtp" || p.Config.DraftBytes != wantB || p.Config.DraftFLOPs != wantF || wantB <= m.HeadBytes {
		t.Errorf("mtp drafter: %q %d B %d FLOP, want %d B %d FLOP", p.Config.Drafter, p.Config.DraftBytes, p.Config.DraftFLOPs, wantB, wantF)
	}

	// A model drafter of the bytes the device measured is charged its
	// measured time per draft token; another is charged from its weights,
	// with a warning.
	dev, err := LoadDevice(DefaultDevice, "")
	if err != nil {
		t.Fatal(err)
	}
	dev.DraftTokenNS, dev.DraftBytes = 7e6, 300<<20
	named := s.Device
	s.Device = Device{Profile: dev}
	for _, b := range []int64{300 << 20, 100 << 20} {
		s.Speculative.Drafter = &Drafter{Kind: DrafterModel, Bytes: b, FLOPs: 1e8}
		p, err := new(Inputs).Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "compute.draft_token") })
		if measured := b == dev.DraftBytes; measured != (p.Config.DraftNS == 7e6) || measured == warned || p.Config.DraftBytes != b {
			t.Errorf("model drafter of %d B: draft %d ns, warned %v", b, p.Config.DraftNS, warned)
		}
	}
	s.Device = named

	s.Speculative.Drafter = nil
	errgolden.Check(t, "missing drafter", errgolden.Err(new(Inputs).Resolve(s)))
	s.Speculative.Drafter = &Drafter{Kind: DrafterExplicit}
	errgolden.Check(t, "explicit drafter without cost", errgolden.Err(new(Inputs).Resolve(s)))

	file := writeTrace(t, 40, 0, 1, pairPasses)
	for block, want := range map[string]float64{"2": 1, "3": 0.5} {
		s, err := FromOptions(map[string]string{"trace": file, "spec-block": block, "spec-accept-from-trace": "true", "drafter": "ngram"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := new(Inputs).Resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		if p.Config.SpecAccept != want || p.Spec.Speculative.Accept != want {
			t.Errorf("block %s: acceptance %g (spec %g), want %g", block, p.Config.SpecAccept, p.Spec.Speculative.Accept, want)
		}
		if w := strings.Join(p.Warnings, "\n"); !strings.Contains(w, "estimated from the trace's 20 recorded decode passes") {
			t.Errorf("block %s: warnings %q", block, w)
		}
	}
	// The trace's passes with a drafter: charged for every recorded pass's
	// drafts (here one per pass of two), and the header names the drafter.
	s, err = FromOptions(map[string]string{"trace": file, "spec-from-trace": "true", "drafter": "explicit", "drafter-flops": "1e9"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, kv := range o.Describe() {
		if kv[0] == "speculative" {
			row = kv[1]
		}
	}
	if o.Result.DraftNS <= 0 || o.Result.DraftNS%20 != 0 || !strings.HasPrefix(row, "passes from the trace") || !strings.Contains(row, "explicit") {
		t.Errorf("spec_from_trace with a drafter: draft %d ns over 20 passes, header %q", o.Result.DraftNS, row)
	}
	s, _ = FromOptions(map[string]string{"trace": file, "spec-block": "2", "spec-accept-from-trace": "true", "drafter": "free"})
	s.Speculative.Block = 1
	if _, err := new(Inputs).Resolve(s); err == nil {
		t.Errorf("block 1 accepted")
	}
	oneTok := writeTrace(t, 20, 0, 1, nil)
	s, _ = FromOptions(map[string]string{"trace": oneTok, "spec-block": "2", "spec-accept-from-trace": "true", "drafter": "free"})
	// NB: a trace decoded without drafts is refused, not estimated α 0.
	var single *traces.SingleTokenPassesError
	if _, err := new(Inputs).Resolve(s); !errors.As(err, &single) || single.Passes != 20 {
		t.Errorf("one token per recorded pass: error %v, want a traces.SingleTokenPassesError of 20 passes", err)
	}
}

// TestPageCacheFreeRAM: the page cache sized by free RAM is the device's
// budget (what cache auto gives), the engine is told, and the result says
// how eviction is approximated; neighbours reach the engine.
func TestPageCacheFreeRAM(t *testing.T) {
	s, err := FromOptions(map[string]string{"tokens": "40", "policy": "lru", "layout": "gguf-mmap", "page-cache": "free-ram", "mmap-neighbours": "true"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := new(Inputs).Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	want := sim.DeviceBudget(p.Model, p.Device, maxPos(p.Steps))
	if c := p.Config; !c.PageCacheFreeRAM || !c.MmapNeighbours || c.CacheBytes != want {
		t.Errorf("config: free-ram %v neighbours %v cache %d, want true true %d", c.PageCacheFreeRAM, c.MmapNeighbours, c.CacheBytes, want)
	}
	o, err := p.Run()
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(o.Result.Warnings, "\n"); !strings.Contains(w, "kernel's page cache, sized by free RAM") {
		t.Errorf("warnings lack the page cache note: %s", w)
	}
}

// maxPos is the longest sequence in steps (positions + 1).
func maxPos(steps []traces.Step) int {
	n := 0
	for i := range steps {
		n = max(n, int(steps[i].Pos)+1)
	}
	return n
}

// TestPredictorDepthBeyondModel: a stated predictor deeper than the model's
// layers allow is refused saying how far lookahead can reach.
func TestPredictorDepthBeyondModel(t *testing.T) {
	path := writeTrace(t, 4, 0, 0, nil)
	s, err := FromOptions(map[string]string{"trace": path, "predict-recall": "0.8", "depth": "40"})
	if err != nil {
		t.Fatal(err)
	}
	var in Inputs
	errgolden.Check(t, "depth 40", errgolden.Err(in.Resolve(s)))
}
