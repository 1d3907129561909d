package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile"
)

// remoteFlags are calibrate's --target and --token.
type remoteFlags struct{ target, token string }

// calibrateRemote asks the agent at r.target to calibrate its device and
// writes the profile it returns (checked first) to out.
func calibrateRemote(cmd *cobra.Command, r *remoteFlags, out string) error {
	if err := refuseFlags(cmd, append(append([]string{"from-run"}, hostOnly...), fromRunOnly...), "with --target (the agent measures its own device)"); err != nil {
		return err
	}
	if _, err := agent.ParseTarget(r.target); err != nil {
		return err
	}
	token, err := clientToken(r.token)
	if err != nil {
		return err
	}
	y, facts, err := agent.CalibrateRemote(cmd.Context(), r.target, token, nil)
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

// errTokenAlone refuses --token without --target.
var errTokenAlone = errors.New("--token applies only with --target")
