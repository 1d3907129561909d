package traces

import (
	"errors"
	"fmt"

	"github.com/lessim/lessim/devices"
)

// maxAdoptProblems bounds how many disagreeing facts AdoptModel lists.
const maxAdoptProblems = 10

// AdoptModel replaces an imported trace's model with m, a spec that knows
// more (the experts' tensors and their quant types, hidden and FFN sizes,
// FLOPs, head, KV cache): a route trace records only each layer's expert and
// dense bytes, which leaves the model without what re-quantizing its experts
// or charging compute needs. m must be the model the trace ran: the same
// architecture (when both state it), MoE layer and expert counts, and every
// layer's expert bytes and (when the trace states them) dense bytes; every
// disagreement is listed. The trace's top-k (the run's n_expert_used) is
// kept; the rest is m's. Meta.Info records the adoption.
func AdoptModel(meta *Meta, m *devices.ModelSpec) error {
	have := &meta.Model
	var errs []error
	n := 0
	bad := func(format string, a ...any) {
		if n++; n <= maxAdoptProblems {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	if have.Arch != "" && m.Arch != "" && have.Arch != m.Arch {
		bad("architecture: the trace's is %s, model %s's %s", have.Arch, m.Name, m.Arch)
	}
	if len(have.Layers) != len(m.Layers) {
		bad("MoE layers: the trace has %d, model %s %d", len(have.Layers), m.Name, len(m.Layers))
	}
	if have.Experts != m.Experts {
		bad("experts per layer: the trace has %d, model %s %d", have.Experts, m.Name, m.Experts)
	}
	for i := range min(len(have.Layers), len(m.Layers)) {
		h, w := have.Layers[i], m.Layers[i]
		if h.ExpertBytes != w.ExpertBytes {
			bad("layer %d: expert bytes %d in the trace, %d in model %s", i, h.ExpertBytes, w.ExpertBytes, m.Name)
		}
		if h.DenseBytes != 0 && h.DenseBytes != w.DenseBytes {
			bad("layer %d: dense bytes %d in the trace, %d in model %s", i, h.DenseBytes, w.DenseBytes, m.Name)
		}
	}
	if n > maxAdoptProblems {
		errs = append(errs, fmt.Errorf("and %d more", n-maxAdoptProblems))
	}
	if len(errs) > 0 {
		return fmt.Errorf("model %s (%s) is not the model of this trace:\n%w", m.Name, m.Variant, errors.Join(errs...))
	}
	adopted := *m
	adopted.Layers = append([]devices.LayerSpec(nil), m.Layers...)
	adopted.TopK = have.TopK
	adopted.Source = fmt.Sprintf("%s; adopted for a trace whose own spec was: %s", m.Source, have.Source)
	meta.Model = adopted
	if meta.Info == nil {
		meta.Info = map[string]string{}
	}
	meta.Info["model_adopted"] = fmt.Sprintf("%s (%s), matched on architecture, layers, experts and every layer's expert and dense bytes; top-k %d kept from the trace", m.Name, m.Variant, have.TopK)
	return nil
}
