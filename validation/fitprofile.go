package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/live"
)

// Files the fit writes into Options.Out.
const (
	FitDir         = "fit"             // the calibration runs' per-token series (POLICY-CACHE.parquet)
	FitProfileFile = "fit/fitted.yaml" // the profile fitted to them, used to simulate
)

// FitInfo says what the profile was fitted to and how well.
type FitInfo struct {
	Points  []FitPoint
	Profile string // the fitted profile's file
	Fit     *fit.RunFit
}

// names are the fit points' names, "les at 25%".
func (f *FitInfo) names() []string {
	var names []string
	for _, p := range f.Points {
		names = append(names, p.String())
	}
	return names
}

// fitRun is one fit run: its point and its per-token series.
type fitRun struct {
	p   FitPoint
	run *runs.Run
}

// runFit runs fit point p once (round r) with its per-token series and
// writes and reads it back (writeFitSeries).
func (r *runner) runFit(ctx context.Context, p FitPoint, round int) (*runs.Run, error) {
	_, samples, err := r.Live(ctx, p, r.o.Tokens, true)
	if err != nil {
		return nil, err
	}
	series, err := LiveSeries(samples)
	if err != nil {
		return nil, err
	}
	return writeFitSeries(r.o.Out, p, round, series)
}

// fitProfile fits the device profile to the fit runs (fit.FromRuns, on
// the recorded routing replayed as the live engine runs) and writes the
// fitted profile, whose sources name the runs.
func fitProfile(o *Options, fitPts []FitPoint, trace string, fitRuns []fitRun) (*FitInfo, error) {
	base, err := devices.ParseProfileFile(o.DeviceFile)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	var in experiment.Inputs
	var ms []fit.Measured
	for _, fr := range fitRuns {
		s := o.Spec(trace, fr.p.Policy, "")
		s.Cache = experiment.Cache{Bytes: fr.p.CacheBytes}
		if s.Device, err = hostDevice(o.DeviceFile, fr.p.Host); err != nil {
			return nil, fmt.Errorf("validate: fit %s: %w", fr.p, err)
		}
		plan, err := in.Resolve(s)
		if err != nil {
			return nil, fmt.Errorf("validate: fit %s: %w", fr.p, err)
		}
		ms = append(ms, fit.Measured{Run: fr.run, Plan: plan})
	}
	info := &FitInfo{Points: fitPts, Profile: filepath.Join(o.Out, FitProfileFile)}
	label := "lessim live " // NB: the fitted profile's sources name the runs
	if o.Target != "" {
		label = "live runs on the agent at " + o.Target + " of "
	}
	rf, err := fit.FromRuns(base, ms, label+strings.Join(info.names(), " and "))
	if err != nil {
		return nil, fmt.Errorf("validate: fit: %w", err)
	}
	y, err := rf.Profile.YAML()
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if err := atomicfile.WriteFile(info.Profile, y); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	info.Fit = rf
	return info, nil
}

// fitSeriesPath is Out/fit/POLICY-CACHE-rN.parquet, p's series in round r (from 0).
func fitSeriesPath(out string, p FitPoint, r int) string {
	name := strings.NewReplacer("%", "pct", "/", "_", " ", "-").Replace(fmt.Sprintf("%s-%s%s-r%d", p.Policy, p.Cache, p.Host.suffix(), r+1))
	return filepath.Join(out, FitDir, name+".parquet")
}

// writeFitSeries writes a fit run's series as lessim live --series does
// and reads it back as the run the fit uses.
func writeFitSeries(out string, p FitPoint, r int, series []live.TokenSample) (*runs.Run, error) {
	path := fitSeriesPath(out, p, r)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := live.WriteSeries(path, series); err != nil {
		return nil, err
	}
	return runs.ReadLiveSeries(path)
}
