//go:build llamacpp && linux

package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/runtime/live"
	"github.com/lessim/lessim/sim"
	"github.com/lessim/lessim/traces"
)

// Files the fit writes into Options.Out.
const (
	FitSeriesFile  = "fit/series.parquet" // the calibration run's per-token series
	FitProfileFile = "fit/fitted.yaml"    // the profile fitted to it, used to simulate
)

// FitInfo says what the profile was fitted to and how well.
type FitInfo struct {
	Policy, Cache string
	Profile       string // the fitted profile's file
	Fit           *fit.RunFit
}

// fitProfile runs the fit point live once with its per-token series (a run
// of its own, not one of the validation's measurements), fits the device
// profile's compute and load-cost parameters and flash scale to it
// (fit.FromRun on the recorded routing, replayed as the live engine runs:
// barrier order, prompt prefilled) and writes the fitted profile.
func fitProfile(ctx context.Context, o *Options, c *Checked, trace, prompt string) (*FitInfo, error) {
	pol, cache, bytes := o.fitPoint(c)
	lo := live.DefaultOptions()
	lo.Model, lo.Policy, lo.Cache, lo.Tokens, lo.Prompt, lo.Threads, lo.KeepSeries = o.Model, pol, bytes, o.Tokens, prompt, 1, true
	if o.Lanes > 0 {
		lo.Lanes = o.Lanes
	}
	_, series, err := live.Run(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("validate: fit run %s at %s: %w", pol, cache, err)
	}
	seriesPath := filepath.Join(o.Out, FitSeriesFile)
	if err := os.MkdirAll(filepath.Dir(seriesPath), 0o755); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if err := live.WriteSeries(seriesPath, series); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	run, err := runs.ReadLiveSeries(seriesPath)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	base, err := devices.ParseProfileFile(o.DeviceFile)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	r, err := traces.Open(trace)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	defer r.Close()
	steps, err := traces.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	meta := r.Meta()
	rp := fit.Replay{Model: &meta.Model, Steps: steps, Policy: pol, CacheBytes: bytes, Layout: sim.LayoutPerExpert,
		Barrier: true, Prefill: true}
	rf, err := fit.FromRun(base, rp, run, fmt.Sprintf("lessim live %s at cache %s", pol, cache))
	if err != nil {
		return nil, fmt.Errorf("validate: fit: %w", err)
	}
	y, err := rf.Profile.YAML()
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	path := filepath.Join(o.Out, FitProfileFile)
	if err := atomicfile.WriteFile(path, y); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return &FitInfo{Policy: pol, Cache: cache, Profile: path, Fit: rf}, nil
}
