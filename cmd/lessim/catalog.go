package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/adb"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/reports"
	"github.com/lessim/lessim/usbmux"
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

func newDevicesUSBCmd() *cobra.Command {
	var format string
	var watch time.Duration
	cmd := &cobra.Command{
		Use:   "usb",
		Short: "List the iOS devices usbmuxd sees (targets for usb://UDID:PORT)",
		Long: `usb asks usbmuxd (at $USBMUXD_SOCKET_ADDRESS, default /var/run/usbmuxd) for
the devices attached over USB or the network. Use a UDID in a target:
usb://UDID:7070. With --watch it then prints attach and detach events for
that long.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if watch < 0 {
				return fmt.Errorf("--watch %v: must be >= 0 (0 = list and exit)", watch)
			}
			addr := usbmux.DefaultAddress()
			devs, err := usbmux.Devices(cmd.Context(), addr)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				err = printJSON(out, devs)
			} else {
				err = usbmux.WriteTable(out, devs, addr)
			}
			if err != nil || watch == 0 {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), watch)
			defer cancel()
			fmt.Fprintf(out, "watching for %v\n", watch)
			return usbmux.Watch(ctx, addr, func(ev usbmux.Event) {
				udid := ""
				if ev.Device != nil {
					udid = " " + ev.Device.UDID
				}
				fmt.Fprintf(out, "%s device %d%s\n", ev.Type, ev.DeviceID, udid)
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.Flags().DurationVar(&watch, "watch", 0, "then print attach/detach events for this long (e.g. 30s)")
	return cmd
}

func newDevicesADBCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "adb",
		Short: "List the Android devices the adb server sees (targets for adb://SERIAL:PORT)",
		Long: `adb asks the adb server (at $ANDROID_ADB_SERVER_ADDRESS:$ANDROID_ADB_SERVER_PORT,
default 127.0.0.1:5037; start it with adb start-server) for the devices
attached over USB or the network, with each ready device's model and Android
version. Use a serial in a target: adb://SERIAL:7070 (docs/android.md).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			addr := adb.DefaultAddress()
			devs, err := adb.List(cmd.Context(), addr)
			if err != nil {
				return err
			}
			if format == "json" {
				return printJSON(cmd.OutOrStdout(), devs)
			}
			return adb.WriteTable(cmd.OutOrStdout(), devs, addr)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	return cmd
}
