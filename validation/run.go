//go:build llamacpp && linux

package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/runtime/record"
	"github.com/lessim/lessim/sim"
)

// Report is a finished validation: the points, their specs (per point, the
// simulated spec as resolved), the comparison, and the trace used.
type Report struct {
	Trace   string
	Points  []Point
	Specs   []experiment.Spec
	Summary *Summary
	Fit     *FitInfo // nil without Options.Fit
}

// Run checks the options, records the trace (unless Options.Trace is set)
// with the prompt and token count of the live runs, greedy and on 1 thread,
// so the recorded routing is the routing the live runs see; then runs every
// policy × cache live Options.Repeats times, in rounds that go round all
// points (each round opening with the fit points' runs, with Options.Fit),
// so slow phases of a shared machine spread over the points and the fit
// instead of hitting one; then fits the profile (with Options.Fit) and
// simulates every point with it.
func Run(ctx context.Context, o Options) (*Report, error) {
	c, err := o.Check()
	if err != nil {
		return nil, err
	}
	prompt := o.Prompt
	if prompt == "" {
		prompt = live.DefaultPrompt
	}
	step := func(s string) {
		if o.Progress != nil {
			o.Progress(s)
		}
	}
	rep := &Report{Trace: o.Trace}
	if rep.Trace == "" {
		rep.Trace = filepath.Join(o.Out, TraceFile)
		step("record")
		if err := os.MkdirAll(filepath.Dir(rep.Trace), 0o755); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		ro := record.DefaultOptions()
		ro.ModelPath, ro.Prompts, ro.PromptSet = o.Model, []string{prompt}, "validate"
		ro.Tokens, ro.Temperature, ro.Threads, ro.Logits, ro.Out = o.Tokens, 0, 1, false, rep.Trace
		if _, err := record.Record(ctx, ro); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
	}
	if err := checkTokens(o, rep.Trace); err != nil {
		return nil, err
	}
	for _, pol := range o.Policies {
		for i, cache := range o.Caches {
			rep.Points = append(rep.Points, Point{Policy: pol, Cache: cache, CacheBytes: c.CacheBytes[i]})
		}
	}
	// Live first, round by round (the fit points' runs open each round), so
	// that a slow phase of a shared machine spreads over every point and
	// the fit alike; then the fit, then the simulations.
	var fitRuns []*runs.Run
	for r := range o.Repeats {
		for _, p := range c.Fit {
			step(fmt.Sprintf("fit run %s %d/%d", p, r+1, o.Repeats))
			run, err := fitRun(ctx, &o, p, r, prompt)
			if err != nil {
				return nil, err
			}
			fitRuns = append(fitRuns, run)
		}
		for i := range rep.Points {
			p := &rep.Points[i]
			step(fmt.Sprintf("live %s %s %d/%d", p.Policy, p.Cache, r+1, o.Repeats))
			res, err := liveRun(ctx, &o, p.Policy, p.CacheBytes, prompt)
			if err != nil {
				return nil, fmt.Errorf("validate: live %s at %s: %w", p.Policy, p.Cache, err)
			}
			p.Measured = append(p.Measured, res)
		}
	}
	so := o // the options the points are simulated with
	if len(fitRuns) > 0 {
		step("fit " + strings.Join(o.Fit, ", "))
		if rep.Fit, err = fitProfile(&o, c, rep.Trace, fitRuns); err != nil {
			return nil, err
		}
		so.DeviceFile = rep.Fit.Profile
	}
	var in experiment.Inputs
	for i := range rep.Points {
		p := &rep.Points[i]
		step(fmt.Sprintf("simulate %s %s", p.Policy, p.Cache))
		out, err := simulate(&in, so.Spec(rep.Trace, p.Policy, p.Cache))
		if err != nil {
			return nil, fmt.Errorf("validate: simulate %s at %s: %w", p.Policy, p.Cache, err)
		}
		p.Predicted = out.Result
		rep.Specs = append(rep.Specs, out.Spec)
	}
	if rep.Summary, err = Summarize(rep.Points); err != nil {
		return nil, err
	}
	if rep.Fit != nil {
		rep.Summary.MarkFit(rep.Fit.Points)
	}
	return rep, nil
}

// checkTokens refuses a trace whose decode tokens are not the live runs'
// (simulating its first point with the given profile, before any live run).
func checkTokens(o Options, trace string) error {
	var in experiment.Inputs
	out, err := simulate(&in, o.Spec(trace, o.Policies[0], o.Caches[0]))
	if err != nil {
		return fmt.Errorf("validate: simulate %s at %s: %w", o.Policies[0], o.Caches[0], err)
	}
	if out.Result.Tokens != int64(o.Tokens) {
		return fmt.Errorf("validate: the trace %s has %d decode tokens, the live runs decode %d: record it with the same prompt and --tokens",
			trace, out.Result.Tokens, o.Tokens)
	}
	return nil
}

// simulate resolves and runs one spec.
func simulate(in *experiment.Inputs, s experiment.Spec) (*experiment.Outcome, error) {
	plan, err := in.Resolve(s)
	if err != nil {
		return nil, err
	}
	return plan.Run()
}

// liveRun measures one point live (1 compute thread).
func liveRun(ctx context.Context, o *Options, policy string, cache int64, prompt string) (*sim.Result, error) {
	lo := live.DefaultOptions()
	lo.Model, lo.Policy, lo.Cache, lo.Tokens, lo.Prompt, lo.Threads = o.Model, policy, cache, o.Tokens, prompt, 1
	if o.Lanes > 0 {
		lo.Lanes = o.Lanes
	}
	res, _, err := live.Run(ctx, lo)
	if err != nil {
		return nil, err
	}
	if res.Source == "" {
		res.Source = sim.SourceMeasured
	}
	return res, nil
}
