package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/ablation"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/reports"
)

// ablateOptions are the experiment options ablate passes to every step.
var ablateOptions = []string{"trace", "model", "tokens", "device", "device-file", "cache"}

// ablateFlags are ablate's own flags.
type ablateFlags struct {
	set     ablation.Settings
	explain bool
	format  string
	plot    string
	out     string
}

func newAblateCmd() *cobra.Command {
	f := ablateFlags{set: ablation.DefaultSettings()}
	cmd := &cobra.Command{
		Use:   "ablate",
		Short: "Predict the stepwise LES ablation, from stock llama.cpp to speculative decoding",
		Long: `ablate runs the published Lookahead Expert Scheduling ablation as five experiment
specs, each the previous one with named changes: (1) stock llama.cpp (gguf-mmap
layout, policy ondemand, rank order, Q4_K_M); (2) + lookahead prefetch (policy
les); (3) + per-expert storage and cached experts first; (4) + mixed precision
(the model's experts re-quantized to Q3_K, simulate's --expert-quant; a trace
file's model too); (5) + speculative decoding. A reference row runs the last
step with policy oracle: a hit-rate reference, not a throughput bound. It
prints tokens/s, speedups, stall share, hit rate and flash bytes per token for
every step.

--leave-one-out adds, for each step between the first and the last, a row with
every other step's changes applied in order but not its own ("w/o (2) lookahead
prefetch"), its speedup taken over the last step: a stepwise ablation credits each
step with its gain at its place in the order, and steps interact.

--explain shows each step's settings and what changed, from the specs' diff.
--format json prints every step's resolved spec, hash and result: simulate
--spec on a step reproduces it byte for byte. --out DIR also writes every step
that ran as a results row (every spec field and Result metric, as lessim sweep
writes, plus ablation_step and ablation_order) to DIR/ablation.parquet, from
which lessim report DIR draws the ablation bars. A step that cannot be expressed
for the inputs is skipped with the reason (step 4 on a trace whose model does
not state its experts' shape, as an imported route trace's).
The speculative defaults (block 4, acceptance 0.7, the model's MTP head as the
drafter) are assumed, not measured.`,
		Example: `  lessim ablate --device iphone-18-pro-max --cache 3GiB
  lessim ablate --device iphone-18-pro-max --cache 3GiB --explain
  lessim ablate --trace my.parquet --cache 40% --format json > ablation.json
  lessim ablate --cache 3GiB --plot ablation
  lessim ablate --cache 3GiB --leave-one-out
  lessim ablate --cache 3GiB --out results/ && lessim report results/ --out report/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return ablate(cmd, &f) },
	}
	fl := cmd.Flags()
	for _, name := range ablateOptions {
		o := experiment.LookupOption(name)
		fl.Var(&optionValue{opt: *o, raw: o.Default}, o.Name, o.Usage)
	}
	uint64Var(fl, &f.set.Seed, "seed", f.set.Seed, "seed of the synthetic trace (when there is one) and of speculative acceptance")
	intVar(fl, &f.set.SpecBlock, "spec-block", f.set.SpecBlock, "speculative step: tokens verified per pass, >= 2; the default is assumed, not measured")
	floatVar(fl, &f.set.SpecAccept, "spec-accept", f.set.SpecAccept, "speculative step: probability each draft token is accepted; the default is assumed, not measured")
	fl.StringVar(&f.set.Drafter, "drafter", f.set.Drafter, "speculative step: what drafts, and so what drafting costs: "+strings.Join(experiment.DrafterKinds(), ", ")+"; the default is assumed, not measured")
	for _, name := range drafterCostOptions {
		o := experiment.LookupOption(name)
		fl.Var(&optionValue{opt: *o, raw: o.Default}, o.Name, "speculative step, "+o.Usage)
	}
	fl.BoolVar(&f.set.Reference, "reference", f.set.Reference, "add the oracle reference row (a hit-rate reference, not a throughput bound)")
	fl.BoolVar(&f.set.LeaveOneOut, "leave-one-out", false, "add a row per middle step (2-4) with every other step applied but not it, compared with the last step: what the finished configuration owes each step")
	fl.BoolVar(&f.explain, "explain", false, "show each step's settings and what changed from the step before")
	fl.StringVar(&f.format, "format", "text", "output: text or json")
	fl.StringVar(&f.plot, "plot", "", "also draw tokens/s per step as a bar chart to PREFIX.png and PREFIX.svg")
	fl.StringVar(&f.out, "out", "", "also write every step's results row to DIR/"+ablation.ResultsFile+" (for lessim report DIR)")
	return cmd
}

func ablate(cmd *cobra.Command, f *ablateFlags) error {
	var errs []error
	if err := checkFormat(f.format); err != nil {
		errs = append(errs, err)
	}
	if f.explain && f.format == "json" {
		errs = append(errs, errors.New("--explain does not apply with --format json: each step's JSON holds its changes and full spec"))
	}
	errs = append(errs, drafterCost(cmd, f), refuseEmpty(cmd, "plot", "out"))
	if f.plot != "" {
		if err := checkPlotPrefix(f.plot); err != nil {
			errs = append(errs, fmt.Errorf("--plot %s: %w", f.plot, err))
		}
	}
	if f.out != "" {
		if err := checkOutDir(f.out); err != nil {
			errs = append(errs, fmt.Errorf("--out %s: %w", f.out, err))
		}
	}
	errs = append(errs, checkOutputs(ablateOutputs(f), ablateInputs(cmd)...))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	f.set.Base = flagValues(cmd, ablateOptions...)
	var in experiment.Inputs
	a, err := ablation.Run(&in, f.set)
	if err != nil {
		return err
	}
	// The table is printed first: a plot that fails must not lose it.
	out := cmd.OutOrStdout()
	if f.format == "json" {
		err = ablation.WriteJSON(out, a)
	} else {
		err = ablation.WriteTable(out, a)
		if err == nil && f.explain {
			fmt.Fprintln(out)
			err = ablation.WriteExplain(out, a)
		}
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		path, err := ablation.WriteResults(f.out, a, version)
		if err != nil {
			return fmt.Errorf("the results above are complete, but writing them to --out failed: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
	}
	if f.plot == "" {
		return nil
	}
	files, err := ablation.WritePlot(a, reports.TrimPlotExt(f.plot))
	if err != nil {
		return fmt.Errorf("the results above are complete, but the plot failed: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
	return nil
}

// drafterCostOptions are the explicit drafter's cost options, ablate's
// flags of simulate's names and kinds.
var drafterCostOptions = []string{"drafter-bytes", "drafter-flops"}

// drafterCost checks --drafter and reads --drafter-bytes and
// --drafter-flops into the settings, by simulate's option rules (names,
// units, finite numbers, bounds, rounding): an unknown drafter is refused
// with the valid ones, and a cost flag given (whatever its value) with a
// drafter other than explicit, whose cost follows from its kind.
func drafterCost(cmd *cobra.Command, f *ablateFlags) error {
	values := flagValues(cmd, drafterCostOptions...)
	values["spec-block"], values["drafter"] = "2", f.set.Drafter
	s, err := experiment.FromOptions(values)
	if err != nil {
		return err
	}
	if d := s.Speculative.Drafter; experiment.CostStated(d.Kind) {
		f.set.DrafterBytes, f.set.DrafterFLOPs = d.Bytes, d.FLOPs
	}
	return nil
}

// checkOutDir checks that a results folder is writable, or that the nearest
// existing folder above it is (WriteResults creates the missing ones).
func checkOutDir(dir string) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		switch {
		case err == nil && !st.IsDir():
			return fmt.Errorf("%s is not a folder", d)
		case err == nil:
			return atomicfile.CheckFolder(d)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || d == filepath.Dir(d):
			return atomicfile.LookupError(d, err)
		}
	}
}

// ablateOutputs are the files ablate writes: the results rows and the
// plot's files.
func ablateOutputs(f *ablateFlags) []string {
	var out []string
	if f.out != "" {
		out = append(out, filepath.Join(f.out, ablation.ResultsFile))
	}
	return append(out, reports.PlotFiles(f.plot)...)
}

// ablateInputs are the files ablate reads: the trace and the device file.
func ablateInputs(cmd *cobra.Command) []string {
	var in []string
	for _, name := range []string{"trace", "device-file"} {
		if fl := cmd.Flags().Lookup(name); fl.Changed {
			in = append(in, fl.Value.String())
		}
	}
	return in
}
