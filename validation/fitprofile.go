package validation

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runs"
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
// and flash scale to the fit points' live runs (fitRuns[i] of fitPts[i mod
// len(fitPts)], one per point per round), all at once (fit.FromRuns on the
// recorded routing, replayed as the live engine runs: barrier order,
// prompt prefilled), and writes the fitted profile.
func fitProfile(o *Options, fitPts []FitPoint, trace string, fitRuns []*runs.Run) (*FitInfo, error) {
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
		p := fitPts[i%len(fitPts)]
		ms = append(ms, fit.Measured{Run: run, Replay: fit.Replay{Model: &meta.Model, Steps: steps, Policy: p.Policy,
			CacheBytes: p.CacheBytes, Layout: sim.LayoutPerExpert, Barrier: true, Prefill: true}})
	}
	var names []string
	for _, p := range fitPts {
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
	return &FitInfo{Points: fitPts, Profile: path, Fit: rf}, nil
}
