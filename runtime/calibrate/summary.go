//go:build linux

package calibrate

import (
	"fmt"
	"io"

	"github.com/lessim/lessim/devices"
)

// WriteSummary writes what calibrate prints of r and the device d of its
// profile: the largest read size's median throughput at 1 lane and at the
// most lanes, memory and compute, the model's decode time all in RAM and,
// when measured, the live engine's cost of a load.
func (r *Result) WriteSummary(w io.Writer, d *devices.Device) {
	big, most := r.Options.Sizes[len(r.Options.Sizes)-1], r.Options.Lanes[len(r.Options.Lanes)-1]
	one, _ := r.Point(big, 1)
	all, _ := r.Point(big, most)
	size := fmt.Sprintf("%d KiB", big>>10)
	if big >= 1<<20 && big%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", big>>20)
	}
	fmt.Fprintf(w, "flash: %s reads %.0f MiB/s at 1 lane, %.0f MiB/s at %d lanes; latency %.0f us; lanes %d\n",
		size, one.Throughput.Median/(1<<20), all.Throughput.Median/(1<<20), most, float64(d.Flash.LatencyNS)/1e3, d.Flash.Lanes)
	fmt.Fprintf(w, "memory: %.2f GB/s × efficiency %.3f; compute %.2f GFLOPS, %.1f us per layer\n",
		d.MemBandwidth/1e9, d.MemEfficiency, d.ComputeFLOPS/1e9, float64(d.LayerOverhead)/1e3)
	u := r.Compute.Points[0]
	fmt.Fprintf(w, "decode (all in RAM, 1 thread): %.2f ms/token on %s\n", u.TokenNS.Median/1e6, u.Name)
	if ll := r.LiveLoad; ll != nil {
		fmt.Fprintf(w, "live engine: one expert load adds %.0f ± %.0f us to the compute thread (compute.load_fixed %.0f us); %.2f ms/token with no loads\n",
			ll.PerLoadNS/1e3, ll.PerLoadSE/1e3, float64(d.LoadFixedNS)/1e3, ll.InterceptNS/1e6)
	}
}
