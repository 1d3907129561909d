package policies

import (
	"errors"
	"fmt"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// Params configures every policy; each reads only the fields it needs. A zero
// field means its default where one is stated.
//
// NB: Prefetch and Depth have no "unset" state: Prefetch=false or Depth=0
// turns les's prefetch off. DefaultParams fills them for the ordinary run.
type Params struct {
	// Model is the model being served (required by every policy).
	Model *devices.ModelSpec
	// Trace is the full list of steps; only oracle and pinned-hot read it (the
	// future knowledge an offline profiling run or an oracle has).
	Trace []traces.Step
	// Future is the trace's expert column (NewFuture) for a trace streamed
	// rather than held: oracle, belady and pinned-hot read it instead of
	// Trace when it is set.
	Future *Future

	// TopN is les's candidate count per token and depth; 0 means the model's top-k.
	TopN int
	// Threshold > 0 switches les to the smallest candidate set whose cumulative
	// softmax probability reaches Threshold (at most MaxCandidates); 0 uses TopN.
	Threshold float64
	// MaxCandidates caps a threshold candidate set; 0 means 2 × the model's top-k.
	MaxCandidates int
	// Depth is how many layers ahead les prefetches (1 = next layer only; 0 = none).
	Depth int
	// MaxInflightBytes caps les's prefetches: it stops adding once its request
	// plus the bytes already loading would exceed it; 0 means no cap.
	MaxInflightBytes int64
	// PinFraction is the fraction of cache bytes pinned-hot pins; 0 means 0.5.
	PinFraction float64
	// Prefetch enables les's prefetch; false makes les behave exactly like ondemand.
	Prefetch bool
}

// DefaultParams is the ordinary configuration for model m: les prefetches one
// layer ahead with the model's top-k candidates and no byte cap.
func DefaultParams(m *devices.ModelSpec) Params {
	return Params{Model: m, Depth: 1, Prefetch: true}.withDefaults()
}

// resolve applies the defaults and validates p for the policy called name.
func (p Params) resolve(name string) (Params, error) {
	p = p.withDefaults()
	if err := p.validate(name); err != nil {
		return p, fmt.Errorf("policy %s: %w", name, err)
	}
	return p, nil
}

// withDefaults resolves zero fields that have a default.
func (p Params) withDefaults() Params {
	if p.Model != nil {
		if p.TopN == 0 {
			p.TopN = p.Model.TopK
		}
		if p.MaxCandidates == 0 {
			p.MaxCandidates = 2 * p.Model.TopK
		}
	}
	if p.PinFraction == 0 {
		p.PinFraction = 0.5
	}
	return p
}

// validate reports every problem with p at once, for the policy called name.
func (p Params) validate(name string) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.Model == nil {
		add("model: missing")
	} else if len(p.Model.Layers) == 0 || p.Model.Experts <= 0 || p.Model.TopK <= 0 {
		add("model %q: needs layers, experts and top_k (got %d layers, %d experts, top-%d)",
			p.Model.Name, len(p.Model.Layers), p.Model.Experts, p.Model.TopK)
	} else {
		for i, l := range p.Model.Layers {
			if l.ExpertBytes <= 0 {
				add("model %q: layer %d: expert_bytes must be positive (got %d)", p.Model.Name, i, l.ExpertBytes)
			}
		}
	}
	if p.TopN < 0 {
		add("top-n: must be >= 0 (got %d)", p.TopN)
	}
	if p.Threshold < 0 || p.Threshold > 1 || p.Threshold != p.Threshold {
		add("threshold: must be in [0,1] (got %g)", p.Threshold)
	}
	if p.MaxCandidates < 0 {
		add("max candidates: must be >= 0 (got %d)", p.MaxCandidates)
	}
	if p.Depth < 0 {
		add("depth: must be >= 0 (got %d)", p.Depth)
	}
	if p.MaxInflightBytes < 0 {
		add("max inflight bytes: must be >= 0 (got %d)", p.MaxInflightBytes)
	}
	if p.PinFraction < 0 || p.PinFraction > 1 || p.PinFraction != p.PinFraction {
		add("pin fraction: must be in [0,1] (got %g)", p.PinFraction)
	}
	if (name == "oracle" || name == "belady" || name == "pinned-hot") && p.Model != nil && len(p.Model.Layers) > 0 && p.Model.Experts > 0 {
		if f := p.Future; f != nil {
			if f.layers != len(p.Model.Layers) || f.experts != p.Model.Experts {
				add("future: built for %d layers × %d experts, model %q has %d × %d", f.layers, f.experts, p.Model.Name, len(p.Model.Layers), p.Model.Experts)
			}
		} else if err := checkTrace(p.Model, p.Trace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// future is p.Future, or the Future of p.Trace (checked by validate).
func (p Params) future() (*Future, error) {
	if p.Future != nil {
		return p.Future, nil
	}
	return futureOf(p.Model, p.Trace)
}

// maxTraceProblems bounds how many bad trace entries an error lists.
const maxTraceProblems = 10

// checkTrace reports every problem (up to maxTraceProblems, then a count) with
// a trace that oracle or pinned-hot must read: it must not be empty, each step
// must route every MoE layer of m, and experts must be in range.
func checkTrace(m *devices.ModelSpec, steps []traces.Step) error {
	if len(steps) == 0 {
		return errors.New("trace: missing (this policy reads the whole trace)")
	}
	var errs []error
	bad := 0
	note := func(format string, a ...any) {
		bad++
		if bad <= maxTraceProblems {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	for i := range steps {
		s := &steps[i]
		if len(s.Layers) != len(m.Layers) {
			note("trace step %d: has %d MoE layers, model %q has %d", i, len(s.Layers), m.Name, len(m.Layers))
			continue
		}
		for l := range s.Layers {
			for _, e := range s.Layers[l].Experts {
				if e < 0 || int(e) >= m.Experts {
					note("trace step %d layer %d: expert %d out of range [0,%d)", i, l, e, m.Experts)
				}
			}
		}
	}
	if bad > maxTraceProblems {
		errs = append(errs, fmt.Errorf("trace: %d more problems", bad-maxTraceProblems))
	}
	return errors.Join(errs...)
}

// CheckDepth refuses a lookahead depth that les cannot be given as a
// setting: prefetch looks at least one layer ahead, and turning it off is
// its own switch (no-prefetch), not depth 0. simulate's --depth, live's
// --depth and the agent's policy.les.depth say the same.
func CheckDepth(d int) error {
	if d < 1 {
		return errors.New("must be >= 1 (use --no-prefetch to turn prefetch off)")
	}
	return nil
}

// CheckDepthFits refuses a lookahead depth that reaches past model m's last
// MoE layer: from the first layer, depth d looks at layer d, so d must be
// at most the MoE layers − 1.
func CheckDepthFits(d int, m *devices.ModelSpec) error { return CheckDepthReach(d, len(m.Layers)) }

// CheckDepthReach is CheckDepthFits for a model of layers MoE layers.
func CheckDepthReach(d, layers int) error {
	if most := layers - 1; d > most {
		return fmt.Errorf("depth %d: the model has %d MoE layers, so lookahead reaches at most %d layer(s) ahead", d, layers, most)
	}
	return nil
}
