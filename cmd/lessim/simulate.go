package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/internal/progress"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/sim"
)

// simulateFlags are simulate's options that are not part of the experiment:
// where the spec comes from and how the result is shown.
type simulateFlags struct {
	spec, format, plot string
	quiet              bool
}

func newSimulateCmd() *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Predict decode speed for a model, device, cache size and policy",
		Long: `simulate replays a router trace (or, without --trace, a deterministic synthetic
trace of --model) through the discrete-event model of the device's flash, RAM and
compute, with the chosen expert-scheduling policy, and prints the result.

An option that does not apply to the run (a les option with another policy,
--model with --trace, ...) is refused with the reason. --format json prints the
whole experiment spec beside the result; --spec FILE runs such a file again
(a result's JSON or a bare spec) and reproduces the result byte for byte.

A trace whose steps would take more than 1 GiB in memory (a file, or a synthetic
trace of more than about 25,000 tokens) streams: the run reads or generates it one
pass at a time, with a progress bar on stderr (and one for the first pass that
oracle, belady, pinned-hot and speculative decoding make over it; --quiet: none).`,
		Example: `  lessim simulate --model minicpm-v-4.7-35b-a3b --device iphone-18-pro-max --policy les --cache 3GiB
  lessim simulate --trace my.parquet --device ipad-pro-m4 --policy lru --cache 40% --format json > run.json
  lessim simulate --spec run.json --format json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return simulate(cmd, &f) },
	}
	fl := cmd.Flags()
	for _, o := range experiment.Options() {
		v := &optionValue{opt: o, raw: o.Default}
		fl.Var(v, o.Name, o.Usage)
		if o.Kind == experiment.KindBool {
			fl.Lookup(o.Name).NoOptDefVal = "true"
		}
	}
	fl.StringVar(&f.spec, "spec", "", "run the experiment in FILE (- = stdin): a result's JSON (--format json) or a bare spec; no other experiment option may be given with it")
	fl.StringVar(&f.format, "format", "text", "output: text or json")
	fl.StringVar(&f.plot, "plot", "", "also draw per-token time and stalls over the run to PREFIX.png and PREFIX.svg")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr (shown only for a trace long enough to stream)")
	return cmd
}

// optionValue is an experiment option as a flag, checked when parsed and
// kept as written.
type optionValue struct {
	opt experiment.Option
	raw string
}

func (v *optionValue) String() string { return v.raw }

func (v *optionValue) Set(s string) error {
	if _, err := v.opt.Parse(s); err != nil {
		return err
	}
	v.raw = s
	return nil
}

func (v *optionValue) Type() string { return string(v.opt.Kind) }

// simulateOutput is simulate's JSON: the resolved spec, its hash and the result.
type simulateOutput struct {
	Spec     experiment.Spec `json:"spec"`
	SpecHash string          `json:"spec_hash"`
	Result   *sim.Result     `json:"result"`
}

func simulate(cmd *cobra.Command, f *simulateFlags) error {
	if err := checkFormat(f.format); err != nil {
		return err
	}
	if err := refuseEmpty(cmd, "spec", "plot"); err != nil {
		return err
	}
	spec, err := simulateSpec(cmd, f.spec)
	if err != nil {
		return err
	}
	if f.plot != "" {
		if err := checkPlotPrefix(f.plot); err != nil {
			return fmt.Errorf("--plot %s: %w", f.plot, err)
		}
		if err := checkOutputs(reports.PlotFiles(f.plot), f.spec, spec.Trace.Path, spec.Device.File); err != nil {
			return fmt.Errorf("--plot %s: %w", f.plot, err)
		}
	}
	o, err := runWithProgress(cmd.ErrOrStderr(), spec, f.plot != "", f.quiet)
	if err != nil {
		return err
	}
	// The result is printed first: an optional extra that fails (the plot)
	// must not lose it.
	res := o.Result
	series := res.Series
	res.Series = nil // drawn, not printed
	if err := printOutcome(cmd.OutOrStdout(), f.format, o); err != nil {
		return err
	}
	if f.plot == "" {
		return nil
	}
	res.Series = series
	title := fmt.Sprintf("%s on %s, %s, cache %s: %.2f tok/s", o.Model.Name, o.Device.Name, o.Spec.Policy.Name, sim.FormatBytes(o.Spec.Cache.Bytes), res.TokensPerSec)
	files, err := reports.WritePassPlot(res, title, reports.TrimPlotExt(f.plot))
	res.Series = nil
	if err != nil {
		return fmt.Errorf("the result above is complete, but the plot failed: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
	return nil
}

// runWithProgress resolves and runs spec, with progress bars on w for a
// streamed trace's first pass and run.
func runWithProgress(w io.Writer, spec experiment.Spec, keepSeries, quiet bool) (*experiment.Outcome, error) {
	opt := progress.Options{Quiet: quiet, Unit: "steps"}
	var in experiment.Inputs
	var finish func()
	in.FirstPass, finish = progress.Lazy(w, "first pass", opt)
	plan, err := in.Resolve(spec)
	finish()
	if err != nil {
		return nil, err
	}
	plan.Config.KeepSeries = keepSeries
	var bar *progress.Bar
	if plan.Streamed() {
		bar = progress.New(w, plan.TraceSteps(), "simulate", opt)
		plan.Progress = bar.Set
	}
	o, err := plan.Run()
	bar.Finish()
	return o, err
}

// simulateSpec is the experiment: from --spec, or from the options the user set.
func simulateSpec(cmd *cobra.Command, file string) (experiment.Spec, error) {
	var names []string
	for _, o := range experiment.Options() {
		names = append(names, o.Name)
	}
	values := flagValues(cmd, names...)
	if file == "" {
		return experiment.FromOptions(values)
	}
	if len(values) > 0 {
		names := make([]string, 0, len(values))
		for n := range values {
			names = append(names, "--"+n)
		}
		slices.Sort(names)
		return experiment.Spec{}, fmt.Errorf("--spec holds the whole experiment, so %s cannot be given with it (edit the spec instead); only %s may be", strings.Join(names, ", "), strings.Join(withSpecFlags(cmd), ", "))
	}
	s, _, err := experiment.ReadSpec(file, cmd.InOrStdin(), false)
	return s, err
}

// withSpecFlags are the flags simulate takes beside --spec.
func withSpecFlags(cmd *cobra.Command) []string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if experiment.LookupOption(f.Name) == nil && f.Name != "spec" && f.Name != "help" {
			names = append(names, "--"+f.Name)
		}
	})
	return names
}

// checkPlotPrefix checks a --plot prefix before the run.
func checkPlotPrefix(prefix string) error {
	if err := reports.CheckPlotPrefix(prefix); err != nil {
		return err
	}
	return atomicfile.CheckFolder(filepath.Dir(reports.TrimPlotExt(prefix)))
}

// printOutcome prints a run as text or JSON.
func printOutcome(w io.Writer, format string, o *experiment.Outcome) error {
	if format == "json" {
		return printJSON(w, simulateOutput{Spec: o.Spec, SpecHash: o.Hash, Result: o.Result})
	}
	return reports.WriteResult(w, o.Describe(), o.Result)
}
