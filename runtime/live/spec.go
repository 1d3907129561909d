package live

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/sim"
)

// ApplySpec sets o from the settings of an experiment spec that the live
// engine honours, for model m (the GGUF being run): the policy (and les's
// depth and no_prefetch), the cache (a size or a percentage of m's expert
// bytes), the layout (gguf-mmap = the stock baseline's page faults) and the
// synthetic trace's decode tokens. Settings the engine cannot honour are
// refused together, each with its reason; the routing model's settings (a
// synthetic trace's skew, reuse, ...) do not apply, because the model
// routes (the caller says so: RoutingNote). The caller checks what is its
// own to check (a trace file, the device, the model's name).
func (o *Options) ApplySpec(s *experiment.Spec, m *devices.ModelSpec) (warnings []string, err error) {
	var bad []string
	refuse := func(cond bool, what string) {
		if cond {
			bad = append(bad, what)
		}
	}
	refuse(s.Predictor != nil, "predictor: the live engine routes with the model's own routers")
	refuse(s.Speculative != nil || s.SpecFromTrace, "speculative decoding: not supported by the live engine")
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
		bad = append(bad, "layout "+s.Layout+": the live engine runs per-expert (pread) or gguf-mmap (stock page faults)")
	}
	o.Policy = s.Policy.Name
	switch c := s.Cache; {
	case c.Size != "":
		b, err := ResolveCache(c.Size, m)
		if err != nil {
			bad = append(bad, err.Error())
		}
		o.Cache = b
	default:
		o.Cache = c.Bytes
	}
	if y := s.Trace.Synthetic; y != nil {
		o.Tokens = y.Tokens
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "; "))
	}
	if s.CachedFirst && !o.Stock {
		warnings = append(warnings, "cached_first: the live engine computes a layer's experts once all are resident (barrier order) either way")
	}
	return warnings, nil
}

// ResolveCache is devices.ResolveCache for a run of the live engine on model
// m: a size ("256MiB") or a percentage of m's expert bytes ("25%"). A
// device's budget (auto) has no meaning for a run measured in this
// machine's page cache, so it is refused, and an error suggests only the
// forms a live run takes.
func ResolveCache(size string, m *devices.ModelSpec) (int64, error) {
	if strings.TrimSpace(size) == "auto" {
		return 0, errors.New("cache auto: a live run takes a size (256MiB) or a percentage of the expert bytes (25%), not a device's budget")
	}
	b, err := devices.ResolveCache(size, m, nil)
	if se := (*devices.CacheSizeError)(nil); errors.As(err, &se) {
		return 0, fmt.Errorf("cache %q: %v (write e.g. 256MiB or 25%%)", se.Size, se.Err)
	}
	if err != nil {
		return 0, err
	}
	return b, nil
}

// RoutingNote is the warning for a spec whose synthetic trace group states
// routing settings: the live engine's model routes.
const RoutingNote = "live engine: the spec's synthetic routing settings do not apply (the model routes); its decode tokens do"
