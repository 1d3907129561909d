package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/reports"
)

// listCmd is a "list" subcommand that writes one catalog table.
func listCmd(short string, write func(io.Writer) error) *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: short, Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return write(cmd.OutOrStdout()) },
	}
}

func newDevicesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "devices", Short: "List and show device profiles"}
	var asYAML bool
	show := &cobra.Command{
		Use: "show NAME|FILE.yaml", Short: "Show a profile's values with their sources", Args: oneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, file := args[0], ""
			if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
				name, file = "", name
			}
			p, err := loadProfile(name, file)
			if err != nil {
				return err
			}
			if !asYAML {
				return p.WriteTable(cmd.OutOrStdout())
			}
			b, err := p.YAML()
			if err == nil {
				_, err = cmd.OutOrStdout().Write(b)
			}
			return err
		},
	}
	show.Flags().BoolVar(&asYAML, "yaml", false, "print the profile as YAML (a starting point for --device-file)")
	cmd.AddCommand(listCmd("List the embedded device profiles", reports.WriteProfileList), show, newDevicesUSBCmd(), newDevicesADBCmd())
	return cmd
}

// loadProfile reads the profile file, else the embedded profile name.
func loadProfile(name, file string) (*devices.Profile, error) {
	if file != "" {
		return devices.ParseProfileFile(file)
	}
	return devices.LoadProfile(name)
}

func newModelsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "models", Short: "List and show built-in model specs"}
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
			if format == "json" {
				return printJSON(cmd.OutOrStdout(), m)
			}
			return reports.WriteModel(cmd.OutOrStdout(), m)
		},
	}
	show.Flags().StringVar(&variant, "variant", "", "quant variant (default: the model's default)")
	show.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.AddCommand(listCmd("List the built-in model specs and their quant variants", reports.WriteModelList), show)
	return cmd
}

func newPoliciesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policies", Short: "List the expert-scheduling policies"}
	cmd.AddCommand(listCmd("List the policies", reports.WritePolicyList))
	return cmd
}
