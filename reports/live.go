package reports

import (
	"fmt"
	"io"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/sim"
)

// WriteLive renders a measured run of spec s as WriteResult does, under a
// header saying where and how it ran: on this machine (s.Host set; info is
// the model the live engine loaded), or on the engine at target, which
// reported facts.
func WriteLive(w io.Writer, target string, facts agent.DeviceFacts, info *agent.ModelInfo, s experiment.Spec, res *sim.Result) error {
	stock := s.Layout == string(sim.LayoutGGUFMmap)
	tokens := s.Trace.Synthetic.Tokens
	if h := s.Host; h != nil {
		mode := fmt.Sprintf("pread on %d I/O lane(s), %d compute thread(s)", h.Lanes, h.Threads)
		if stock {
			mode = fmt.Sprintf("stock mmap (page faults), %d compute thread(s)", h.Threads)
		}
		prompt := h.Prompt
		if prompt == "" {
			prompt = live.DefaultPrompt
		}
		return WriteResult(w, Header{
			{"model", fmt.Sprintf("%s (%d MoE layers × %d experts, top-%d)", info.Name, info.Layers, info.Experts, info.TopK)},
			{"device", res.Device},
			{"policy", s.Policy.Name},
			{"cache", fmt.Sprintf("%s (%.0f%% of expert bytes)", sim.FormatBytes(res.CacheBytes), 100*float64(res.CacheBytes)/float64(info.TotalExpertBytes))},
			{"layout", mode},
			{"prompt", fmt.Sprintf("%q, then %d decode tokens (greedy)", prompt, tokens)},
		}, res)
	}
	mode, desc := "pread (per-expert)", fmt.Sprintf("%d decode tokens (greedy, the agent's prompt)", tokens)
	if stock {
		mode = "stock mmap (page faults)"
	}
	if facts.Kind == agent.KindSimulated {
		mode, desc = s.Layout, fmt.Sprintf("%d decode tokens of a synthetic trace (seed %d)", tokens, s.Trace.Synthetic.Seed)
	}
	return WriteResult(w, Header{
		{"target", target},
		{"device", fmt.Sprintf("%s %s (%s; %s; %s RAM)", facts.Kind, facts.Model, facts.OS, facts.CPU, sim.FormatBytes(facts.RAMBytes))},
		{"engine", facts.Engine + " " + facts.EngineVersion},
		{"model", res.Model},
		{"policy", res.Policy},
		{"cache", fmt.Sprintf("%s (%s)", s.Cache.Size, sim.FormatBytes(res.CacheBytes))},
		{"layout", mode},
		{"tokens", desc},
	}, res)
}
