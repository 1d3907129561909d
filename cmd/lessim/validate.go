package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/validation"
)

const validateLong = `validate records a trace of the model with llama.cpp (or reuses --trace), then for each
policy × cache size simulates that trace with the calibrated device profile and runs
the same point live (lessim live, --repeats times, 1 thread), and compares predicted
with measured: a table (tokens/s with the measured spread, error, hit rates, per-token
latency p50/p90), the mean absolute percentage error, whether each cache size's
ranking of the policies is preserved, results rows (sweep's Parquet schema, source
simulated or measured) and a scatter plot with y = x, all under --out.

With --target tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT (and --token) a
device agent does the measuring: it records the routing of its own model's greedy decode (the record request of
docs/agent-protocol.md) into --out's trace, this machine simulates that trace with
--device-file (the agent's profile, e.g. from calibrate --target), and the agent runs
every point live. The measured rows record the device facts the agent reported. With
--fit the agent's fit runs send their per-token series (the agent
must announce the series capability, as lessim agent --model does) and the profile is
fitted here as in a local validation. A remote validation needs no llama.cpp in this
build.

Each round runs the points in turn, starting at point r mod n in round r (from 0), so
that every point is first in a round as often as the others.`

const validateExample = `  lessim calibrate --model tiny.gguf --out host.yaml
  lessim validate --model tiny.gguf --device-file host.yaml --policies ondemand,lru,les --caches 15%,25%,40% --out validation/
  lessim calibrate --target tcp://127.0.0.1:7070 --token 0123… --out remote.yaml
  lessim validate --target tcp://127.0.0.1:7070 --token 0123… --device-file remote.yaml --out validation/`

// validateLocalOnly are flags a remote validation cannot carry.
var validateLocalOnly = []string{"model", "prompt", "lanes", "grid-lanes", "grid-threads"}

func newValidateCmd() *cobra.Command {
	o := validation.Options{Tokens: 32, Repeats: 2, Version: version}
	var pols, caches, fitPts, gridLanes, gridThreads, token string
	var quiet bool
	cmd := &cobra.Command{
		Use:     "validate",
		Short:   "Check the simulator's predictions against live runs of the real engine (here or on a device agent)",
		Long:    validateLong,
		Example: validateExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs [3]error
			o.Policies, errs[0] = splitList("policies", pols)
			o.Caches, errs[1] = splitList("caches", caches)
			o.Fit, errs[2] = splitList("fit", fitPts)
			if err := errors.Join(errs[:]...); err != nil {
				return err
			}
			grid, err := validation.ParseGrid(gridLanes, gridThreads)
			if err != nil {
				return err
			}
			o.Grid = grid
			if !quiet {
				o.Progress = func(s string) { fmt.Fprintf(cmd.ErrOrStderr(), "validate: %s\n", s) }
			}
			if o.Out == "" {
				return errors.New(`required flag(s) "out" not set`)
			}
			if err := refuseBlank(cmd, "prompt", "the text to prefill", "live's fixed sentence"); err != nil {
				return err
			}
			ctx, stop := atomicfile.NotifyContext(cmd.Context())
			defer stop()
			rep, err := runValidate(ctx, cmd, &o, token)
			if err != nil {
				return err
			}
			defer rep.Stage.Abort()
			return rep.Write(cmd.OutOrStdout(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "", "GGUF Mixture-of-Experts model (required without --target)")
	f.StringVar(&o.DeviceFile, "device-file", "", "device profile of the measuring device (lessim calibrate, or calibrate --target)")
	f.StringVar(&o.Trace, "trace", "", "reuse this trace (same model, prompt and --tokens) instead of recording one")
	f.StringVar(&fitPts, "fit", "", "POLICY:CACHE points, comma-separated (e.g. ondemand:25%,les:25%): fit the profile to separate live runs of them, made in the same rounds as the measurements (calibrate --from-run), and simulate with the fitted profile")
	f.StringVar(&pols, "policies", "ondemand,lru,les", "policies, comma-separated")
	f.StringVar(&caches, "caches", "15%,25%,40%", "cache sizes, comma-separated: sizes (64MiB) or percentages of all expert bytes")
	intVar(f, &o.Tokens, "tokens", o.Tokens, "decode tokens recorded and measured per run")
	intVar(f, &o.Repeats, "repeats", o.Repeats, "live runs per point")
	f.StringVar(&o.Prompt, "prompt", "", "text to prefill before decoding (default: live's fixed sentence)")
	intVar(f, &o.Lanes, "lanes", 0, "live I/O lanes (0 = the profile's flash.lanes, which the simulation uses; another value is refused)")
	f.StringVar(&gridLanes, "grid-lanes", "", "live I/O lanes of a grid, comma-separated (e.g. 1,2,4), with --grid-threads: every policy and cache runs at each lanes × threads, simulated with them (--fit points then read POLICY:CACHE:LANES:THREADS)")
	f.StringVar(&gridThreads, "grid-threads", "", "compute threads of a grid, comma-separated (e.g. 1,2), with --grid-lanes")
	f.StringVar(&o.Out, "out", "", "output folder (required)")
	f.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	f.StringVar(&o.Target, "target", "", "measure on a device agent: tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT")
	f.StringVar(&token, "token", "", "the agent's token with --target (default $"+tokenEnv+")")
	return cmd
}

func runValidate(ctx context.Context, cmd *cobra.Command, o *validation.Options, token string) (*validation.Report, error) {
	if o.Target == "" {
		if token != "" {
			return nil, errTokenAlone
		}
		if o.Model == "" {
			return nil, errors.New(`required flag(s) "model" not set (or validate on an agent with --target)`)
		}
		if liveEngine == nil {
			return nil, errNoLlama("validate against the real engine here", "--target validates on a device agent in every build")
		}
		return validation.Run(ctx, *o, func() (agent.Engine, error) { return liveEngine(o.Model, liveOptions{local: true, prompt: o.Prompt}) })
	}
	if err := refuseFlags(cmd, validateLocalOnly, remoteWhy); err != nil {
		return nil, err
	}
	token, err := clientToken(token)
	if err != nil {
		return nil, err
	}
	return validation.Run(ctx, *o, func() (agent.Engine, error) { return agent.Dial(ctx, o.Target, token) })
}

// splitList splits comma-separated flag --name, refusing an empty item.
func splitList(name, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return nil, fmt.Errorf("--%s %q: an empty entry (a stray comma?)", name, s)
		}
		out = append(out, v)
	}
	return out, nil
}
