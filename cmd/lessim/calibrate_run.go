package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/fit"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/runs"
	"github.com/lessim/lessim/sim"
)

// fromRunFlags are calibrate --from-run's command line.
type fromRunFlags struct {
	run, runFormat, trace string
	device, deviceFile    string
	policy, cache, layout string
	cachedFirst, prefill  bool
	barrier               bool
	out, plot             string
}

func addFromRunFlags(cmd *cobra.Command, f *fromRunFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.run, "from-run", "", "fit a device profile to this measured run (per-token times) instead of measuring this machine")
	fl.StringVar(&f.runFormat, "run-format", "bmoe-metrics-csv", "format of --from-run (valid: "+strings.Join(runs.Formats(), ", ")+")")
	fl.StringVar(&f.trace, "trace", "", "with --from-run: the run's routing as a lessim trace (Parquet; see trace import)")
	fl.StringVar(&f.device, "device", "", "with --from-run: the embedded profile to start from")
	fl.StringVar(&f.deviceFile, "device-file", "", "with --from-run: the profile YAML to start from")
	fl.StringVar(&f.policy, "policy", "lru", "with --from-run: the run's cache policy (BigMoeOnEdge's cache is a global LRU)")
	fl.StringVar(&f.cache, "cache", "", "with --from-run: the run's cache budget (default: cache_budget_MiB of the run's summary)")
	fl.StringVar(&f.layout, "layout", string(sim.LayoutPerExpert), "with --from-run: the run's expert layout")
	fl.BoolVar(&f.cachedFirst, "cached-first", true, "with --from-run: the run computed resident experts while misses loaded")
	fl.BoolVar(&f.barrier, "barrier", false, "with --from-run: the run computed a layer's experts once all were resident (lessim live's order; implies --cached-first=false)")
	fl.BoolVar(&f.prefill, "prefill", true, "with --from-run: replay the prompt first (the run's cache was warm from it)")
	fl.StringVar(&f.plot, "plot", "", "with --from-run: draw measured vs predicted per-token time to PREFIX.png and PREFIX.svg (default: --out without .yaml, plus -fit)")
}

// fromRunOnly are the flags that make sense only with --from-run.
var fromRunOnly = []string{"run-format", "trace", "device", "device-file", "policy", "cache", "layout", "cached-first", "barrier", "prefill", "plot"}

// calibrateFromRun fits f.device's profile to a measured run and writes it.
// Everything is read and checked before the fit; the profile is written
// before the plot, so a plot that fails loses nothing.
func calibrateFromRun(cmd *cobra.Command, f *fromRunFlags) error {
	if f.out == "" || f.trace == "" {
		return fmt.Errorf("calibrate --from-run needs --trace (the run's routing) and --out (the profile to write)")
	}
	if f.barrier && f.cachedFirst && cmd.Flags().Changed("cached-first") {
		return fmt.Errorf("--barrier excludes --cached-first: the layer's experts wait for all its loads, then compute")
	}
	plot := f.plot
	if plot == "" {
		plot = strings.TrimSuffix(strings.TrimSuffix(f.out, ".yaml"), ".yml") + "-fit"
	}
	if err := reports.CheckPlotPrefix(plot); err != nil && f.plot != "" {
		return fmt.Errorf("--plot %s: %w", plot, err)
	}
	plot = reports.TrimPlotExt(plot)
	if err := checkRunPaths(f, plot); err != nil {
		return err
	}
	if err := checkRunLayout(f); err != nil {
		return err
	}
	run, err := runs.Read(f.run, f.runFormat)
	if errors.Is(err, runs.ErrParquet) {
		return fmt.Errorf("--from-run %w: pass --run-format lessim-live-series", err)
	}
	if err != nil {
		return err
	}
	base, err := baseProfile(f.device, f.deviceFile)
	if err != nil {
		return err
	}
	s := experiment.Spec{Version: experiment.Version, Trace: experiment.Trace{Path: f.trace}, Policy: experiment.Policy{Name: f.policy},
		Cache: experiment.Cache{Size: f.cache}, Layout: f.layout, CachedFirst: f.cachedFirst && !f.barrier, Barrier: f.barrier, Prefill: f.prefill}
	rp, err := fit.ReplayPlan(s, run, base)
	if err != nil {
		return err
	}
	label := filepath.Base(f.run)
	res, err := fit.FromRun(base, rp, run, label)
	if err != nil {
		return err
	}
	y, err := res.Profile.YAML()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.out, y); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "wrote %s: device %s\n\n", f.out, res.Profile.Name)
	reports.WriteRunFit(w, res, rp.Spec.Policy.Name, rp.Config.CacheBytes)
	files, err := reports.WriteFitPlot(res.Measured, res.Predicted,
		fmt.Sprintf("%s: measured vs fitted %s", label, res.Profile.Name), plot)
	if err != nil {
		return fmt.Errorf("the profile was written, but the plot failed: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
	return nil
}

// checkRunPaths refuses, before any work, an output that is an input or
// another output: the profile and the plot's files (PREFIX.png, .svg).
func checkRunPaths(f *fromRunFlags, plot string) error {
	outs := append([]string{f.out}, reports.PlotFiles(plot)...)
	for i, o := range outs {
		if err := atomicfile.CheckDistinct(o, f.run, f.trace, f.deviceFile); err != nil {
			return err
		}
		for _, prev := range outs[:i] {
			if atomicfile.CheckDistinct(o, prev) != nil {
				return fmt.Errorf("--out %s and the plot %s (--plot %s) are the same file: the plot would overwrite the profile; choose another --out or --plot", f.out, o, plot)
			}
		}
	}
	return nil
}

// checkRunLayout refuses a layout the run's engine cannot have used.
// NB: BigMoeOnEdge (bmoe-metrics-csv) reads each expert with O_DIRECT into
// its own LRU cache: the per-expert layout. gguf-mmap replays llama.cpp's
// page faults instead, which read whole read-ahead windows (2.7% more bytes
// per token on the reference run) with no such cache, so no token's bytes
// would match and the times would be fitted to loads the run never made.
func checkRunLayout(f *fromRunFlags) error {
	if f.runFormat == "bmoe-metrics-csv" && f.layout == string(sim.LayoutGGUFMmap) {
		return fmt.Errorf("--layout gguf-mmap: a bmoe-metrics-csv run is BigMoeOnEdge's, which reads each expert with O_DIRECT into its own cache (--layout %s); gguf-mmap replays llama.cpp's page-faulting mmap, whose reads are not this run's (it fits runs of plain mmap, such as lessim live --stock --series)", sim.LayoutPerExpert)
	}
	return nil
}

// baseProfile is the profile a fit starts from: a file or an embedded name.
func baseProfile(name, file string) (*devices.Profile, error) {
	switch {
	case file != "" && name != "":
		return nil, fmt.Errorf("give --device or --device-file, not both")
	case file != "":
		return devices.ParseProfileFile(file)
	case name != "":
		return devices.LoadProfile(name)
	}
	return nil, fmt.Errorf("calibrate --from-run needs the profile to start from: --device NAME or --device-file FILE")
}
