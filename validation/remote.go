package validation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// RunRemote is Run against the device agent at Options.Target: the agent
// records the routing of its greedy decode (the record request) into
// Options.Out's trace, the host simulates that trace with
// Options.DeviceFile, and the agent runs every point live over one
// connection. The files go to Report.Stage (see Options.Out). Every measured result records the device facts the agent
// reported (Result.Device) and the report carries them (Report.Facts). It
// needs no llama.cpp on this side.
func RunRemote(ctx context.Context, o Options) (*Report, error) {
	if o.Target == "" {
		return nil, fmt.Errorf("validate: no target")
	}
	checked, err := o.Check()
	if err != nil {
		return nil, err
	}
	return inStage(o, func(o Options) (*Report, error) { return runRemote(ctx, o, checked) })
}

// runRemote is RunRemote after the checks, writing into o.Out.
func runRemote(ctx context.Context, o Options, checked *Checked) (*Report, error) {
	c, err := agent.DialWith(ctx, o.Target, o.Token, o.Client)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	defer c.Close()
	if len(checked.Fit) > 0 {
		if err := c.SeriesSupported(); err != nil {
			return nil, fmt.Errorf("validate: --fit needs the fit runs' per-token series: %w", err)
		}
	}
	facts := c.Facts()
	r := &remoteRunner{c: c, target: o.Target, facts: facts, out: o.Out}
	rep, err := runPoints(ctx, o, r, r.caches, checked.Fit)
	if err != nil {
		return nil, err
	}
	rep.Target, rep.Facts = o.Target, &facts
	return rep, nil
}

// remoteRunner records and runs on a device agent.
type remoteRunner struct {
	c      *agent.Client
	target string
	facts  agent.DeviceFacts
	out    string // Options.Out: the fit runs' series go to its fit folder
}

// Record asks the agent for the trace and writes it to path atomically.
func (r *remoteRunner) Record(ctx context.Context, path string, tokens int) error {
	t, err := r.c.Record(ctx, tokens)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, t.Parquet)
}

// caches resolves caches against the model of the trace (the agent's
// model, as recorded).
func (r *remoteRunner) caches(trace string, caches []string) ([]int64, error) {
	tr, err := traces.Open(trace)
	if err != nil {
		return nil, err
	}
	m := tr.Meta().Model
	tr.Close()
	b, errs := resolveCaches(&m, caches)
	if len(errs) > 0 {
		return nil, fmt.Errorf("the trace's model %s: %v", m.Name, errs[0])
	}
	return b, nil
}

// RemoteSpec is the run an agent is sent for point p: the agent's own
// device and model (both absent), a synthetic trace of tokens decode
// tokens (a live agent decodes its model greedily; the simulator agent
// simulates the default synthetic routing, which is what its record
// request returns), the point's policy and cache, and the simulated spec's
// layout and compute order.
func RemoteSpec(p *Point, tokens int) (json.RawMessage, error) {
	syn := experiment.DefaultSynthetic()
	syn.Tokens = tokens
	s := experiment.Spec{
		Version: experiment.Version, Trace: experiment.Trace{Synthetic: &syn},
		Policy: experiment.Policy{Name: p.Policy}, Cache: experiment.Cache{Size: p.Cache},
		Layout: experiment.DefaultLayout, CachedFirst: false, Barrier: true, // the live engine's order
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "device")
	delete(m, "model")
	return json.Marshal(m)
}

// Live runs p once on the agent and checks the result is the point asked
// for (checked).
func (r *remoteRunner) Live(ctx context.Context, p *Point, tokens int) (*sim.Result, error) {
	raw, err := RemoteSpec(p, tokens)
	if err != nil {
		return nil, err
	}
	res, err := r.c.Run(ctx, raw, nil)
	if err != nil {
		return nil, err
	}
	return r.checked(res, p, tokens)
}

// checked checks res is the run of p asked for: its tokens, its cache in
// bytes (the agent resolved it against the trace's model) and the trace's
// model; and marks it measured on the agent's device.
func (r *remoteRunner) checked(res *sim.Result, p *Point, tokens int) (*sim.Result, error) {
	switch {
	case res.Tokens != int64(tokens):
		return nil, fmt.Errorf("the agent decoded %d tokens, asked for %d", res.Tokens, tokens)
	case res.CacheBytes != p.CacheBytes:
		return nil, fmt.Errorf("the agent resolved cache %s to %s, the trace's model to %s: the trace is not of the agent's model",
			p.Cache, sim.FormatBytes(res.CacheBytes), sim.FormatBytes(p.CacheBytes))
	}
	if res.Source == "" {
		res.Source = sim.SourceMeasured
	}
	res.Device = DescribeFacts(r.facts, r.target)
	return res, nil
}

// DescribeFacts is one line naming the device an agent measured on.
func DescribeFacts(f agent.DeviceFacts, target string) string {
	return fmt.Sprintf("%s %s at %s (%s; %s; %s RAM; %s %s)", f.Kind, f.Model, target, f.OS, f.CPU,
		sim.FormatBytes(f.RAMBytes), f.Engine, f.EngineVersion)
}
