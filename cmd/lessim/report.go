package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/reports"
)

func newReportCmd() *cobra.Command {
	var out string
	var table bool
	cmd := &cobra.Command{
		Use:   "report RESULTS",
		Short: "Draw a results folder's plots (PNG, SVG) and a self-contained report.html",
		Long: `report reads every Parquet file of a results folder (the parts lessim sweep
writes, and measured rows whose source column is "measured") as one table and draws,
when the rows allow: tokens/s and hit rate vs cache size per policy, a heatmap of
cache size × les recall threshold, per-token latency CDFs, the stall breakdown, the
ablation bars and predicted-vs-measured tokens/s. It writes each plot as PNG and SVG
and report.html (plots embedded, a table of the rows) to --out, and says which plots
it left out and why. A Parquet file that holds no rows (a trace, say: neither lessim's
results metadata nor a source column) is ignored with a note on stderr.

--table prints the rows table of report.html (point, source, the spec fields that
vary, tokens/s, hit rate, p50/p99 latency, stall, flash MiB per token, cache, error)
to stdout instead; with --out as well it does both.`,
		Example: `  lessim report results/ --out report/
  lessim report results/ --table`,
		Args: oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := reports.ReadResults(args[0])
			if err != nil {
				return err
			}
			for _, s := range t.Ignored {
				fmt.Fprintf(cmd.ErrOrStderr(), "ignored %s\n", s)
			}
			if table {
				if err := reports.WriteRowText(cmd.OutOrStdout(), t); err != nil || !cmd.Flags().Changed("out") {
					return err
				}
			}
			rep, err := reports.WriteReport(t, args[0], out)
			if err != nil {
				return err
			}
			return rep.WriteText(cmd.OutOrStdout(), t, args[0], out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "report", "folder for the plots and report.html (created)")
	cmd.Flags().BoolVar(&table, "table", false, "print the rows table to stdout (and write the report only when --out is given)")
	return cmd
}
