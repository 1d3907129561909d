//go:build llamacpp && linux

package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/experiment"
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
// so the recorded routing is the routing the live runs see; then simulates
// every policy × cache with the calibrated profile and runs it live
// Options.Repeats times. Repeats go round all points in turn, so slow
// phases of a shared machine spread over the points instead of hitting one.
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
	so := o // the options the points are simulated with
	if len(o.Fit) > 0 {
		step("fit " + strings.Join(o.Fit, ", "))
		if rep.Fit, err = fitProfile(ctx, &o, c, rep.Trace, prompt); err != nil {
			return nil, err
		}
		so.DeviceFile = rep.Fit.Profile
	}
	var in experiment.Inputs
	for _, pol := range o.Policies {
		for i, cache := range o.Caches {
			step(fmt.Sprintf("simulate %s %s", pol, cache))
			plan, err := in.Resolve(so.Spec(rep.Trace, pol, cache))
			if err != nil {
				return nil, fmt.Errorf("validate: simulate %s at %s: %w", pol, cache, err)
			}
			out, err := plan.Run()
			if err != nil {
				return nil, fmt.Errorf("validate: simulate %s at %s: %w", pol, cache, err)
			}
			if out.Result.Tokens != int64(o.Tokens) {
				return nil, fmt.Errorf("validate: the trace %s has %d decode tokens, the live runs decode %d: record it with the same prompt and --tokens",
					rep.Trace, out.Result.Tokens, o.Tokens)
			}
			rep.Points = append(rep.Points, Point{Policy: pol, Cache: cache, CacheBytes: c.CacheBytes[i], Predicted: out.Result})
			rep.Specs = append(rep.Specs, out.Spec)
		}
	}
	for r := range o.Repeats {
		for i := range rep.Points {
			p := &rep.Points[i]
			step(fmt.Sprintf("live %s %s %d/%d", p.Policy, p.Cache, r+1, o.Repeats))
			lo := live.DefaultOptions()
			lo.Model, lo.Policy, lo.Cache, lo.Tokens, lo.Prompt, lo.Threads = o.Model, p.Policy, p.CacheBytes, o.Tokens, prompt, 1
			if o.Lanes > 0 {
				lo.Lanes = o.Lanes
			}
			res, _, err := live.Run(ctx, lo)
			if err != nil {
				return nil, fmt.Errorf("validate: live %s at %s: %w", p.Policy, p.Cache, err)
			}
			if res.Source == "" {
				res.Source = sim.SourceMeasured
			}
			p.Measured = append(p.Measured, res)
		}
	}
	if rep.Summary, err = Summarize(rep.Points); err != nil {
		return nil, err
	}
	if rep.Fit != nil {
		rep.Summary.MarkFit(rep.Fit.Points)
	}
	return rep, nil
}
