package main

import (
	"io"

	"github.com/spf13/cobra"
)

// version is lessim's version, recorded in trace metadata and results.
const version = "0.1.0"

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "lessim",
		Short: "Simulate MoE decoding with experts streamed from flash",
		Long: `lessim predicts tokens/s, latency, memory and flash traffic of a Mixture-of-Experts
model whose expert weights live in flash on a memory-limited device, for a given
cache size and expert-scheduling policy (e.g. Lookahead Expert Scheduling).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newSimulateCmd(),
		newAblateCmd(),
		newTraceCmd(),
		newDevicesCmd(),
		newModelsCmd(),
		newPoliciesCmd(),
		newModelCmd(),
		newRecordCmd(),
		newAgentCmd(),
		newSweepCmd(),
		newReportCmd(),
		newCalibrateCmd(),
		newLiveCmd(),
		newValidateCmd(),
	)
	return root
}
