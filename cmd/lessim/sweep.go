package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/internal/progress"
	"github.com/lessim/lessim/sweep"
)

// sweepFlags are sweep's command line.
type sweepFlags struct {
	config, out, shard string
	shards, workers    int
	partRows           int
	list, quiet        bool
	keepSeries         bool
}

func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a grid of experiments in parallel into a results folder (Parquet)",
		Long: `sweep expands a YAML grid (a base experiment spec and axes over spec fields, named
by their JSON paths such as policy.name or cache.size) into points, runs them on all
cores (each trace loaded once and shared), and writes one Parquet row per point to
--out in parts, beside manifest.json and the resolved sweep.yaml. A rerun skips the
points already written, so a killed sweep resumes; --shard i/n (or the
JOB_COMPLETION_INDEX of a Kubernetes Indexed Job with --shards n) runs every n-th
point. See docs/sweeps.md.`,
		Example: `  lessim sweep --config sweep.yaml --out results/
  lessim sweep --config sweep.yaml --out results/ --shard 3/16
  JOB_COMPLETION_INDEX=3 lessim sweep --config sweep.yaml --out results/ --shards 16`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSweep(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "sweep file (YAML: base and axes; see docs/sweeps.md)")
	fl.StringVar(&f.out, "out", "", "results folder (created; a rerun resumes it)")
	fl.StringVar(&f.shard, "shard", "", "run shard i of n (i from 0): the points whose index mod n is i")
	intVar(fl, &f.shards, "shards", 0, "number of shards when the shard index comes from "+sweep.JobIndexEnv)
	intVar(fl, &f.workers, "workers", 0, "points run at once (0 = all cores)")
	intVar(fl, &f.partRows, "part-rows", 64, "rows per Parquet part (a part is written when its last point finishes)")
	fl.BoolVar(&f.keepSeries, "keep-series", false, "store each run's per-pass samples (series.* columns: exact latency CDFs in reports; bigger files)")
	fl.BoolVar(&f.list, "list", false, "print the grid's points (of --shard's shard when given) and run nothing")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	return cmd
}

func runSweep(cmd *cobra.Command, f *sweepFlags) error {
	if f.config == "" {
		return fmt.Errorf("--config is required (a sweep file; see docs/sweeps.md)")
	}
	if err := checkSweepFlags(cmd, f); err != nil {
		return err
	}
	g, err := sweep.ReadGrid(f.config)
	if err != nil {
		return err
	}
	points, err := g.Expand()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	shard, shards, err := sweep.ParseShard(f.shard, f.shards, os.Getenv(sweep.JobIndexEnv))
	if err != nil {
		return err
	}
	if f.list {
		return sweep.WriteList(out, g, points, shard, shards)
	}
	cfg, err := g.ResolvedConfig(points, version)
	if err != nil {
		return err
	}
	set, finish := progress.Lazy(cmd.ErrOrStderr(), "sweep", progress.Options{Quiet: f.quiet, Unit: "points"})
	opt := sweep.Options{Out: f.out, Shard: shard, Shards: shards, Workers: f.workers, PartRows: f.partRows, KeepSeries: f.keepSeries,
		Version: version, Config: cfg, ConfigPath: f.config, Progress: func(done, total int) { set(int64(done), int64(total)) }}
	start := time.Now()
	sum, err := sweep.Run(context.Background(), filepath.Base(f.config), points, opt)
	finish()
	if err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "ran %s in %.2f s on %s\n", plural.Count(sum.Ran, "point"), time.Since(start).Seconds(),
			plural.Count(cmp.Or(f.workers, runtime.GOMAXPROCS(0)), "worker"))
	}
	if err := sum.WriteText(out, g, filepath.Base(f.config), f.out); err != nil {
		return err
	}
	return sum.Err()
}

// checkSweepFlags refuses flag values out of range and flags that do not
// apply (those of a run with --list), before anything is read or written.
func checkSweepFlags(cmd *cobra.Command, f *sweepFlags) error {
	fl := cmd.Flags()
	errs := []error{refuseBlank(cmd, "shard", "i/n (shard i of n, i from 0)", "every point (or, with --shards, the shard "+sweep.JobIndexEnv+" names)")}
	if fl.Changed("shards") && f.shards < 1 {
		errs = append(errs, fmt.Errorf("--shards must be >= 1 (got %d)", f.shards))
	}
	if f.list {
		errs = append(errs, refuseFlags(cmd, []string{"out", "workers", "part-rows", "keep-series"}, "with --list (it runs nothing)"))
		return errors.Join(errs...)
	}
	if f.out == "" {
		errs = append(errs, errors.New("--out is required (the results folder)"))
	}
	if f.workers < 0 {
		errs = append(errs, fmt.Errorf("--workers must be >= 0 (got %d; 0 = all cores)", f.workers))
	}
	if f.partRows < 1 {
		errs = append(errs, fmt.Errorf("--part-rows must be >= 1 (got %d)", f.partRows))
	}
	return errors.Join(errs...)
}
