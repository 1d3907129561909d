package validation

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// Report is a finished validation: the points, their specs (per point, the
// simulated spec as resolved), the comparison, and the trace used.
type Report struct {
	Target  string // the device agent that measured and the facts it reported; "" and nil here
	Facts   *agent.DeviceFacts
	Trace   string
	Points  []reports.VsPoint
	Specs   []experiment.Spec
	Summary *reports.Comparison
	Fit     *FitInfo // nil without Options.Fit
	// Stage holds the files written so far, which the paths above name at
	// Options.Out: Write adds its own and commits them all into Out.
	Stage *atomicfile.Stage
}

// inStage runs a validation into a staging folder of o.Out: on success the
// report carries the stage and names its files at o.Out; on failure the
// stage is removed.
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
	// NB: the report's paths into the stage name the files where Commit
	// puts them (so the specs, their hashes and the results rows are those
	// of files at Out, as without a stage).
	rep.Stage, rep.Trace = st, st.Target(rep.Trace)
	if rep.Fit != nil {
		rep.Fit.Profile = st.Target(rep.Fit.Profile)
	}
	for i := range rep.Specs {
		s := &rep.Specs[i]
		s.Trace.Path, s.Device.File = st.Target(s.Trace.Path), st.Target(s.Device.File)
	}
	return rep, nil
}

// Run checks the options, opens the engine that measures (the live engine
// here, or a client of the agent at Options.Target) and validates on it (runPoints),
// into Report.Stage. With a target every measured result records the
// device facts the agent reported (Result.Device), as the report does.
func Run(ctx context.Context, o Options, open func() (agent.Engine, error)) (*Report, error) {
	c, err := o.Check()
	if err != nil {
		return nil, err
	}
	e, err := open()
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if cl, ok := e.(io.Closer); ok {
		defer cl.Close()
	}
	if len(c.Fit) > 0 {
		if err := agent.Supports(e, agent.CapSeries); err != nil {
			return nil, fmt.Errorf("validate: --fit needs the fit runs' per-token series: %w", err)
		}
	}
	return inStage(o, func(o Options) (*Report, error) {
		r := &runner{e: e, o: o, c: c, facts: e.Facts()}
		rep, err := runPoints(ctx, o, r, c.Fit)
		if err == nil && o.Target != "" {
			rep.Target, rep.Facts = o.Target, &r.facts
		}
		return rep, err
	})
}

// runner records and runs the points on an engine.
type runner struct {
	e     agent.Engine
	o     Options // Out is the stage: the fit runs' series go to its fit folder
	c     *Checked
	facts agent.DeviceFacts
}

