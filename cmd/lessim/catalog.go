package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

func newDevicesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "devices", Short: "List and show device profiles"}
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the embedded device profiles", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tRAM\tFLASH LANES\tASSUMED VALUES\tDESCRIPTION")
			for _, n := range devices.ProfileNames() {
				p, err := devices.LoadProfile(n)
				if err != nil {
					return err
				}
				d, err := p.Device()
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", n, sim.FormatBytes(d.RAMBytes), d.Flash.Lanes, len(d.Assumed), p.Description)
			}
			return tw.Flush()
		},
	})
	var asYAML bool
	show := &cobra.Command{
		Use: "show NAME|FILE.yaml", Short: "Show a profile's values with their sources", Args: oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			var p *devices.Profile
			var err error
			if strings.HasSuffix(args[0], ".yaml") || strings.HasSuffix(args[0], ".yml") {
				p, err = devices.ParseProfileFile(args[0])
			} else {
				p, err = devices.LoadProfile(args[0])
			}
			if err != nil {
				return err
			}
			if asYAML {
				b, err := p.YAML()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return p.WriteTable(cmd.OutOrStdout())
		},
	}
	show.Flags().BoolVar(&asYAML, "yaml", false, "print the profile as YAML (a starting point for --device-file)")
	cmd.AddCommand(show)
	cmd.AddCommand(newDevicesUSBCmd())
	cmd.AddCommand(newDevicesADBCmd())
	return cmd
}

func newModelsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "models", Short: "List and show built-in model specs"}
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the built-in model specs and their quant variants", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVARIANT\tARCH\tLAYERS\tEXPERTS\tTOP-K\tEXPERT BYTES\tALL EXPERTS\tRESIDENT")
			for _, n := range devices.ModelNames() {
				for _, v := range devices.ModelVariants(n) {
					m, err := devices.LookupModel(n, v)
					if err != nil {
						return err
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", n, v, m.Arch, len(m.Layers), m.Experts, m.TopK,
						expertBytesRange(m), sim.FormatBytes(m.TotalExpertBytes()), sim.FormatBytes(m.NonExpertBytes))
				}
			}
			return tw.Flush()
		},
	})
	var variant, format string
	show := &cobra.Command{
		Use: "show NAME[:VARIANT]", Short: "Show a model spec: shape, quant types, bytes per expert per layer", Args: oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			name := args[0]
			if strings.Contains(name, ":") {
				if variant != "" {
					return fmt.Errorf("give the variant once: %s or --variant %s", name, variant)
				}
				name, variant, _ = strings.Cut(name, ":")
			}
			m, err := devices.LookupModel(name, variant)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				return printJSON(out, m)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "model\t%s (%s)\narch\t%s\nshape\t%d blocks, %d MoE layers × %d experts, top-%d, %d shared; hidden %d, expert FFN %d\n",
				m.Name, m.Variant, m.Arch, m.Blocks, len(m.Layers), m.Experts, m.TopK, m.SharedExperts, m.Hidden, m.ExpertFFN)
			fmt.Fprintf(tw, "experts\t%s in all\nresident\t%s (non-expert weights), head %s, KV %s/token\nsource\t%s\n\n",
				sim.FormatBytes(m.TotalExpertBytes()), sim.FormatBytes(m.NonExpertBytes), sim.FormatBytes(m.HeadBytes),
				sim.FormatBytes(m.KVBytesPerToken), m.Source)
			fmt.Fprintln(tw, "LAYER\tBLOCK\tEXPERT BYTES\tTENSORS\tDENSE BYTES")
			for i, l := range m.Layers {
				var ts []string
				for _, t := range l.Tensors {
					ts = append(ts, fmt.Sprintf("%s %s %d", t.Name, t.Type, t.Bytes))
				}
				fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\n", i, l.Block, l.ExpertBytes, strings.Join(ts, ", "), l.DenseBytes)
			}
			return tw.Flush()
		},
	}
	show.Flags().StringVar(&variant, "variant", "", "quant variant (default: the model's default)")
	show.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.AddCommand(show)
	return cmd
}

// lookupModelSpec looks up a built-in model named as the agent's --model
// and models show take it: NAME or NAME:VARIANT.
func lookupModelSpec(spec string) (*devices.ModelSpec, error) {
	name, variant, _ := strings.Cut(spec, ":")
	return devices.LookupModel(name, variant)
}

func expertBytesRange(m *devices.ModelSpec) string {
	lo, hi := int64(-1), int64(0)
	for _, l := range m.Layers {
		if lo < 0 || l.ExpertBytes < lo {
			lo = l.ExpertBytes
		}
		hi = max(hi, l.ExpertBytes)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

func newPoliciesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policies", Short: "List the expert-scheduling policies"}
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the policies", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION")
			for _, n := range policies.Names() {
				fmt.Fprintf(tw, "%s\t%s\n", n, policies.Describe(n))
			}
			return tw.Flush()
		},
	})
	return cmd
}
