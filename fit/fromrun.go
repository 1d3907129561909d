package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/sim"
)

// Profile parameters FromRun can fit.
const (
	ParamEfficiency = "memory.efficiency"
	ParamFlashScale = "flash bandwidth scale"
	ParamLoadRate   = "compute.load_rate"
	// ParamBackground is fitted only when the base profile states
	// compute.cores (the contention model, docs/model.md).
	ParamBackground = "compute.background"
	// ParamCopyRate is fitted only when the base profile states
	// compute.cores and flash.copy_rate: what a read costs the cores per
	// byte, seen where compute threads and lanes share them.
	ParamCopyRate = "flash.copy_rate"
	// ParamTransferCPU is fitted only when the base profile states
	// compute.cores: the share of a core a read keeps while it transfers.
	ParamTransferCPU = "flash.transfer_cpu"
)

// RunFit is what FromRun found.
type RunFit struct {
	Profile *devices.Profile // the base profile with the fitted values and their sources
	Params  []Fitted         // fitted by least squares on per-token wall time
	Load    *Line            // mgmt time vs bytes read per token, when the run measures it
	Kept    []string         // parameters left as they were, each with the reason

	Tokens              int
	Measured, Predicted []float64 // per-token wall time, ns, at the fit
	BytesChecked        int       // tokens whose run measured the bytes read (0: the replay's reads are unchecked)
	BytesMatched        int       // of those, tokens whose simulated flash bytes are within 1% of the measured ones
	Errors              Residuals
}

// Residuals summarise per-token relative errors (predicted − measured) / measured.
type Residuals struct {
	Mean, P50Abs, P90Abs       float64
	MeanPredNS, MeanMeasNS     float64
	MedianPredNS, MedianMeasNS float64
}

// MinBytesMatched is the share of a run's tokens whose simulated flash bytes
// FromRun needs within 1% of the measured ones: more than it, i.e. most
// tokens. A replay of the run's own routing with its cache settings
// reproduces all or nearly all of them (the BigMoeOnEdge reference: 128 of
// 128; a live run of a prefetching policy somewhat fewer, as its prefetches
// follow its timing); another model's trace, another cache size or another
// layout reproduces almost none (on the reference: 0, 1 and 0 of 128), and
// a fit to it would explain the measured times with loads the run never
// made. Half lies far from both.
const MinBytesMatched = 0.5

// FromRun fits base's compute and load-cost parameters (and a scale on its
// flash bandwidth) to a measured run whose replay is plan: the resolved
// spec of the run's routing (a trace file) and the engine settings that
// reproduce its cache behaviour (policy, cache, layout, compute order,
// prefill), simulated on each candidate profile (experiment.Plan.RunOn)
// in place of the plan's own device. The model:
// per-token wall time = the simulator's decode pass time with the profile.
//
//   - compute.load_rate comes from the run's own cache-management column
//     when it has one: a straight line of management time against bytes read
//     per token; its slope is the time per byte (1/rate). The intercept (fixed
//     management per token) is left to the wall-time fit, where it is absorbed
//     by memory.efficiency. Without that column the rate is fitted with the rest.
//   - memory.efficiency and a common scale on every flash curve point are
//     fitted by least squares on per-token wall time (LeastSquares). The
//     scale is bounded so that every candidate profile validates (a faster
//     curve point must stay slower than flash.latency per read).
//
// Parameters the run cannot separate (compute.layer_overhead and
// compute.flops against memory.efficiency: per-token compute is the same for
// every token of a fixed top-k decode; flash.latency against the bandwidth
// scale: every read has the same size) are kept and listed in Kept.
//
// Before fitting, FromRun replays the run once and refuses it when the trace
// does not decode exactly the run's tokens, or when the replay reproduces
// the measured flash bytes on MinBytesMatched of the tokens or fewer (a run
// that does not record bytes read is not checked: BytesChecked is 0).
func FromRun(base *devices.Profile, plan *experiment.Plan, run *runs.Run, label string) (*RunFit, error) {
	return fromRuns(base, []Measured{{Plan: plan, Run: run}}, label, false)
}

