//go:build llamacpp && linux

package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	FitDir         = "fit"             // the calibration runs' per-token series (POLICY-CACHE.parquet)
	FitProfileFile = "fit/fitted.yaml" // the profile fitted to them, used to simulate
)

// FitInfo says what the profile was fitted to and how well.
type FitInfo struct {
	Points  []FitPoint
	Profile string // the fitted profile's file
	Fit     *fit.RunFit
}

// fitProfile fits the device profile's compute and load-cost parameters
// and flash scale to the fit points' live runs (runs[i] of c.Fit[i mod
// len(c.Fit)], one per point per round), all at once (fit.FromRuns on the
// recorded routing, replayed as the live engine runs: barrier order,
// prompt prefilled), and writes the fitted profile.
func fitProfile(o *Options, c *Checked, trace string, fitRuns []*runs.Run) (*FitInfo, error) {
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
	var ms []fit.Measured
	for i, run := range fitRuns {
		p := c.Fit[i%len(c.Fit)]
		ms = append(ms, fit.Measured{Run: run, Replay: fit.Replay{Model: &meta.Model, Steps: steps, Policy: p.Policy,
			CacheBytes: p.CacheBytes, Layout: sim.LayoutPerExpert, Barrier: true, Prefill: true}})
	}
	var names []string
	for _, p := range c.Fit {
		names = append(names, p.String())
	}
	rf, err := fit.FromRuns(base, ms, "lessim live "+strings.Join(names, " and "))
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
	return &FitInfo{Points: c.Fit, Profile: path, Fit: rf}, nil
}

// fitRun runs one fit point live (round r, from 0) and returns its series
// as a run (written to Out/fit/POLICY-CACHE-rN.parquet and read back: the
// file calibrate --from-run would read).
func fitRun(ctx context.Context, o *Options, p FitPoint, r int, prompt string) (*runs.Run, error) {
	if err := os.MkdirAll(filepath.Join(o.Out, FitDir), 0o755); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	lo := live.DefaultOptions()
	lo.Model, lo.Policy, lo.Cache, lo.Tokens, lo.Prompt, lo.Threads, lo.KeepSeries = o.Model, p.Policy, p.CacheBytes, o.Tokens, prompt, 1, true
	if o.Lanes > 0 {
		lo.Lanes = o.Lanes
	}
	_, series, err := live.Run(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("validate: fit run %s: %w", p, err)
	}
	name := strings.NewReplacer("%", "pct", "/", "_").Replace(fmt.Sprintf("%s-%s-r%d", p.Policy, p.Cache, r+1))
	path := filepath.Join(o.Out, FitDir, name+".parquet")
	if err := live.WriteSeries(path, series); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	run, err := runs.ReadLiveSeries(path)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return run, nil
}
