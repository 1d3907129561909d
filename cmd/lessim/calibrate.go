package main

import (
	"errors"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"

	"github.com/lessim/lessim/runtime/calibrate"
)

// hostFlags are calibrate's command line for measuring this machine.
type hostFlags struct {
	model, lanes, sizes    string
	draftModel             string
	samples, reads, tokens int
	quiet                  bool
	// summary writes the in-process engine's calibration, once made.
	summary func(io.Writer, *devices.Device)
}

// hostOnly are the flags that make sense only when measuring this machine.
var hostOnly = []string{"model", "lanes", "sizes", "samples", "reads", "tokens", "quiet", "draft-model"}

func newCalibrateCmd() *cobra.Command {
	var f fromRunFlags
	var h hostFlags
	var r targetFlags
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Write a device profile: measured on this machine, or fitted to a measured run",
		Long: `calibrate writes a device profile (the YAML schema of devices/profiles) for
simulate --device-file, in one of three ways.

With --model it measures this machine (needs the llama.cpp build): random O_DIRECT read
throughput of the model's file system by read size and lanes, page size, read-ahead,
page-fault cost, RAM, memory bandwidth, and llama.cpp decode time (1 thread, everything
in RAM) on the model and synthetic variants of its shape, and with --draft-model a draft
model's time per draft token. Every value's source gives its
sample count, median and interquartile range; what cannot be measured says "assumed:".
The model must be on a real file system: tmpfs refuses O_DIRECT.

With --from-run it fits a profile's compute and load-cost parameters (and a scale on its
flash bandwidth) to a measured run whose routing is known: the run's per-token times, its
trace, and the profile to start from. It prints each fitted value with its standard
error, what the run could not identify, the per-token residuals, and draws measured vs
predicted per-token time.

With --target tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT (and --token) a
device agent calibrates its own device; the profile it returns is checked and written to --out. --lanes, --sizes,
--samples, --reads and --tokens, when set, go to the agent as the live engine's options.`,
		Example: `  lessim calibrate --model tiny.gguf --out host.yaml
  lessim calibrate --target tcp://127.0.0.1:7070 --token 0123… --out remote.yaml
  lessim calibrate --from-run qwen.metrics.csv --trace qwen.parquet --device ufs4-phone-12gb --out my-phone.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.out == "" {
				return errors.New("calibrate needs --out (the profile to write)")
			}
			token, err := r.check()
			switch {
			case err != nil:
				return err
			case r.target != "":
				why := "with --target (the agent measures its own device with its own model)"
				if err := refuseFlags(cmd, append([]string{"from-run", "model", "quiet", "draft-model"}, fromRunOnly...), why); err != nil {
					return err
				}
				return calibrateOn(cmd, &r, token, &h, f.out)
			case f.run != "":
				if err := refuseFlags(cmd, hostOnly, "with --from-run (they measure this machine)"); err != nil {
					return err
				}
				return calibrateFromRun(cmd, &f)
			}
			if err := refuseFlags(cmd, fromRunOnly, "without --from-run"); err != nil {
				return err
			}
			if h.model == "" {
				return errors.New("calibrate needs --model (measure this machine) or --from-run (fit to a measured run)")
			}
			if err := errors.Join(calibrate.CheckCounts(h.samples, h.reads, h.tokens), checkOutput("out", f.out, h.model)); err != nil {
				return err
			}
			return calibrateOn(cmd, &r, token, &h, f.out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "device profile to write (YAML)")
	fl.StringVar(&h.model, "model", "", "GGUF Mixture-of-Experts model on the storage to measure")
	fl.StringVar(&h.lanes, "lanes", "1,2,4", "reads in flight to measure, increasing")
	fl.StringVar(&h.sizes, "sizes", "128KiB,256KiB,512KiB,1MiB,2MiB,4MiB", "O_DIRECT read sizes, increasing multiples of 4 KiB")
	intVar(fl, &h.samples, "samples", 5, "samples per measured value, at least 1")
	intVar(fl, &h.reads, "reads", 16, "reads per lane per flash sample, at least 1")
	intVar(fl, &h.tokens, "tokens", 16, "decoded tokens per model shape, at least "+strconv.Itoa(calibrate.MinTokens))
	fl.StringVar(&h.draftModel, "draft-model", "", "also time this draft model's decode (live --drafter model) for compute.draft_token")
	fl.BoolVar(&h.quiet, "quiet", false, "no progress lines")
	addFromRunFlags(cmd, &f)
	r.add(fl, "calibrate a device agent instead: "+targetForms+" (the agent measures its device)")
	return cmd
}
