package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/sim"
)

// Report is a finished validation: the points, their specs (per point, the
// simulated spec as resolved), the comparison, and the trace used.
type Report struct {
	// Target and Facts are the device agent that measured (RunRemote) and
	// the facts it reported; "" and nil for this machine (Run).
	Target  string
	Facts   *agent.DeviceFacts
	Trace   string
	Points  []Point
	Specs   []experiment.Spec
	Summary *Summary
}

// Runner is the measured side of a validation: where the routing is
// recorded and the points are run live. The local runner (Run) drives
// llama.cpp on this machine; the remote runner (RunRemote) asks a device
// agent.
type Runner interface {
	// Record writes to path the trace of the routing the live runs see:
	// the prompt they prefill and tokens greedy decode tokens.
	Record(ctx context.Context, path string, tokens int) error
	// Live measures point p once, decoding tokens tokens.
	Live(ctx context.Context, p *Point, tokens int) (*sim.Result, error)
}

// runPoints records the trace into Out (unless Options.Trace is set) with
// r, simulates every policy × cache with the calibrated profile, then runs
// every point live Options.Repeats times with r. Repeats go round all
// points in turn, so slow phases of a shared machine spread over the points
// instead of hitting one. caches resolves Options.Caches in bytes once the
// trace (and so the model) is known.
func runPoints(ctx context.Context, o Options, r Runner, caches func(trace string) ([]int64, error)) (*Report, error) {
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
		if err := r.Record(ctx, rep.Trace, o.Tokens); err != nil {
			return nil, fmt.Errorf("validate: record: %w", err)
		}
	}
	bytes, err := caches(rep.Trace)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	var in experiment.Inputs
	for _, pol := range o.Policies {
		for i, cache := range o.Caches {
			step(fmt.Sprintf("simulate %s %s", pol, cache))
			plan, err := in.Resolve(o.Spec(rep.Trace, pol, cache))
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
			rep.Points = append(rep.Points, Point{Policy: pol, Cache: cache, CacheBytes: bytes[i], Predicted: out.Result})
			rep.Specs = append(rep.Specs, out.Spec)
		}
	}
	for k := range o.Repeats {
		for i := range rep.Points {
			p := &rep.Points[i]
			step(fmt.Sprintf("live %s %s %d/%d", p.Policy, p.Cache, k+1, o.Repeats))
			res, err := r.Live(ctx, p, o.Tokens)
			if err != nil {
				return nil, fmt.Errorf("validate: live %s at %s: %w", p.Policy, p.Cache, err)
			}
			p.Measured = append(p.Measured, res)
		}
	}
	if rep.Summary, err = Summarize(rep.Points); err != nil {
		return nil, err
	}
	return rep, nil
}