// Measured is one measured run with the plan of its replay.
type Measured struct {
	Plan *experiment.Plan
	Run  *runs.Run
}

// FromRuns is FromRun over several runs of one device at once (e.g. one
// bound by flash latency and one by flash throughput, which a single run
// cannot tell apart): the per-token wall times of all of them are fitted
// together, in the order given. It refuses a run as FromRun does only when
// its replay issues no prefetch: what a demand-only policy (lru) loads does
// not depend on timing, so its replay must reproduce the run's bytes, but a
// live run of a prefetching policy (les) loads a little differently from
// its replay, as its timing differs; RunFit.BytesMatched says how closely
// they agree.
func FromRuns(base *devices.Profile, ms []Measured, label string) (*RunFit, error) {
	return fromRuns(base, ms, label, true)
}

// fromRuns is FromRun over several runs, refusing a run whose replay
// reproduces the measured flash bytes on MinBytesMatched of its tokens or
// fewer (demandOnly: only runs whose replay issues no prefetch are checked).
func fromRuns(base *devices.Profile, ms []Measured, label string, demandOnly bool) (*RunFit, error) {
	f, out, err := newFromRun(base, ms, label)
	if err != nil {
		return nil, err
	}
	params, err := f.params(out.Load == nil)
	if err != nil {
		return nil, err
	}
	if err := f.checkReplay(params, demandOnly); err != nil {
		return nil, err
	}
	o, err := LeastSquares(f.predict, out.Measured, params, 600)
	if err != nil {
		return nil, err
	}
	out.Params = o.Params
	vals := make([]float64, len(o.Params))
	for i, p := range o.Params {
		vals[i] = p.Value
	}
	if out.Predicted, err = f.predict(vals); err != nil {
		return nil, err
	}
	out.BytesMatched, out.BytesChecked = f.bytesMatched()
	out.Errors = summarise(out.Predicted, out.Measured)
	if out.Profile, err = f.profile(vals, o, out); err != nil {
		return nil, err
	}
	out.Kept = append(kept(out.Load), f.formats.kept()...)
	return out, nil
}

// newFromRun checks the runs and gathers their measured wall times and,
// when every run measures management time and bytes read, the load line.
func newFromRun(base *devices.Profile, ms []Measured, label string) (*fromRun, *RunFit, error) {
	if len(ms) == 0 {
		return nil, nil, errors.New("fit: no runs")
	}
	if _, err := base.Device(); err != nil {
		return nil, nil, err
	}
	f := &fromRun{base: base, label: label}
	var err error
	if f.formats, err = newFormats(base, ms); err != nil {
		return nil, nil, err
	}
	var measured []float64
	all := &runs.Run{Fields: slices.Clone(ms[0].Run.Fields)}
	for _, m := range ms {
		if len(m.Run.Tokens) == 0 {
			return nil, nil, fmt.Errorf("fit: the run %s has no tokens", m.Run.Name)
		}
		for _, t := range m.Run.Tokens {
			if t.WallNS <= 0 {
				return nil, nil, fmt.Errorf("fit: the run %s: token %d has wall time %d ns, not a positive time", m.Run.Name, t.Step, t.WallNS)
			}
			measured = append(measured, float64(t.WallNS))
		}
		f.parts = append(f.parts, part{plan: m.Plan, run: m.Run, n: len(m.Run.Tokens)})
		all.Tokens = append(all.Tokens, m.Run.Tokens...)
		all.Fields = slices.DeleteFunc(all.Fields, func(x runs.Field) bool { return !m.Run.Has(x) })
	}
	f.n = len(measured)
	out := &RunFit{Tokens: f.n, Measured: measured}
	if all.Has(runs.FieldMgmt) && all.Has(runs.FieldRead) {
		l, err := loadLine(all)
		if err != nil {
			return nil, nil, err
		}
		if l.Slope <= 0 {
			return nil, nil, fmt.Errorf("fit: management time does not grow with bytes read in %s (slope %.3g ns/B)", label, l.Slope)
		}
		out.Load = &l
		f.loadRate = 1e9 / l.Slope
	}
	return f, out, nil
}

