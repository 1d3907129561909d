package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/calibrate"
)

// remoteFlags are calibrate's --target and --token.
type remoteFlags struct{ target, token string }

// calibrateOn has the engine calibrate its device and writes the profile
// it returns (checked first) to out: the live engine in this process on
// --model, or the agent at --target. calibrate's measuring flags, when
// set, travel as the live engine's options (calibrate.Options as JSON).
func calibrateOn(cmd *cobra.Command, r *remoteFlags, h *hostFlags, out string) error {
	if r.target != "" {
		if err := refuseFlags(cmd, append([]string{"from-run", "model", "quiet"}, fromRunOnly...), "with --target (the agent measures its own device with its own model)"); err != nil {
			return err
		}
	}
	opts, err := calibrateOptions(cmd, h)
	if err != nil {
		return err
	}
	if err := checkOutput("out", out, h.model); err != nil {
		return err
	}
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	eng, where, err := calibrateEngine(ctx, cmd, r, h, out)
	if err != nil {
		return err
	}
	if c, ok := eng.(*agent.Client); ok {
		defer c.Close()
	}
	facts := eng.Facts()
	if facts.Kind == agent.KindSimulated {
		if err := refuseFlags(cmd, measuringFlags, "with --target "+r.target+": a simulator agent's calibration measures nothing (its profile is the calibration)"); err != nil {
			return err
		}
	}
	y, err := eng.Calibrate(ctx, opts)
	if err != nil {
		return err
	}
	p, err := devices.ParseProfile(y, where)
	if err != nil {
		return fmt.Errorf("the agent's profile: %w", err)
	}
	d, err := p.Device()
	if err != nil {
		return fmt.Errorf("the agent's profile: %w", err)
	}
	if err := atomicfile.WriteFile(out, y); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if r.target != "" {
		fmt.Fprintf(w, "wrote %s: device %s, calibrated by the agent at %s (%s %s, %s, %s %s)\n",
			out, d.Name, r.target, facts.Kind, facts.Model, facts.OS, facts.Engine, facts.EngineVersion)
		return nil
	}
	fmt.Fprintf(w, "wrote %s: device %s\n", out, d.Name)
	if r := h.result; r != nil {
		fmt.Fprintf(w, "flash: %s reads %s at 1 lane, %s at %d lanes; latency %.0f us; lanes %d\n",
			strings.TrimSpace(sizeText(r.size)), mib(r.oneLane), mib(r.allLanes), r.lanes, float64(d.Flash.LatencyNS)/1e3, d.Flash.Lanes)
		fmt.Fprintf(w, "memory: %.2f GB/s × efficiency %.3f; compute %.2f GFLOPS, %.1f us per layer\n",
			d.MemBandwidth/1e9, d.MemEfficiency, d.ComputeFLOPS/1e9, float64(d.LayerOverhead)/1e3)
		fmt.Fprintf(w, "decode (all in RAM, 1 thread): %.2f ms/token on %s\n", r.tokenNS/1e6, r.model)
		if ll := r.liveLoad; ll != nil {
			fmt.Fprintf(w, "live engine: one expert load adds %.0f ± %.0f us to the compute thread (compute.load_fixed %.0f us); %.2f ms/token with no loads\n",
				ll.PerLoadNS/1e3, ll.PerLoadSE/1e3, float64(d.LoadFixedNS)/1e3, ll.InterceptNS/1e6)
		}
	}
	if len(d.Assumed) > 0 {
		fmt.Fprintf(w, "assumed (not measured): %s\n", strings.Join(d.Assumed, ", "))
	}
	return nil
}

// calSummary is what calibrate prints of the in-process engine's
// measurement (runtime/calibrate's Result exists only on Linux): the largest
// read size, its median throughput at 1 and at the most lanes, and the
// model's decode time all in RAM.
type calSummary struct {
	size              int64
	lanes             int
	oneLane, allLanes float64 // bytes/s
	tokenNS           float64
	model             string
	liveLoad          *calibrate.LiveLoad
}

// calibrateEngine opens the engine that calibrates: a client of --target,
// or the live engine on --model (its progress on stderr unless --quiet).
func calibrateEngine(ctx context.Context, cmd *cobra.Command, r *remoteFlags, h *hostFlags, out string) (agent.Engine, string, error) {
	if r.target == "" {
		if localEngine == nil {
			return nil, "", errNoLlama("measure this machine", "--from-run works in every build")
		}
		// NB: the flags' options checked as the engine will, before the
		// model is opened: every problem at once.
		o := calibrate.DefaultOptions()
		o.Model, o.Out = h.model, out
		var err error
		if o.Lanes, err = parseInts(h.lanes); err != nil {
			return nil, "", fmt.Errorf("--lanes: %w", err)
		}
		if o.Sizes, err = parseSizes(h.sizes); err != nil {
			return nil, "", fmt.Errorf("--sizes: %w", err)
		}
		if err := o.Validate(); err != nil {
			return nil, "", err
		}
		lo := localOptions{calibrated: func(r calSummary) { h.result = &r }}
		if !h.quiet {
			lo.log = cmd.ErrOrStderr()
		}
		e, err := localEngine(h.model, lo)
		return e, h.model, err
	}
	if _, err := agent.ParseTarget(r.target); err != nil {
		return nil, "", err
	}
	token, err := clientToken(r.token)
	if err != nil {
		return nil, "", err
	}
	c, err := agent.Dial(ctx, r.target, token)
	return c, r.target, err
}

// calibrateOptions are the measuring flags the user set, as the live
// engine's calibrate options; nil when none is set (the engine's defaults,
// which are the flags' defaults).
func calibrateOptions(cmd *cobra.Command, h *hostFlags) (json.RawMessage, error) {
	if err := calibrate.CheckCounts(h.samples, h.reads, h.tokens); err != nil {
		return nil, err
	}
	changed := cmd.Flags().Changed
	var o calibrate.Options
	var set bool
	var err error
	if changed("lanes") {
		if o.Lanes, err = parseInts(h.lanes); err != nil {
			return nil, fmt.Errorf("--lanes: %w", err)
		}
		set = true
	}
	if changed("sizes") {
		if o.Sizes, err = parseSizes(h.sizes); err != nil {
			return nil, fmt.Errorf("--sizes: %w", err)
		}
		set = true
	}
	for _, f := range []struct {
		name string
		v    int
		dst  *int
	}{{"samples", h.samples, &o.Samples}, {"reads", h.reads, &o.Reads}, {"tokens", h.tokens, &o.Tokens}} {
		if changed(f.name) {
			*f.dst, set = f.v, true
		}
	}
	if !set {
		return nil, nil
	}
	return json.Marshal(o)
}

// measuringFlags are calibrate's flags that shape a measurement, which
// --target sends to the agent as its engine's options.
var measuringFlags = []string{"lanes", "sizes", "samples", "reads", "tokens"}

// errTokenAlone refuses --token without --target.
var errTokenAlone = errors.New("--token applies only with --target")

// parseInts parses "1,2,4".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSizes parses "128KiB,1MiB".
func parseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := devices.ParseSize(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func sizeText(b int64) string {
	if b >= 1<<20 && b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

func mib(bps float64) string { return fmt.Sprintf("%.0f MiB/s", bps/(1<<20)) }
