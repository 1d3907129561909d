//go:build linux

package calibrate

import (
	"math"
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

// rendered renders r's profile and reads it back as lessim reads any
// profile.
func rendered(t *testing.T, r *Result) ([]byte, *devices.Device) {
	t.Helper()
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
	return y, d
}

// TestProfileRenders renders a calibration's profile and reads it back as
// lessim reads any profile: every measured value arrives, with a source.
func TestProfileRenders(t *testing.T) {
	r := measuredResult()
	y, d := rendered(t, r)
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
	y, _ = rendered(t, r)
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
	_, d := rendered(t, r)
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
		_, d := rendered(t, r)
		if d.LayerOverhead != tc.want {
			t.Errorf("intercept %.0f ns: layer overhead %d ns, want %d", tc.intercept, d.LayerOverhead, tc.want)
		}
	}
}

// TestPassScaleFit: passes that grow faster than one token's time past the
// layers' overhead give compute.flops from that time and a pass scale per
// token count, (pass − overhead) ÷ (tokens × one token's), computed here by
// hand from an exact shape fit (0.5 ms per layer, 5 GB/s); passes on a line
// less steep give its slope, and each pass its ratio to the line's
// tokens × slope (no intercept: the simulator charges none).
func TestPassScaleFit(t *testing.T) {
	one := 264e6 / 5e9 * 1e9 // ns past the 16 layers' 8 ms
	pt := func(layers int, bytes float64, batch map[int]float64) ShapePoint {
		p := ShapePoint{Name: "m", Layers: layers, TopK: 8, Bytes: bytes, ModelFLOPsTok: 1e9,
			TokenNS: Summary{N: 3, Median: 0.5e6*float64(layers) + bytes/5e9*1e9}, BatchNS: map[int]Summary{}}
		for n, v := range batch {
			p.BatchNS[n] = Summary{N: 3, Median: v}
		}
		return p
	}
	want := map[int]float64{2: 1.1, 4: 1.3, 8: 1.25}
	batch := map[int]float64{1: 8e6 + one}
	for n, s := range want {
		batch[n] = 8e6 + float64(n)*one*s
	}
	c := &Compute{Points: []ShapePoint{pt(16, 264e6, batch), pt(2, 10e6, nil)}}
	if err := c.fit(""); err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if !near(c.LayerOverheadNS, 0.5e6) || !near(c.FLOPS, 1e9/(one/1e9)) || len(c.PassScale) != 3 {
		t.Fatalf("overhead %v ns, flops %v, scale %v", c.LayerOverheadNS, c.FLOPS, c.PassScale)
	}
	for n, s := range want {
		if !near(c.PassScale[n], s) {
			t.Errorf("pass scale at %d tokens %v, want %v", n, c.PassScale[n], s)
		}
	}
	r := measuredResult()
	r.Compute = c
	_, d := rendered(t, r)
	if d.PassScale(4) != 1.3 || !near(d.PassScale(3), 1.2) {
		t.Errorf("the profile's pass scale at 4 and 3 tokens: %v, %v", d.PassScale(4), d.PassScale(3))
	}
	slow := map[int]float64{1: 8e6 + one, 2: 8e6 + 1.5*one, 4: 8e6 + 2.5*one, 8: 8e6 + 4.5*one}
	c = &Compute{Points: []ShapePoint{pt(16, 264e6, slow), pt(2, 10e6, nil)}}
	if err := c.fit(""); err != nil {
		t.Fatal(err)
	}
	if !near(c.BatchSlopeNS, one/2) || !near(c.PassScale[2], 1.5) || !near(c.PassScale[4], 1.25) || !near(c.PassScale[8], 1.125) {
		t.Errorf("passes on a line of slope %v ns: slope %v ns, scale %v, want 1.5, 1.25, 1.125 (each pass ÷ tokens × slope)", one/2, c.BatchSlopeNS, c.PassScale)
	}
}

// TestDraftProfile: a timed draft model gives compute.draft_token (its
// median) and compute.draft_bytes, read back as the device's.
func TestDraftProfile(t *testing.T) {
	r := measuredResult()
	r.Compute.Draft = &DraftPoint{Name: "d.gguf", Bytes: 200 << 20, TokenNS: Summary{N: 8, Median: 6.25e6, Q1: 6e6, Q3: 6.5e6}}
	_, d := rendered(t, r)
	if d.DraftTokenNS != 6.25e6 || d.DraftBytes != 200<<20 {
		t.Errorf("draft token %d ns, %d bytes; want 6250000 ns, %d bytes", d.DraftTokenNS, d.DraftBytes, 200<<20)
	}
	r.Compute.Draft = nil
	if _, d := rendered(t, r); d.DraftTokenNS != 0 || d.DraftBytes != 0 {
		t.Errorf("no draft model: %d ns, %d bytes", d.DraftTokenNS, d.DraftBytes)
	}
}

// TestThreadOverheadProfile: compute.thread_overhead is the live engine's
// no-load compute at 2 threads less what 1 thread's predicts with
// compute.parallel, per layer, by hand: 40 layers at 40 us (the intercept,
// 50 ms, is below the decode's, so the live layer overhead is the fit's),
// 1.6 ms + 48.4 ms × (0.1 + 0.45) = 28.22 ms predicted; 108.22 ms measured
// is 2 ms per layer more.
func TestThreadOverheadProfile(t *testing.T) {
	r := measuredResult()
	sum := Summary{N: 3, Median: 1e6, Q1: 1e6, Q3: 1e6}
	r.Cores = &Cores{T1: sum, T2: sum, Parallel: 0.9, Predict: sum, Hidden: 8, Experts: 4}
	r.LiveLoad.Threads2NS, r.LiveLoad.Threads2Run = 108.22e6, "ondemand at cache 100%, 2 thread(s)"
	if _, d := rendered(t, r); d.ThreadOverheadNS != 2e6 {
		t.Errorf("thread overhead %d ns, want 2,000,000", d.ThreadOverheadNS)
	}
	r.LiveLoad.Threads2NS = 20e6 // below the prediction: 0
	if _, d := rendered(t, r); d.ThreadOverheadNS != 0 {
		t.Errorf("thread overhead %d ns, want 0", d.ThreadOverheadNS)
	}
}
