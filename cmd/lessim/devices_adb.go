package main

import (
	"github.com/spf13/cobra"

	"github.com/lessim/lessim/adb"
)

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
