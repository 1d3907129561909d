package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
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
				if err := printJSON(out, devs); err != nil {
					return err
				}
			} else if len(devs) == 0 {
				fmt.Fprintf(out, "no devices (usbmuxd at %s)\n", addr)
			} else {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "UDID\tDEVICE ID\tCONNECTION\tPRODUCT ID\tSPEED")
				for _, d := range devs {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%#04x\t%s\n", d.UDID, d.DeviceID, d.ConnectionType, d.ProductID, speed(d.SpeedBitsPerS))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if watch > 0 {
				return watchUSB(cmd, addr, watch)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.Flags().DurationVar(&watch, "watch", 0, "then print attach/detach events for this long (e.g. 30s)")
	return cmd
}

func speed(bps uint64) string {
	if bps == 0 {
		return "-"
	}
	return fmt.Sprintf("%d Mbit/s", bps/1_000_000)
}

// watchUSB prints usbmuxd's events until d has passed.
func watchUSB(cmd *cobra.Command, addr usbmux.Address, d time.Duration) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), d)
	defer cancel()
	c, err := usbmux.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Listen(ctx); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "watching for %v\n", d)
	for {
		ev, err := c.Next(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		udid := ""
		if ev.Device != nil {
			udid = " " + ev.Device.UDID
		}
		fmt.Fprintf(out, "%s device %d%s\n", ev.Type, ev.DeviceID, udid)
	}
}
