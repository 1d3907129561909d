package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/calibrate"
)

// calibrateOn has the engine calibrate its device and writes the profile
// it returns (checked first) to out: the live engine in this process on
// --model, or the agent at --target. calibrate's measuring flags, when
// set, travel as the live engine's options (calibrate.Options as JSON).
func calibrateOn(cmd *cobra.Command, r *targetFlags, token string, h *hostFlags, out string) error {
	opts, err := calibrateOptions(cmd, h)
	if err != nil {
		return err
	}
	if err := checkOutput("out", out, h.model); err != nil {
		return err
	}
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	eng, err := calibrateEngine(ctx, cmd, r, token, h, out)
	if err != nil {
		return err
	}
	defer closeEngine(eng)
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
	where := h.model
	if r.target != "" {
		where = r.target
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
	if h.summary != nil {
		h.summary(w, d)
	}
	if len(d.Assumed) > 0 {
		fmt.Fprintf(w, "assumed (not measured): %s\n", strings.Join(d.Assumed, ", "))
	}
	return nil
}

// calibrateEngine opens the engine that calibrates: a client of --target,
// or the live engine on --model (its progress on stderr unless --quiet).
func calibrateEngine(ctx context.Context, cmd *cobra.Command, r *targetFlags, token string, h *hostFlags, out string) (agent.Engine, error) {
	if r.target == "" && liveEngine != nil {
		// NB: the flags' options checked as the engine will, before the
		// model is opened: every problem at once.
		o := calibrate.DefaultOptions()
		o.Model, o.Out, o.DraftModel = h.model, out, h.draftModel
		var err error
		if o.Lanes, err = parseInts(h.lanes); err != nil {
			return nil, fmt.Errorf("--lanes: %w", err)
		}
		if o.Sizes, err = parseSizes(h.sizes); err != nil {
			return nil, fmt.Errorf("--sizes: %w", err)
		}
		if err := o.Validate(); err != nil {
			return nil, err
		}
	}
	lo := liveOptions{calibrated: func(s func(io.Writer, *devices.Device)) { h.summary = s }}
	if !h.quiet {
		lo.log = cmd.ErrOrStderr()
	}
	return r.open(ctx, token, h.model, lo, "measure this machine", "--from-run works in every build")
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
	var err error
	if changed("lanes") {
		if o.Lanes, err = parseInts(h.lanes); err != nil {
			return nil, fmt.Errorf("--lanes: %w", err)
		}
	}
	if changed("sizes") {
		if o.Sizes, err = parseSizes(h.sizes); err != nil {
			return nil, fmt.Errorf("--sizes: %w", err)
		}
	}
	o.DraftModel = h.draftModel
	set := changed("lanes") || changed("sizes") || h.draftModel != ""
	for _, f := range []struct {
		name     string
		src, dst *int
	}{{"samples", &h.samples, &o.Samples}, {"reads", &h.reads, &o.Reads}, {"tokens", &h.tokens, &o.Tokens}} {
		if changed(f.name) {
			*f.dst, set = *f.src, true
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
