package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newCalibrateCmd() *cobra.Command {
	var f fromRunFlags
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Write a device profile: measured on this machine, or fitted to a measured run",
		Long: `calibrate --from-run fits a device profile's compute and load-cost parameters
(and a scale on its flash bandwidth) to a measured run whose routing is known: the run's
per-token times, its trace, and the profile to start from. It prints each fitted value
with its standard error, what the run could not identify, the per-token residuals, and
draws measured vs predicted per-token time.`,
		Example: `  lessim calibrate --from-run qwen.metrics.csv --trace qwen.parquet --device ufs4-phone-12gb --out my-phone.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.run == "" {
				return errors.New("calibrate needs --from-run RUN (fit to a measured run)")
			}
			return calibrateFromRun(cmd, &f)
		},
	}
	cmd.Flags().StringVar(&f.out, "out", "", "device profile to write (YAML)")
	addFromRunFlags(cmd, &f)
	return cmd
}
