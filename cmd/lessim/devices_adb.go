package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/adb"
)

// adbDevice is one row of devices adb: adb's listing and, for a device
// ready for commands, its Android version.
type adbDevice struct {
	adb.Device
	Android string `json:"android,omitempty"` // e.g. "14"
	SDK     int    `json:"sdk,omitempty"`     // API level, e.g. 34
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
			ctx, addr := cmd.Context(), adb.DefaultAddress()
			list, err := adb.Devices(ctx, addr)
			if err != nil {
				return err
			}
			devs := make([]adbDevice, len(list))
			for i, d := range list {
				devs[i].Device = d
				if d.State == "device" {
					if devs[i].Android, devs[i].SDK, err = adb.AndroidVersion(ctx, addr, d.Serial); err != nil {
						return err
					}
				}
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				return printJSON(out, devs)
			}
			if len(devs) == 0 {
				fmt.Fprintf(out, "no devices (adb server at %s)\n", addr)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SERIAL\tSTATE\tMODEL\tANDROID\tCONNECTION")
			for _, d := range devs {
				android := "-"
				if d.Android != "" {
					android = d.Android + " (SDK " + strconv.Itoa(d.SDK) + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Serial, d.State, dash(d.Model), android, dash(d.Connection))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
