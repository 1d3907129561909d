package agent

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// This file is SimEngine's reading of an experiment spec: the only place that
// knows its fields. When the shared experiment spec lands, replace simSpec and
// build with the shared type and its orchestration; nothing else in the
// package depends on them.

// MaxSimTokens bounds a SimEngine run's synthetic trace (memory grows with
// tokens × layers × experts).
const MaxSimTokens = 4096

// simSpec is the experiment a SimEngine runs: a synthetic trace of a built-in
// model through the simulator, with the flags of `lessim simulate` as JSON
// fields (same names, underscores for dashes). Traces are never read from
// files: an agent runs nothing but its engine.
type simSpec struct {
	Model         string   `json:"model"`   // built-in model; default: the loaded model
	Variant       string   `json:"variant"` // quant variant; default: the model's default
	Device        string   `json:"device"`  // must be empty or the engine's device
	Policy        string   `json:"policy"`  // default les
	Cache         string   `json:"cache"`   // bytes with a unit, a percentage, or auto (default)
	Layout        string   `json:"layout"`  // default per-expert
	CachedFirst   *bool    `json:"cached_first"`
	Tokens        int      `json:"tokens"` // default 256
	Seed          *uint64  `json:"seed"`   // default 1
	SpecBlock     int      `json:"spec_block"`
	SpecAccept    *float64 `json:"spec_accept"` // default 0.7
	Context       int      `json:"context"`
	TopN          int      `json:"top_n"`
	Threshold     float64  `json:"threshold"`
	MaxCandidates int      `json:"max_candidates"`
	Depth         *int     `json:"depth"` // default 1
	MaxInflight   string   `json:"max_inflight"`
	NoPrefetch    bool     `json:"no_prefetch"`
	PinFraction   float64  `json:"pin_fraction"`
}

// simRun is a decoded spec, ready to run.
type simRun struct {
	cfg   sim.Config
	steps []traces.Step
	pol   sim.Policy
}

// decodeSimSpec reads and resolves a spec for a SimEngine simulating dev
// with model as its loaded model. Errors wrap ErrInvalidSpec.
func decodeSimSpec(raw json.RawMessage, dev *devices.Device, model string) (*simRun, error) {
	var s simSpec
	if err := decodeStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: spec: %v", ErrInvalidSpec, err)
	}
	r, err := s.build(dev, model)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	return r, nil
}

func (s *simSpec) defaults(model string) {
	if s.Model == "" {
		s.Model = model
	}
	if s.Policy == "" {
		s.Policy = "les"
	}
	if s.Cache == "" {
		s.Cache = "auto"
	}
	if s.Layout == "" {
		s.Layout = string(sim.LayoutPerExpert)
	}
	if s.CachedFirst == nil {
		s.CachedFirst = ptr(true)
	}
	if s.Tokens == 0 {
		s.Tokens = 256
	}
	if s.Seed == nil {
		s.Seed = ptr(uint64(1))
	}
	if s.SpecBlock == 0 {
		s.SpecBlock = 1
	}
	if s.SpecAccept == nil {
		s.SpecAccept = ptr(0.7)
	}
	if s.Depth == nil {
		s.Depth = ptr(1)
	}
	if s.MaxInflight == "" {
		s.MaxInflight = "0"
	}
}

// build mirrors `lessim simulate` on a synthetic trace, so a remote run and a
// local one give the same Result.
func (s *simSpec) build(dev *devices.Device, model string) (*simRun, error) {
	s.defaults(model)
	if s.Device != "" && s.Device != dev.Name {
		return nil, fmt.Errorf("this agent simulates %s; the spec asks for %s", dev.Name, s.Device)
	}
	if s.Model == "" {
		return nil, fmt.Errorf("no model: name one in the spec or load one first")
	}
	if s.Tokens < 1 || s.Tokens > MaxSimTokens {
		return nil, fmt.Errorf("tokens %d: want 1 to %d", s.Tokens, MaxSimTokens)
	}
	if *s.Depth < 0 || *s.Depth > 8 || s.SpecBlock < 1 || s.SpecBlock > 64 || s.Context < 0 || s.TopN < 0 || s.MaxCandidates < 0 {
		return nil, fmt.Errorf("depth (0-8), spec_block (1-64), context, top_n and max_candidates (>= 0) out of range")
	}
	for _, f := range []float64{*s.SpecAccept, s.Threshold, s.PinFraction} {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1 {
			return nil, fmt.Errorf("spec_accept, threshold and pin_fraction must be in [0,1]")
		}
	}
	layout, err := sim.ParseLayout(s.Layout)
	if err != nil {
		return nil, err
	}
	m, err := devices.LookupModel(s.Model, s.Variant)
	if err != nil {
		return nil, err
	}
	o := traces.DefaultSynthOptions()
	o.Tokens, o.Seed = s.Tokens, *s.Seed
	o.LookaheadDepth = max(o.LookaheadDepth, *s.Depth)
	_, steps, err := traces.Synth(m, o)
	if err != nil {
		return nil, err
	}
	traces.IndexLookahead(steps, s.indexDepth(m), s.Threshold > 0)
	ctxTokens := s.Context
	if ctxTokens == 0 {
		ctxTokens = s.Tokens // one synthetic sequence: positions 0..tokens-1
	}
	cache, err := sim.ResolveCache(s.Cache, m, dev, ctxTokens)
	if err != nil {
		return nil, err
	}
	maxInflight, err := devices.ParseSize(s.MaxInflight)
	if err != nil && s.MaxInflight != "0" {
		return nil, fmt.Errorf("max_inflight %q: %v", s.MaxInflight, err)
	}
	p := policies.DefaultParams(m)
	p.Trace = steps
	p.TopN, p.Threshold, p.MaxCandidates, p.Depth = s.TopN, s.Threshold, s.MaxCandidates, *s.Depth
	p.MaxInflightBytes, p.PinFraction, p.Prefetch = maxInflight, s.PinFraction, !s.NoPrefetch
	pol, err := policies.New(s.Policy, p)
	if err != nil {
		return nil, err
	}
	cfg := sim.Config{
		Model: m, Device: dev, CacheBytes: cache, Layout: layout, CachedFirst: *s.CachedFirst,
		SpecBlock: s.SpecBlock, SpecAccept: *s.SpecAccept, Seed: *s.Seed, ContextTokens: s.Context,
		KeepSeries: true,
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &simRun{cfg: cfg, steps: steps, pol: pol}, nil
}

// indexDepth is how many candidates per lookahead vector les asks for (as
// in `lessim simulate`).
func (s *simSpec) indexDepth(m *devices.ModelSpec) int {
	switch {
	case s.Threshold > 0 && s.MaxCandidates > 0:
		return s.MaxCandidates
	case s.Threshold > 0:
		return 2 * m.TopK
	case s.TopN > 0:
		return s.TopN
	}
	return m.TopK
}

func ptr[T any](v T) *T { return &v }