// caches resolves caches against the trace's model (the engine's).
func (r *runner) caches(trace string, caches []string) ([]int64, error) {
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

// Live runs p once on the engine, with its per-token series when series
// (agent.RunSeriesOn), checks its tokens and cache bytes (the engine
// resolved the cache against its model, the trace's) and marks it measured.
func (r *runner) Live(ctx context.Context, p FitPoint, tokens int, series bool) (*sim.Result, []agent.TokenSample, error) {
	raw, err := r.o.MeasuredSpec(r.c, p.Policy, p.Cache, p.Host, tokens)
	if err != nil {
		return nil, nil, err
	}
	var res *sim.Result
	var samples []agent.TokenSample
	if series {
		res, samples, err = agent.RunSeriesOn(ctx, r.e, raw)
	} else {
		res, err = r.e.Run(ctx, raw, func(agent.TokenSample) error { return nil })
	}
	if err != nil {
		return nil, nil, err
	}
	switch {
	case res.Tokens != int64(tokens):
		return nil, nil, fmt.Errorf("the agent decoded %d tokens, asked for %d", res.Tokens, tokens)
	case res.CacheBytes != p.CacheBytes:
		return nil, nil, fmt.Errorf("the agent resolved cache %s to %s, the trace's model to %s: the trace is not of the agent's model",
			p.Cache, sim.FormatBytes(res.CacheBytes), sim.FormatBytes(p.CacheBytes))
	}
	res.Source = cmp.Or(res.Source, sim.SourceMeasured)
	if r.o.Target != "" {
		res.Device = DescribeFacts(r.facts, r.o.Target)
	}
	return res, samples, nil
}

// DescribeFacts is one line naming the device an agent measured on.
func DescribeFacts(f agent.DeviceFacts, target string) string {
	return fmt.Sprintf("%s %s at %s (%s; %s; %s RAM; %s %s)", f.Kind, f.Model, target, f.OS, f.CPU,
		sim.FormatBytes(f.RAMBytes), f.Engine, f.EngineVersion)
}

// LiveSeries turns the samples of a run that asked for its series
// (agent.RunSeriesOn) into runtime/live's per-token series rows. Absent
// read_bytes and reads are the stock page-fault path's, 0 in its series.
func LiveSeries(samples []agent.TokenSample) ([]live.TokenSample, error) {
	out := make([]live.TokenSample, len(samples))
	for i, s := range samples {
		if m := s.MissingSeries(); m != "" {
			return nil, fmt.Errorf("token %d has no %s: not a per-token series", i, m)
		}
		if s.Hits == nil || s.Misses == nil || s.ResidentBytes == nil {
			return nil, fmt.Errorf("token %d lacks hits, misses or resident_bytes: not a per-token series", i)
		}
		if s.Pass != int64(i) || s.Tokens != 1 {
			return nil, fmt.Errorf("token %d is pass %d of %d tokens: a series has one token per pass, in order", i, s.Pass, s.Tokens)
		}
		var read, reads int64
		if s.ReadBytes != nil {
			read = *s.ReadBytes
		}
		if s.Reads != nil {
			reads = *s.Reads
		}
		out[i] = live.TokenSample{Token: i, WallNS: s.TimeNS, StallNS: s.StallNS, ComputeNS: *s.ComputeNS,
			BytesRead: read, Reads: reads, Hits: *s.Hits, InflightHits: *s.InflightHits,
			Misses: *s.Misses, PrefetchLoads: *s.PrefetchLoads, MajorFaults: *s.MajorFaults,
			ResidentBytes: *s.ResidentBytes, StrayBytes: *s.StrayBytes}
	}
	return out, nil
}

// RoundOrder is the order in which round r (from 0; negative counts back)
// runs n points: from point r mod n round, so that over n rounds every
// point is run first once (the first run of a round measures slower).
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

// runPoints records the trace (unless Options.Trace is set) with the live
// runs' prompt and tokens, greedy, so that it is the routing they see; then
// runs every point live Options.Repeats times in rounds (each opening with
// the fit points' runs; RoundOrder), so that a slow phase of a shared
// machine spreads over every point and the fit alike; then fits the
// profile (with fit) and simulates every point with it.
func runPoints(ctx context.Context, o Options, r *runner, fit []FitPoint) (*Report, error) {
	step := o.Progress
	if step == nil {
		step = func(string) {}
	}
	rep := &Report{Trace: o.Trace}
	if rep.Trace == "" {
		rep.Trace = filepath.Join(o.Out, TraceFile)
		step("record")
		if err := os.MkdirAll(filepath.Dir(rep.Trace), 0o755); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		t, err := agent.RecordOn(ctx, r.e, o.Tokens)
		if err == nil {
			err = atomicfile.WriteFile(rep.Trace, t.Parquet)
		}
		if err != nil {
			return nil, fmt.Errorf("validate: record: %w", err)
		}
	}
	bytes, err := r.caches(rep.Trace, o.Caches)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	fit = slices.Clone(fit)
	for i := range fit {
		b, err := r.caches(rep.Trace, []string{fit[i].Cache})
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
	for _, pol := range o.Policies {
		for i, cache := range o.Caches {
			for _, h := range o.hosts() {
				rep.Points = append(rep.Points, reports.VsPoint{Policy: pol, Cache: cache, CacheBytes: bytes[i], Lanes: h.Lanes, Threads: h.Threads})
			}
		}
	}
	var fitRuns []fitRun
	for k := range o.Repeats {
		for _, i := range RoundOrder(k, len(fit)) {
			p := fit[i]
			step(fmt.Sprintf("fit run %s %d/%d", p, k+1, o.Repeats))
			run, err := r.runFit(ctx, p, k)
			if err != nil {
				return nil, fmt.Errorf("validate: fit run %s: %w", p, err)
			}
			fitRuns = append(fitRuns, fitRun{p, run})
		}
		for _, i := range RoundOrder(k, len(rep.Points)) {
			p := &rep.Points[i]
			step(fmt.Sprintf("live %s %s%s %d/%d", p.Policy, p.Cache, reports.HostSuffix(p.Lanes, p.Threads), k+1, o.Repeats))
			fp := FitPoint{p.Policy, p.Cache, p.CacheBytes, Host{p.Lanes, p.Threads}}
			res, _, err := r.Live(ctx, fp, o.Tokens, false)
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
		step(fmt.Sprintf("simulate %s %s%s", p.Policy, p.Cache, reports.HostSuffix(p.Lanes, p.Threads)))
		s := so.Spec(rep.Trace, p.Policy, p.Cache)
		if s.Device, err = hostDevice(so.DeviceFile, Host{p.Lanes, p.Threads}); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		out, err := in.Run(s)
		if err != nil {
			return nil, fmt.Errorf("validate: simulate %s at %s: %w", p.Policy, p.Cache, err)
		}
		p.Predicted = out.Result
		rep.Specs = append(rep.Specs, out.Spec)
	}
	if rep.Summary, err = reports.Compare(rep.Points); err != nil {
		return nil, err
	}
	if rep.Fit != nil {
		rep.Summary.MarkFit(rep.Fit.names())
	}
	return rep, nil
}

// checkTokens refuses a trace whose decode tokens are not the live runs'.
func checkTokens(o Options, trace string) error {
	out, err := experiment.Run(o.Spec(trace, o.Policies[0], o.Caches[0]))
	if err != nil {
		return fmt.Errorf("simulate %s at %s: %w", o.Policies[0], o.Caches[0], err)
	}
	if out.Result.Tokens != int64(o.Tokens) {
		return fmt.Errorf("the trace %s has %d decode tokens, the live runs decode %d: record it with the same prompt and --tokens",
			trace, out.Result.Tokens, o.Tokens)
	}
	return nil
}
