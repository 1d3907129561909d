package usbmux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes devs, seen by the daemon at a, as an aligned table (a
// line saying there are none when there are none).
func WriteTable(w io.Writer, devs []Device, a Address) error {
	if len(devs) == 0 {
		_, err := fmt.Fprintf(w, "no devices (usbmuxd at %s)\n", a)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "UDID\tDEVICE ID\tCONNECTION\tPRODUCT ID\tSPEED")
	for _, d := range devs {
		speed := "-"
		if d.SpeedBitsPerS != 0 {
			speed = fmt.Sprintf("%d Mbit/s", d.SpeedBitsPerS/1_000_000)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%#04x\t%s\n", d.UDID, d.DeviceID, d.ConnectionType, d.ProductID, speed)
	}
	return tw.Flush()
}

// Watch calls seen with each event of the daemon at a (attached, detached,
// paired) until ctx is done; a deadline that passes ends it without error.
func Watch(ctx context.Context, a Address, seen func(Event)) error {
	c, err := Dial(ctx, a)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Listen(ctx); err != nil {
		return err
	}
	for {
		ev, err := c.Next(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		seen(ev)
	}
}
