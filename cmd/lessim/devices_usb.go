package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/usbmux"
)

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
