//go:build llamacpp

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/runtime/calibrate"
)

// calibrateHost measures this machine into a device profile at out.
func calibrateHost(cmd *cobra.Command, h *hostFlags, outPath string) error {
	o := calibrate.DefaultOptions()
	o.Model, o.Out = h.model, outPath
	o.Samples, o.Reads, o.Tokens = h.samples, h.reads, h.tokens
	lanes, sizes, quiet := h.lanes, h.sizes, h.quiet

	var err error
	if o.Lanes, err = parseInts(lanes); err != nil {
		return fmt.Errorf("--lanes: %w", err)
	}
	if o.Sizes, err = parseSizes(sizes); err != nil {
		return fmt.Errorf("--sizes: %w", err)
	}
	if !quiet {
		o.Log = cmd.ErrOrStderr()
	}
	ctx, stop := atomicfile.NotifyContext(cmd.Context())
	defer stop()
	r, err := calibrate.Run(ctx, o)
	if err != nil {
		return err
	}
	p, err := devices.ParseProfile(r.YAML, o.Out)
	if err != nil {
		return err
	}
	d, err := p.Device()
	if err != nil {
		return err
	}
	u := r.Compute.Points[0]
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "wrote %s: device %s\n", o.Out, d.Name)
	big, most := o.Sizes[len(o.Sizes)-1], o.Lanes[len(o.Lanes)-1]
	one, _ := r.Point(big, 1)
	all, _ := r.Point(big, most)
	fmt.Fprintf(out, "flash: %s reads %s at 1 lane, %s at %d lanes; latency %.0f us; lanes %d\n",
		strings.TrimSpace(sizeText(big)), mib(one.Throughput.Median), mib(all.Throughput.Median), most, float64(d.Flash.LatencyNS)/1e3, d.Flash.Lanes)
	fmt.Fprintf(out, "memory: %.2f GB/s × efficiency %.3f; compute %.2f GFLOPS, %.1f us per layer\n",
		d.MemBandwidth/1e9, d.MemEfficiency, d.ComputeFLOPS/1e9, float64(d.LayerOverhead)/1e3)
	fmt.Fprintf(out, "decode (all in RAM, 1 thread): %.2f ms/token on %s\n", u.TokenNS.Median/1e6, u.Name)
	if ll := r.LiveLoad; ll != nil {
		fmt.Fprintf(out, "live engine: one expert load adds %.0f ± %.0f us to the compute thread (compute.load_fixed %.0f us); %.2f ms/token with no loads\n",
			ll.PerLoadNS/1e3, ll.PerLoadSE/1e3, float64(d.LoadFixedNS)/1e3, ll.InterceptNS/1e6)
	}
	if len(d.Assumed) > 0 {
		fmt.Fprintf(out, "assumed (not measured): %s\n", strings.Join(d.Assumed, ", "))
	}
	return nil
}

func sizeText(b int64) string {
	if b >= 1<<20 && b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

func mib(bps float64) string { return fmt.Sprintf("%.0f MiB/s", bps/(1<<20)) }
