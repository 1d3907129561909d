package adb

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Listed is a device as List reports it: the server's listing and, for a
// device ready for commands, its Android version.
type Listed struct {
	Device
	Android string `json:"android,omitempty"` // e.g. "14"
	SDK     int    `json:"sdk,omitempty"`     // API level, e.g. 34
}

// List is Devices with each ready device's Android version.
func List(ctx context.Context, addr string) ([]Listed, error) {
	list, err := Devices(ctx, addr)
	if err != nil {
		return nil, err
	}
	devs := make([]Listed, len(list))
	for i, d := range list {
		devs[i].Device = d
		if d.State == "device" {
			if devs[i].Android, devs[i].SDK, err = AndroidVersion(ctx, addr, d.Serial); err != nil {
				return nil, err
			}
		}
	}
	return devs, nil
}

// WriteTable writes devs, listed by the server at addr, as an aligned
// table (a line saying there are none when there are none).
func WriteTable(w io.Writer, devs []Listed, addr string) error {
	if len(devs) == 0 {
		_, err := fmt.Fprintf(w, "no devices (adb server at %s)\n", addr)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERIAL\tSTATE\tMODEL\tANDROID\tCONNECTION")
	for _, d := range devs {
		android := "-"
		if d.Android != "" {
			android = d.Android + " (SDK " + strconv.Itoa(d.SDK) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Serial, d.State, dash(d.Model), android, dash(d.Connection))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
