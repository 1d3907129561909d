//go:build linux

package calibrate

import (
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/devices"
)

// measuredResult is a calibration's measurements as Run would gather them,
// with round values: two read sizes at 1 and 4 lanes, a fitted compute
// line over two shapes, and live runs for the load cost.
func measuredResult() *Result {
	o := Options{Model: "/models/m.gguf", Out: "host.yaml", Lanes: []int{1, 4}, Sizes: []int64{128 << 10, 1 << 20},
		Samples: 3, Reads: 16, MemBytes: 256 << 20, Host: "box", Now: time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)}
	sum := func(v float64) Summary { return Summary{N: 3, Median: v, Q1: 0.9 * v, Q3: 1.1 * v} }
	r := &Result{Options: o, LatencyNS: 80e3, LatencyOK: true, KneeLanes: 4, PageBytes: 4096,
		ReadAhead: ReadAhead{Bytes: 128 << 10, File: "/sys/block/vda/queue/read_ahead_kb"},
		Mem:       MemInfo{Total: 8 << 30, Available: 6 << 30}, Bandwidth: sum(10e9), BandwidthPeak: 11e9,
		Fault: sum(2e3), PagesPerFault: 16, Load: LoadCPU{FixedNS: 5e3, PerByteNS: 0.1, N: 12, R2: 0.9},
		LiveLoad: &LiveLoad{PerLoadNS: 20e3, PerLoadSE: 2e3, InterceptNS: 50e6, N: 64, R2: 0.8, Runs: []string{"lru at 1 GiB", "les at 1 GiB"}},
		Load0:    0.5, Load1: 0.7, CPUs: 2}
	for _, s := range o.Sizes {
		for _, l := range o.Lanes {
			bw := float64(l) * 500e6 * float64(s) / float64(1<<20)
			r.Flash = append(r.Flash, FlashPoint{ReadBytes: s, Lanes: l, Throughput: sum(bw), PerRead: sum(r.LatencyNS + float64(s)/bw*1e9)})
		}
	}
	pt := func(name string, layers int, bytes float64) ShapePoint {
		return ShapePoint{Name: name, Layers: layers, TopK: 8, Bytes: bytes, FLOPs: 2 * bytes, TokenNS: sum(bytes / 5e9 * 1e9),
			DenseBytes: 30e6, ExpertBytes: 1.7e6, ExpertFLOPs: 6e6, ModelFLOPsTok: 6e9,
			BatchNS: map[int]Summary{1: sum(100e6), 2: sum(120e6), 4: sum(160e6), 8: sum(240e6)}}
	}
	r.Compute = &Compute{Points: []ShapePoint{pt("m.gguf", 40, 1.8e9), pt("m.gguf-20L", 20, 0.9e9)},
		BytesPerSec: 5e9, LayerOverheadNS: 40e3, OverheadFitted: true, FLOPS: 3e11, BatchSlopeNS: 20e6, Threads: 1}
	return r
}

// TestProfileRenders renders a calibration's profile and reads it back as
// lessim reads any profile: every measured value arrives, with a source.
func TestProfileRenders(t *testing.T) {
	r := measuredResult()
	y, err := r.profile()
	if err != nil {
		t.Fatal(err)
	}
	p, err := devices.ParseProfile(y, "host.yaml")
	if err != nil {
		t.Fatalf("the rendered profile does not parse: %v\n%s", err, y)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "calibrated-box" || d.RAMBytes != 8<<30 || d.Flash.Lanes != 4 || d.Flash.LatencyNS != 80e3 {
		t.Errorf("device %q: ram %d, lanes %d, latency %d ns; want calibrated-box, 8 GiB, 4, 80000", d.Name, d.RAMBytes, d.Flash.Lanes, d.Flash.LatencyNS)
	}
	text := string(y)
	for _, want := range []string{
		"measured by lessim calibrate on box at 2026-12-03T18:00:00Z: ",
		"least-squares slope 20.0 us",                 // load_fixed from the live runs
		"the per-layer term of the least-squares fit", // layer_overhead fitted
		"(MemTotal in /proc/meminfo)",
		"at 1 MiB reads: 1 lanes 3 samples",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("profile lacks %q:\n%s", want, y)
		}
	}
	if strings.Contains(text, `source: "assumed:`) {
		t.Errorf("every value was measured, yet the profile assumes one:\n%s", y)
	}
	r.Compute.OverheadFitted, r.Compute.Why, r.LiveLoad, r.LatencyOK = false, "one shape", nil, false
	y, err = r.profile()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(y), `source: "assumed:`); n != 3 {
		t.Errorf("layer overhead, load cost and latency unmeasured: %d values assumed, want 3:\n%s", n, y)
	}
}

// TestProfileFormats: each timed format's rate ÷ the bandwidth becomes its
// memory.format_efficiency (capped at 1); a format without a rate, or below
// the bounds' 0.01, is left out.
func TestProfileFormats(t *testing.T) {
	r := measuredResult()
	pt := r.Compute.Points[1]
	pt.TypeBytes = map[devices.QuantType]float64{"Q4_K": 0.8e9}
	r.Compute.Formats = []FormatPoint{
		{Type: "Q4_K", Point: pt, BytesPerSec: 5.5e9}, // 0.5 of the 11 GB/s peak
		{Type: "MXFP4", Point: pt, BytesPerSec: 22e9}, // capped at 1
		{Type: "Q3_K", Why: "the shape cannot hold its blocks"},
		{Type: "Q8_0", Point: pt, BytesPerSec: 11e6}, // 0.001: below the bounds
	}
	y, err := r.profile()
	if err != nil {
		t.Fatal(err)
	}
	p, err := devices.ParseProfile(y, "host.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	want := map[devices.QuantType]float64{"Q4_K": 0.5, "MXFP4": 1}
	if len(d.FormatEfficiency) != len(want) || d.FormatEfficiency["Q4_K"] != 0.5 || d.FormatEfficiency["MXFP4"] != 1 {
		t.Errorf("format efficiency %v, want %v", d.FormatEfficiency, want)
	}
}

// TestLiveLayerOverhead: with live runs, compute.layer_overhead is the
// plain fit's plus what the live engine adds per layer: (its per-token
// compute with no loads − plain decode) ÷ layers; none when negative.
func TestLiveLayerOverhead(t *testing.T) {
	r := measuredResult()
	u := r.Compute.Points[0] // 40 layers, 360 ms per token; fit overhead 40 us
	for _, tc := range []struct {
		intercept float64
		want      int64
	}{{u.TokenNS.Median + 40*10e3, 50e3}, {u.TokenNS.Median - 1e6, 40e3}} {
		r.LiveLoad.InterceptNS = tc.intercept
		y, err := r.profile()
		if err != nil {
			t.Fatal(err)
		}
		p, err := devices.ParseProfile(y, "host.yaml")
		if err != nil {
			t.Fatal(err)
		}
		d, err := p.Device()
		if err != nil {
			t.Fatal(err)
		}
		if d.LayerOverhead != tc.want {
			t.Errorf("intercept %.0f ns: layer overhead %d ns, want %d", tc.intercept, d.LayerOverhead, tc.want)
		}
	}
}
