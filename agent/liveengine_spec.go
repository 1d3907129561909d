package agent

import (
	"cmp"
	"fmt"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// applySpec sets o from the settings of an experiment spec that the live
// engine honours, for model m (the GGUF being run): the policy, the cache,
// the layout (gguf-mmap = the stock baseline's page faults), the drafter
// and the synthetic trace's decode tokens. Each setting it cannot honour
// goes to refuse (when cond holds, what says why); the routing model's
// settings do not apply (the model routes: RoutingNote). draft is the host
// group's draft model ("" for none: an agent never opens a client's path).
func applySpec(o *live.Options, s *experiment.Spec, m *devices.ModelSpec, draft string, refuse func(cond bool, what string)) (warnings []string) {
	refuse(s.Predictor != nil, "predictor: the live engine routes with the model's own routers")
	refuse(s.SpecFromTrace, "spec_from_trace: the live engine decodes its own passes")
	kind := ""
	if sp := s.Speculative; sp != nil && sp.Drafter != nil {
		kind = sp.Drafter.Kind
	}
	refuse(kind != record.DrafterModel && draft != "", "host.draft_model: a draft model runs with the model drafter only")
	if sp := s.Speculative; sp != nil {
		refuse(sp.AcceptFromTrace, "speculative.accept_from_trace: the live engine's acceptance follows from its drafter")
		refuse(sp.DraftReuse != nil, "speculative.draft_reuse: the live engine's rejected drafts route as the model routes them")
		refuse(kind != record.DrafterControlled && kind != record.DrafterNgram && kind != record.DrafterModel, "speculative.drafter "+cmp.Or(kind, "missing")+": the live engine runs the controlled, ngram and model drafters")
		refuse(kind == record.DrafterModel && draft == "", "speculative.drafter model: no draft model (host.draft_model, lessim live --draft-model on this machine)")
		o.Spec = &record.Speculative{Block: sp.Block, Drafter: kind, Accept: sp.Accept, Seed: sp.AcceptSeed}
		if kind == record.DrafterModel {
			o.Spec.DraftModel = draft
		}
		if kind == record.DrafterNgram {
			o.Spec.Accept = 0
			warnings = append(warnings, "speculative.accept: the ngram drafter's acceptance is the text's; the spec's is the simulator's assumption")
		}
	}
	refuse(s.Prefill, "prefill: the live engine prefills its prompt without measuring it")
	refuse(s.ContextTokens != 0, "context_tokens: the live engine's context is its prompt and tokens")
	refuse(s.ContextCost, "context_cost: a simulator option; the live engine pays its real attention cost")
	refuse(s.PageCache != "" || s.MmapNeighbours, "page_cache, mmap_neighbours: simulator models of the stock page-fault path; the live engine's kernel does what it does")
	refuse(s.Policy.PinnedHot != nil, "policy.pinned_hot: not supported by the live engine")
	refuse(s.ExpertQuant != "", "expert_quant: the live engine runs the GGUF's own types (quantize the file to measure another)")
	if l := s.Policy.LES; l != nil {
		refuse(l.TopN != 0 || l.Threshold != 0 || l.MaxCandidates != 0 || l.MaxInflightBytes != 0, "policy.les: the live engine takes only depth and no_prefetch")
		if l.Depth > 0 {
			o.Depth, o.Prefetch = l.Depth, true
		}
		if l.NoPrefetch {
			o.Depth, o.Prefetch = 0, false
		}
	}
	switch s.Layout {
	case string(sim.LayoutPerExpert):
	case string(sim.LayoutGGUFMmap):
		o.Stock = true
	default:
		refuse(true, "layout "+s.Layout+": the live engine runs per-expert (pread) or gguf-mmap (stock page faults)")
	}
	o.Policy = s.Policy.Name
	switch c := s.Cache; {
	case c.Size != "":
		b, err := live.ResolveCache(c.Size, m)
		refuse(err != nil, fmt.Sprint(err))
		o.Cache = b
	default:
		o.Cache = c.Bytes
	}
	if y := s.Trace.Synthetic; y != nil {
		o.Tokens = y.Tokens
	}
	if s.CachedFirst && !o.Stock {
		warnings = append(warnings, "cached_first: the live engine computes a layer's experts once all are resident (barrier order) either way")
	}
	return warnings
}
