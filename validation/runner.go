package validation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runs"
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
	Fit     *FitInfo // nil without Options.Fit
	// Stage holds the files written so far (the recorded trace, the fit's
	// series and profile), which the paths above name at Options.Out: the
	// caller adds its own (the table, the results rows, the plots) under
	// Stage.Dir() and moves them all into Out with Stage.Commit, or drops
	// them with Stage.Abort.
	Stage *atomicfile.Stage
}

// inStage runs a validation (run, given o with Out the staging folder)
// into a staging folder of o.Out: on success the report carries the stage
// and names its files at o.Out (relocate); on failure the stage is
// removed, so Out is as it was.
func inStage(o Options, run func(so Options) (*Report, error)) (*Report, error) {
	st, err := atomicfile.NewStage(o.Out)
	if err != nil {
		return nil, fmt.Errorf("validate: out: %w", err)
	}
	so := o
	so.Out = st.Dir()
	rep, err := run(so)
	if err != nil {
		st.Abort()
		return nil, err
	}
	rep.relocate(st)
	return rep, nil
}

// relocate makes the report's paths into the staging folder st name the
// files where st.Commit puts them: the trace, the fitted profile, and the
// trace and profile of each simulated spec (so the specs, their hashes
// and the results rows are those of files at Out, as without a stage).
func (r *Report) relocate(st *atomicfile.Stage) {
	r.Stage = st
	r.Trace = st.Target(r.Trace)
	if r.Fit != nil {
		r.Fit.Profile = st.Target(r.Fit.Profile)
	}
	for i := range r.Specs {
		s := &r.Specs[i]
		s.Trace.Path, s.Device.File = st.Target(s.Trace.Path), st.Target(s.Device.File)
	}
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

// fitRunner is a Runner that can also run a fit point live with its
// per-token series (Options.Fit): the local runner, and the remote one on
// an agent that sends per-token series.
type fitRunner interface {
	// FitRun runs p live once in round r (from 0), decoding tokens tokens,
	// and returns its per-token series as a run (written to Out/fit/).
	FitRun(ctx context.Context, p FitPoint, r, tokens int) (*runs.Run, error)
}

// fitRun is one fit run: its point and its per-token series.
type fitRun struct {
	p   FitPoint
	run *runs.Run
}

// RoundOrder is the order in which a round runs n points: round r (from 0)
// starts at point r mod n and goes round, so that over n rounds every
// point is run first once (the first run of a round measures slower).
// A negative round counts back from round 0; no points (n ≤ 0) is an
// empty order.
func RoundOrder(r, n int) []int {
	if n <= 0 {
		return nil
	}
	first := (r%n + n) % n
	out := make([]int, n)
	for i := range out {
		out[i] = (first + i) % n
	}
	return out
}

// runPoints records the trace into Out (unless Options.Trace is set) with
// r, then runs every point live Options.Repeats times with r, in rounds
// that go round all points (each round opening with the fit points' runs,
// with Options.Fit; within each, round k starts at point k mod n:
// RoundOrder), so that a slow phase of a shared machine spreads over every
// point and the fit alike instead of hitting one; then fits the profile
// (with Options.Fit) and simulates every point with it. resolve turns
// caches into bytes of the model of the trace (the model is known once the
// trace is); fit are Options.Fit, checked, their bytes resolved here.
func runPoints(ctx context.Context, o Options, r Runner, resolve func(trace string, caches []string) ([]int64, error), fit []FitPoint) (*Report, error) {
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
	bytes, err := resolve(rep.Trace, o.Caches)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	fit = slices.Clone(fit)
	for i := range fit {
		b, err := resolve(rep.Trace, []string{fit[i].Cache})
		if err != nil {
			return nil, fmt.Errorf("validate: fit %s: %w", fit[i], err)
		}
		fit[i].CacheBytes = b[0]
	}
	if o.Trace == "" { // Check has checked a reused one
		if err := checkTokens(o, rep.Trace); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
	}
	fr, ok := r.(fitRunner)
	if len(fit) > 0 && !ok {
		return nil, errors.New("validate: --fit needs per-token series, which this runner does not return")
	}
	for _, pol := range o.Policies {
		for i, cache := range o.Caches {
			rep.Points = append(rep.Points, Point{Policy: pol, Cache: cache, CacheBytes: bytes[i]})
		}
	}
	var fitRuns []fitRun
	for k := range o.Repeats {
		for _, i := range RoundOrder(k, len(fit)) {
			p := fit[i]
			step(fmt.Sprintf("fit run %s %d/%d", p, k+1, o.Repeats))
			run, err := fr.FitRun(ctx, p, k, o.Tokens)
			if err != nil {
				return nil, fmt.Errorf("validate: fit run %s: %w", p, err)
			}
			fitRuns = append(fitRuns, fitRun{p, run})
		}
		for _, i := range RoundOrder(k, len(rep.Points)) {
			p := &rep.Points[i]
			step(fmt.Sprintf("live %s %s %d/%d", p.Policy, p.Cache, k+1, o.Repeats))
			res, err := r.Live(ctx, p, o.Tokens)
			if err != nil {
				return nil, fmt.Errorf("validate: live %s at %s: %w", p.Policy, p.Cache, err)
			}
			p.Measured = append(p.Measured, res)
		}
	}
	so := o // the options the points are simulated with
	if len(fitRuns) > 0 {
		step("fit " + strings.Join(o.Fit, ", "))
		if rep.Fit, err = fitProfile(&o, fit, rep.Trace, fitRuns); err != nil {
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
		return fmt.Errorf("simulate %s at %s: %w", o.Policies[0], o.Caches[0], err)
	}
	if out.Result.Tokens != int64(o.Tokens) {
		return fmt.Errorf("the trace %s has %d decode tokens, the live runs decode %d: record it with the same prompt and --tokens",
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
