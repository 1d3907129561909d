package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
)

// liveRemoteOutput is the JSON shape of live --target: where it ran, the
// device facts the agent reported, the spec sent and the measured Result.
type liveRemoteOutput struct {
	Target string            `json:"target"`
	Device agent.DeviceFacts `json:"device"`
	Spec   experiment.Spec   `json:"spec"`
	Result *sim.Result       `json:"result"`
}

// remoteWhy is why a flag of liveLocalOnly or validateLocalOnly is refused.
const remoteWhy = "with --target: the agent runs its own model and engine settings"

// liveLocalOnly are flags a remote run cannot carry: the agent decides them.
var liveLocalOnly = []string{"model", "prompt", "lanes", "threads", "series"}

// liveFlagSpec is the experiment spec of live's flags: no device or model
// (the engine's own), a synthetic trace of --tokens decode tokens, the
// policy, cache and layout.
func liveFlagSpec(cmd *cobra.Command, f *liveFlags) (experiment.Spec, error) {
	syn := experiment.DefaultSynthetic()
	syn.Tokens = f.o.Tokens
	s := experiment.Spec{
		Version: experiment.Version, Trace: experiment.Trace{Synthetic: &syn},
		Policy: experiment.Policy{Name: f.o.Policy}, Cache: experiment.Cache{Size: f.cache},
		Layout: string(sim.LayoutPerExpert), CachedFirst: true,
	}
	if f.o.Stock {
		s.Layout = string(sim.LayoutGGUFMmap)
	}
	changed := cmd.Flags().Changed
	if changed("depth") || f.noPrefetch {
		if err := checkLiveDepth(changed("depth"), f); err != nil {
			return experiment.Spec{}, err
		}
		s.Policy.LES = &experiment.LES{Depth: f.o.Depth, NoPrefetch: f.noPrefetch}
		if f.noPrefetch {
			s.Policy.LES.Depth = 0
		}
		// As simulate: a simulator agent's synthetic trace carries the
		// lookahead les asks for (a live agent's model routes).
		syn.LookaheadDepth = max(syn.LookaheadDepth, s.Policy.LES.Depth)
	}
	return s, nil
}

// checkLiveDepth checks les's --depth and --no-prefetch as simulate does:
// after the policy's name, settings of les only, a depth of at least 1 (policies.CheckDepth), and not
// both at once (no prefetch looks nowhere).
func checkLiveDepth(depthSet bool, f *liveFlags) error {
	if err := policies.CheckName(f.o.Policy); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	switch {
	case f.o.Policy != "les":
		return fmt.Errorf("--depth and --no-prefetch are settings of les, not of %s", f.o.Policy)
	case depthSet && f.noPrefetch:
		return errors.New("--depth does not apply: --no-prefetch is set, so les prefetches nothing")
	case depthSet:
		if err := policies.CheckDepth(f.o.Depth); err != nil {
			return fmt.Errorf("--depth %d: %w", f.o.Depth, err)
		}
	}
	return nil
}

// runLiveRemote runs live's flags on the agent at f.target and prints the
// result with the device facts the agent reported.
func runLiveRemote(cmd *cobra.Command, f *liveFlags) error {
	if _, err := agent.ParseTarget(f.target); err != nil {
		return err
	}
	token, err := clientToken(f.token)
	if err != nil {
		return err
	}
	if err := refuseFlags(cmd, liveLocalOnly, remoteWhy); err != nil {
		return err
	}
	s, err := liveFlagSpec(cmd, f)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// NB: model and device stay absent on the wire: the agent's own.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	delete(m, "device")
	delete(m, "model")
	if raw, err = json.Marshal(m); err != nil {
		return err
	}
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	res, facts, err := agent.RunRemote(ctx, f.target, token, raw, nil)
	if err != nil {
		return err
	}
	s.Device = experiment.Device{Name: facts.Model}
	out := cmd.OutOrStdout()
	if f.format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(liveRemoteOutput{Target: f.target, Device: facts, Spec: s, Result: res})
	}
	mode, tokens := "pread (per-expert)", fmt.Sprintf("%d decode tokens (greedy, the agent's prompt)", f.o.Tokens)
	if f.o.Stock {
		mode = "stock mmap (page faults)"
	}
	if facts.Kind == agent.KindSimulated {
		mode, tokens = s.Layout, fmt.Sprintf("%d decode tokens of a synthetic trace (seed %d)", f.o.Tokens, s.Trace.Synthetic.Seed)
	}
	h := reports.Header{
		{"target", f.target},
		{"device", fmt.Sprintf("%s %s (%s; %s; %s RAM)", facts.Kind, facts.Model, facts.OS, facts.CPU, sim.FormatBytes(facts.RAMBytes))},
		{"engine", facts.Engine + " " + facts.EngineVersion},
		{"model", res.Model},
		{"policy", res.Policy},
		{"cache", fmt.Sprintf("%s (%s)", f.cache, sim.FormatBytes(res.CacheBytes))},
		{"layout", mode},
		{"tokens", tokens},
	}
	return reports.WriteResult(out, h, res)
}
