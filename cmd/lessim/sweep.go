package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
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

// jobIndexEnv is the variable Kubernetes Indexed Jobs set to the pod's index.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

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
	intVar(fl, &f.shards, "shards", 0, "number of shards when the shard index comes from "+jobIndexEnv)
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
	shard, shards, err := parseShard(f.shard, f.shards, os.Getenv(jobIndexEnv))
	if err != nil {
		return err
	}
	if f.list {
		return listPoints(out, g, points, shard, shards)
	}
	cfg, err := g.ResolvedConfig(points, version)
	if err != nil {
		return err
	}
	var bar *progress.Bar
	opt := sweep.Options{Out: f.out, Shard: shard, Shards: shards, Workers: f.workers, PartRows: f.partRows,
		KeepSeries: f.keepSeries,
		Version:    version, Config: cfg, ConfigPath: f.config}
	opt.Progress = func(done, total int) {
		if bar == nil {
			bar = progress.New(cmd.ErrOrStderr(), int64(total), "sweep", progress.Options{Quiet: f.quiet, Unit: "points"})
		}
		bar.Set(int64(done))
	}
	start := time.Now()
	sum, err := sweep.Run(context.Background(), filepath.Base(f.config), points, opt)
	bar.Finish()
	if err != nil {
		return err
	}
	workers := f.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "ran %s in %.2f s on %s\n", plural.Count(sum.Ran, "point"), time.Since(start).Seconds(), plural.Count(workers, "worker"))
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "grid\t%s: %s, %s (sweep %s)\n", filepath.Base(f.config), plural.CountAs(len(g.Axes), "axis", "axes"), plural.Count(sum.Points, "point"), sum.SweepID)
	fmt.Fprintf(tw, "shard\t%s: %s, %d finished before, %d run now, %d failed\n", sum.Shard, plural.Count(sum.Mine, "point"), sum.Skipped, sum.Ran, sum.Failed)
	fmt.Fprintf(tw, "results\t%s (%s written now; %s, %s)\n", f.out, plural.Count(len(sum.Parts), "part"), sweep.ManifestFile, sweep.ConfigFile)
	if err := tw.Flush(); err != nil {
		return err
	}
	return failedPoints(sum)
}

// failedPoints is the error naming the shard's failed points, or nil.
func failedPoints(sum *sweep.Summary) error {
	if sum.Failed == 0 {
		return nil
	}
	before := ""
	if sum.FailedBefore > 0 {
		before = fmt.Sprintf("; not retried: %s failed in an earlier run; to run them again, delete the %s holding them (%s) and rerun",
			plural.Count(sum.FailedBefore, "point"), plural.Word(len(sum.FailedParts), "part", "parts"), strings.Join(sum.FailedParts, ", "))
	}
	more := ""
	if n := sum.Failed - len(sum.Errors); n > 0 {
		more = fmt.Sprintf("\n  and %s more", plural.Count(n, "point"))
	}
	return fmt.Errorf("%d of %s failed (their rows carry the reason in the error column%s):\n  %s%s",
		sum.Failed, plural.Count(sum.Mine, "point"), before, strings.Join(sum.Errors, "\n  "), more)
}

// checkSweepFlags refuses flag values out of range and flags that do not
// apply (those of a run with --list), before anything is read or written.
func checkSweepFlags(cmd *cobra.Command, f *sweepFlags) error {
	fl := cmd.Flags()
	errs := []error{refuseBlank(cmd, "shard", "i/n (shard i of n, i from 0)", "every point (or, with --shards, the shard "+jobIndexEnv+" names)")}
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

// parseShard resolves --shard i/n, or the Indexed Job index with --shards n.
func parseShard(flag string, shards int, jobIndex string) (int, int, error) {
	if flag != "" {
		is, ns, ok := strings.Cut(flag, "/")
		i, err1 := strconv.Atoi(is)
		n, err2 := strconv.Atoi(ns)
		if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
			return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 <= i < n (the index counts from 0, like %s)", flag, jobIndexEnv)
		}
		if shards != 0 && shards != n {
			return 0, 0, fmt.Errorf("--shard %s and --shards %d disagree", flag, shards)
		}
		return i, n, nil
	}
	if jobIndex != "" {
		i, err := strconv.Atoi(jobIndex)
		if err != nil || i < 0 {
			return 0, 0, fmt.Errorf("%s=%q: not a shard index", jobIndexEnv, jobIndex)
		}
		if shards < 1 {
			return 0, 0, fmt.Errorf("%s=%s is set: give --shards N (the Job's completions) to shard by it", jobIndexEnv, jobIndex)
		}
		if i >= shards {
			return 0, 0, fmt.Errorf("%s=%d is not below --shards %d", jobIndexEnv, i, shards)
		}
		return i, shards, nil
	}
	if shards > 1 {
		return 0, 0, fmt.Errorf("--shards %d needs a shard index: --shard i/%d or %s", shards, shards, jobIndexEnv)
	}
	return 0, 1, nil
}

// listPoints prints each point of shard i/n: its index, id prefix and axis
// values.
func listPoints(w io.Writer, g *sweep.Grid, points []sweep.Point, shard, shards int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "POINT\tID")
	for _, ax := range g.Axes {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(ax.Field))
	}
	fmt.Fprintln(tw)
	for _, p := range sweep.ShardPoints(points, shard, shards) {
		fmt.Fprintf(tw, "%d\t%s", p.Index, p.ID[:12])
		for _, v := range p.Values {
			s := "-"
			if v != nil {
				js, _ := json.Marshal(v)
				s = strings.Trim(string(js), `"`)
			}
			fmt.Fprintf(tw, "\t%s", s)
		}
		fmt.Fprintln(tw)
	}
	if shards > 1 {
		fmt.Fprintf(tw, "%d of %s in shard %d/%d (sweep %s)\n", len(sweep.ShardPoints(points, shard, shards)), plural.Count(len(points), "point"), shard, shards, sweep.SweepID(points))
	} else {
		fmt.Fprintf(tw, "%s (sweep %s)\n", plural.Count(len(points), "point"), sweep.SweepID(points))
	}
	return tw.Flush()
}