// params are the parameters to fit, in candidate's order: the flash scale
// bounded to where every candidate profile validates.
func (f *fromRun) params(fitLoadRate bool) ([]Param, error) {
	params := []Param{
		{ParamEfficiency, f.baseValue(devices.Dimensionless, f.base.Memory.Efficiency.Value), f.formats.effLo, f.formats.effHi},
		{ParamFlashScale, 1, 0.05, 8},
	}
	f.lrIdx, f.bgIdx, f.crIdx, f.tcIdx = -1, -1, -1, -1
	if fitLoadRate {
		f.lrIdx = len(params)
		params = append(params, Param{ParamLoadRate, 8e9, 1e8, 1e12})
	}
	if f.base.Compute.Cores.Value != "" {
		f.bgIdx = len(params)
		params = append(params, Param{ParamBackground, 0.5, 0.01, 8})
		if cr := f.base.Flash.CopyRate.Value; cr != "" {
			f.crIdx = len(params)
			params = append(params, Param{ParamCopyRate, f.baseRate(cr), 1e8, 1e12})
		}
		f.tcIdx = len(params)
		params = append(params, Param{ParamTransferCPU, 0.5, 0.01, 1})
	}
	lo, hi, err := f.validScales(starts(params), params[1].Min, params[1].Max)
	if err != nil {
		return nil, err
	}
	params[1].Min, params[1].Max = lo, hi
	return params, nil
}

// starts is each parameter's starting value, in order.
func starts(params []Param) []float64 {
	out := make([]float64, len(params))
	for i, p := range params {
		out[i] = p.Start
	}
	return out
}

// validScales narrows [lo, hi] to the flash scales whose candidate profile
// (other parameters at p) validates. NB: the profile bounds a scaled curve
// point from both sides (its bandwidth, and its transfer rate once
// flash.latency is removed, which grows without bound as the time per read
// nears the latency), each monotone in the scale, so the valid scales are
// one interval around 1; bisection finds its ends.
func (f *fromRun) validScales(p []float64, lo, hi float64) (float64, float64, error) {
	valid := func(s float64) error {
		q := slices.Clone(p)
		q[1] = s
		_, err := f.candidate(q, func(string) string { return "fit candidate" }).Device()
		return err
	}
	if err := valid(1); err != nil {
		return 0, 0, fmt.Errorf("fit: the starting profile does not validate once its values are rewritten: %w", err)
	}
	return bisectValid(valid, lo), bisectValid(valid, hi), nil
}

