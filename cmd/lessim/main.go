// Command lessim predicts how fast a Mixture-of-Experts model decodes on a
// memory-limited device whose expert weights stream from flash. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/internal/atomicfile"
)

// main installs the atomic-write signal handler (see internal/atomicfile)
// and runs the command line; a command that shut down on a signal
// (atomicfile.NotifyContext) ends the process with it.
func main() {
	releaseSignals = atomicfile.HandleSignals(func(sig os.Signal) {
		fmt.Fprintln(os.Stderr, "lessim:", interruptedText(sig))
	})
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if sig := atomicfile.Interrupted(); sig != nil {
		atomicfile.Exit(sig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lessim:", err)
		os.Exit(1)
	}
}

func interruptedText(sig os.Signal) string {
	if sig == os.Interrupt {
		return "interrupted"
	}
	return "interrupted (" + sig.String() + ")"
}

// run executes one lessim command line; it is main without the process.
func run(args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	return root.Execute()
}

// releaseSignals uninstalls main's signal handler, for a command that
// shuts down by itself (the agent); a no-op outside main (tests).
var releaseSignals = func() {}

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
