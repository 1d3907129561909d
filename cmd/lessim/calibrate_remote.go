package main

import (
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

// calibrateRemote asks the agent at r.target to calibrate its device and
// writes the profile it returns (checked first) to out. calibrate's
// measuring flags, when set, travel as the live engine's options
// (agent.LiveCalibrateOptions).
func calibrateRemote(cmd *cobra.Command, r *remoteFlags, h *hostFlags, out string) error {
	if err := refuseFlags(cmd, append([]string{"from-run", "model", "quiet"}, fromRunOnly...), "with --target (the agent measures its own device with its own model)"); err != nil {
		return err
	}
	opts, err := remoteCalibrateOptions(cmd, h)
	if err != nil {
		return err
	}
	if err := checkOutput("out", out); err != nil {
		return err
	}
	if _, err := agent.ParseTarget(r.target); err != nil {
		return err
	}
	token, err := clientToken(r.token)
	if err != nil {
		return err
	}
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	c, err := agent.Dial(ctx, r.target, token)
	if err != nil {
		return err
	}
	defer c.Close()
	facts := c.Facts()
	if facts.Kind == agent.KindSimulated {
		if err := refuseFlags(cmd, measuringFlags, "with --target "+r.target+": a simulator agent's calibration measures nothing (its profile is the calibration)"); err != nil {
			return err
		}
	}
	y, err := c.Calibrate(ctx, opts)
	if err != nil {
		return err
	}
	p, err := devices.ParseProfile(y, r.target)
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
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: device %s, calibrated by the agent at %s (%s %s, %s, %s %s)\n",
		out, d.Name, r.target, facts.Kind, facts.Model, facts.OS, facts.Engine, facts.EngineVersion)
	return nil
}

// remoteCalibrateOptions are the measuring flags the user set, as the live
// engine's calibrate options; nil when none is set (the engine's defaults).
func remoteCalibrateOptions(cmd *cobra.Command, h *hostFlags) (json.RawMessage, error) {
	if err := calibrate.CheckCounts(h.samples, h.reads, h.tokens); err != nil {
		return nil, err
	}
	changed := cmd.Flags().Changed
	var o agent.LiveCalibrateOptions
	var set bool
	var err error
	if changed("lanes") {
		if o.Lanes, err = parseInts(h.lanes); err != nil {
			return nil, fmt.Errorf("--lanes: %w", err)
		}
		set = true
	}
	if changed("sizes") {
		if o.SizesBytes, err = parseSizes(h.sizes); err != nil {
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