// bisectValid returns end if valid(end) succeeds, else the valid scale
// nearest end found by bisection (in log space) between 1 and end.
func bisectValid(valid func(float64) error, end float64) float64 {
	if valid(end) == nil {
		return end
	}
	good, bad := 1.0, end
	for range 40 {
		mid := math.Sqrt(good * bad)
		if valid(mid) == nil {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// checkReplay replays every run at the starting values: the trace must
// decode each run's tokens and reproduce its flash bytes on more than
// MinBytesMatched of them (with demandOnly, of the runs whose replay made
// no prefetch loads).
func (f *fromRun) checkReplay(params []Param, demandOnly bool) error {
	if _, err := f.predict(starts(params)); err != nil {
		return err
	}
	for _, pt := range f.parts {
		if demandOnly && pt.last != nil && pt.last.PrefetchLoads > 0 {
			continue
		}
		matched, checked := pt.bytesMatched()
		if checked > 0 && float64(matched) <= MinBytesMatched*float64(checked) {
			return fmt.Errorf("fit: the replay does not reproduce the flash reads of %s: simulated bytes within 1%% of measured on %d of %d tokens (median difference %+.1f%%), and a fit needs more than %.0f%% of them; is the trace this run's routing, and are the cache size, policy and layout the run's?",
				pt.run.Name, matched, checked, 100*pt.bytesDiff(), 100*MinBytesMatched)
		}
	}
	return nil
}

// kept lists the parameters FromRun leaves as they were, with the reasons.
func kept(load *Line) []string {
	out := []string{
		"compute.flops, compute.layer_overhead: per-token compute is the same for every token of this decode, so they cannot be told apart from memory.efficiency",
		"flash.latency: every read has the same size, so latency and bandwidth cannot be told apart; the bandwidth scale carries both",
		"memory.bandwidth: only its product with memory.efficiency matters, and the efficiency was fitted",
		"memory.ram, memory.reserve, flash.lanes, page_size, read_ahead, fault_cost: not exercised by a per-expert decode with a managed cache",
		"compute.cores, compute.parallel, flash.read_cpu, flash.copy_rate: one run has one count of compute threads and lanes, and one read size, so the cores' share, the threads' speed-up and a read's CPU cost cannot be told apart from memory.efficiency and the bandwidth scale (calibrate measures them on the device)",
		"memory.growth: needs the app's footprint over the run, which the run does not record",
	}
	if load != nil {
		out = append(out, fmt.Sprintf("compute.load_fixed: loads and bytes per token are nearly proportional (one expert size), so the per-load part is in the per-byte slope and the %.2f ms/token intercept in memory.efficiency", load.Intercept/1e6))
	}
	return out
}

// loadLine fits management time against bytes read, per token.
func loadLine(run *runs.Run) (Line, error) {
	x := make([]float64, len(run.Tokens))
	y := make([]float64, len(run.Tokens))
	for i, t := range run.Tokens {
		x[i], y[i] = float64(t.ReadBytes), float64(t.MgmtNS)
	}
	if len(x) < 3 { // a standard error needs a residual
		return Line{}, errors.New("fit: management time vs bytes read: fit line: need at least 3 points")
	}
	l, err := FitLine(x, y)
	if err != nil {
		return l, fmt.Errorf("fit: management time vs bytes read: %w", err)
	}
	return l, nil
}

// fromRun evaluates candidate profiles by simulation.
type fromRun struct {
	base     *devices.Profile
	parts    []part
	label    string
	n        int     // tokens over all parts
	loadRate float64 // from the management column; 0 = fitted
	// lrIdx, bgIdx, crIdx and tcIdx are the indices of ParamLoadRate,
	// ParamBackground, ParamCopyRate and ParamTransferCPU among the fitted
	// values, -1 when not fitted.
	lrIdx, bgIdx, crIdx, tcIdx int
	formats             formats // the stated formats the runs read, scaled with memory.efficiency
}

// part is one measured run and its replay.
type part struct {
	plan *experiment.Plan
	run  *runs.Run
	n    int
	last *sim.Result // the latest prediction
}

// baseRate parses a profile rate (B/s), falling back to 1 GB/s when it
// does not parse.
func (f *fromRun) baseRate(s string) float64 {
	v, err := devices.ParseQuantity(s, devices.Rate)
	if err != nil || v <= 0 {
		return 1e9
	}
	return v
}

// baseValue parses a profile number, falling back to 0.5 (the middle of the
// plausible range for efficiencies) when it does not parse.
func (f *fromRun) baseValue(k devices.Kind, s string) float64 {
	v, err := devices.ParseQuantity(s, k)
	if err != nil || v <= 0 {
		return 0.5
	}
	return min(v, 1)
}

// candidate builds the profile for parameter values p (ParamEfficiency,
// ParamFlashScale[, ParamLoadRate]) with the given sources.
func (f *fromRun) candidate(p []float64, src func(name string) string) *devices.Profile {
	c := f.base.Clone()
	c.SetFile(fmt.Sprintf("fit candidate from %s (%s %.4g, %s %.4g)", f.base.Name, ParamEfficiency, p[0], ParamFlashScale, p[1]))
	c.Memory.Efficiency.Set(fmt.Sprintf("%.4g", p[0]), src(ParamEfficiency))
	f.formats.set(c, p[0], src(ParamEfficiency))
	scale := func(pts []devices.CurveSample) {
		for i := range pts {
			v, err := devices.ParseQuantity(pts[i].Bandwidth, devices.Rate)
			if err != nil {
				continue // Device() reports it
			}
			was := pts[i].Bandwidth
			pts[i].Bandwidth = fmt.Sprintf("%.4g MB/s", v*p[1]/1e6)
			pts[i].Source = src(ParamFlashScale) + "; before the fit: " + was + " (" + pts[i].Source + ")"
		}
	}
	scale(c.Flash.SingleLane)
	scale(c.Flash.Aggregate)
	rate := f.loadRate
	if f.lrIdx >= 0 {
		rate = p[f.lrIdx]
	}
	c.Compute.LoadRate.Set(fmt.Sprintf("%.4g MB/s", rate/1e6), src(ParamLoadRate))
	if f.bgIdx >= 0 {
		c.Compute.Background.Set(fmt.Sprintf("%.4g", p[f.bgIdx]), src(ParamBackground))
	}
	if f.crIdx >= 0 {
		c.Flash.CopyRate.Set(fmt.Sprintf("%.4g MB/s", p[f.crIdx]/1e6), src(ParamCopyRate))
	}
	if f.tcIdx >= 0 {
		c.Flash.TransferCPU.Set(fmt.Sprintf("%.4g", p[f.tcIdx]), src(ParamTransferCPU))
	}
	return c
}

// predict simulates every part's replay with parameter values p and
// returns the per-token decode times (ns) of each part's first n decode
// passes, parts in order.
func (f *fromRun) predict(p []float64) ([]float64, error) {
	d, err := f.candidate(p, func(string) string { return "fit candidate" }).Device()
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, f.n)
	for i := range f.parts {
		pt := &f.parts[i]
		res, err := pt.plan.RunOn(onHost(d, pt.plan.Config.Device))
		if err != nil {
			return nil, err
		}
		if len(res.Series) != pt.n {
			return nil, fmt.Errorf("fit: the trace decodes %d tokens, the run %s measured %d: the trace must be the run's routing, token for token", len(res.Series), pt.run.Name, pt.n)
		}
		pt.last = res
		for _, s := range res.Series[:pt.n] {
			out = append(out, float64(s.TimeNS))
		}
	}
	return out, nil
}

// onHost is candidate d with the I/O lanes and compute threads of the
// device a run's plan was resolved with: a grid's runs each ran with their
// own (validate --grid-lanes, --grid-threads), and the fit must replay each
// so.
func onHost(d, planned *devices.Device) *devices.Device {
	if planned == nil || planned.Flash.Lanes == d.Flash.Lanes && planned.ComputeThreads == d.ComputeThreads {
		return d
	}
	c := *d
	c.Flash.Lanes, c.ComputeThreads = planned.Flash.Lanes, planned.ComputeThreads
	return &c
}

// bytesMatched counts, over every part, the tokens whose simulated flash
// bytes match the measured ones, and the tokens whose run measured them.
func (f *fromRun) bytesMatched() (matched, checked int) {
	for _, pt := range f.parts {
		m, c := pt.bytesMatched()
		matched, checked = matched+m, checked+c
	}
	return matched, checked
}

// bytesMatched counts tokens whose simulated flash bytes (at the last
// prediction) are within 1% of the run's measured bytes: a check that the
// replay reproduces the run's cache behaviour; checked is the tokens whose
// run measured them. NB: not exact equality: an engine's aligned direct
// reads read a little more than the expert's bytes (the BigMoeOnEdge
// reference reads about 0.4% more, some 13 KB per expert).
func (pt *part) bytesMatched() (matched, checked int) {
	if pt.last == nil || !pt.run.Has(runs.FieldRead) {
		return 0, 0
	}
	for i, t := range pt.run.Tokens {
		checked++
		if i < len(pt.last.Series) && math.Abs(float64(pt.last.Series[i].FlashBytes-t.ReadBytes)) <= 0.01*float64(t.ReadBytes) {
			matched++
		}
	}
	return matched, checked
}

// bytesDiff is the median relative difference (simulated − measured) /
// measured of the flash bytes per token, over tokens that read something.
func (pt *part) bytesDiff() float64 {
	var d []float64
	for i, t := range pt.run.Tokens {
		if i < len(pt.last.Series) && t.ReadBytes > 0 {
			d = append(d, float64(pt.last.Series[i].FlashBytes-t.ReadBytes)/float64(t.ReadBytes))
		}
	}
	return median(d)
}

func (f *fromRun) profile(vals []float64, o *Outcome, out *RunFit) (*devices.Profile, error) {
	byName := map[string]Fitted{}
	for _, p := range o.Params {
		byName[p.Name] = p
	}
	src := func(name string) string {
		if name == ParamLoadRate && out.Load != nil {
			l := out.Load
			return fmt.Sprintf("fitted from %s: management time vs bytes read over %d tokens, %.4g ± %.2g ms per MB (R² %.3f)",
				f.label, l.N, l.Slope, l.SlopeSE, l.R2) // ns per byte = ms per MB
		}
		p := byName[name]
		if !p.Identified {
			return fmt.Sprintf("fitted from %s: not identified (%s); kept its starting value", f.label, p.Why)
		}
		return fmt.Sprintf("fitted from %s: per-token wall time of %d tokens by least squares, %.4g ± %.2g (RMS residual %.2f ms)",
			f.label, f.n, p.Value, p.SE, o.RMS/1e6)
	}
	c := f.candidate(vals, src)
	if lr, ok := byName[ParamLoadRate]; ok && !lr.Identified {
		c.Compute.LoadRate = f.base.Clone().Compute.LoadRate // not identified: stays as it was (absent = free)
	}
	if bg, ok := byName[ParamBackground]; ok && !bg.Identified {
		c.Compute.Background = f.base.Clone().Compute.Background // not identified: stays as it was (absent = none)
	}
	if cr, ok := byName[ParamCopyRate]; ok && !cr.Identified {
		c.Flash.CopyRate = f.base.Clone().Flash.CopyRate // not identified: stays as measured
	}
	if tc, ok := byName[ParamTransferCPU]; ok && !tc.Identified {
		c.Flash.TransferCPU = f.base.Clone().Flash.TransferCPU // not identified: stays as it was (absent = none)
	}
	c.Name = f.base.Name + "-fitted"
	c.SetFile("") // messages name it by its Name: it is not the base's file
	c.Description = fmt.Sprintf("%s, fitted to the measured run %s", strings.TrimSpace(f.base.Description), f.label)
	if _, err := c.Device(); err != nil {
		return nil, fmt.Errorf("fit: the fitted profile does not validate: %w", err)
	}
	return c, nil
}

// summarise computes relative per-token errors and central values.
func summarise(pred, meas []float64) Residuals {
	n := len(meas)
	rel := make([]float64, n)
	abs := make([]float64, n)
	var r Residuals
	for i := range meas {
		rel[i] = (pred[i] - meas[i]) / meas[i]
		abs[i] = math.Abs(rel[i])
		r.Mean += rel[i] / float64(n)
		r.MeanPredNS += pred[i] / float64(n)
		r.MeanMeasNS += meas[i] / float64(n)
	}
	slices.Sort(abs)
	r.P50Abs, r.P90Abs = sim.Percentile(abs, 50), sim.Percentile(abs, 90)
	r.MedianPredNS, r.MedianMeasNS = median(pred), median(meas)
	return r
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return sim.Percentile(s, 50)
}
