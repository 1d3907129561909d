//go:build linux

package calibrate

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lessim/lessim/devices"
)

// measured starts a source: "measured by lessim calibrate on <host> at <time>: ".
func (r *Result) measured() string {
	return fmt.Sprintf("measured by lessim calibrate on %s at %s: ", r.Options.Host, r.Options.Now.Format(time.RFC3339))
}

// one is the source of a single reading.
func one(value string) string { return "1 sample, median " + value + ", IQR 0" }

// profile renders the device profile and checks that devices accepts it.
func (r *Result) profile() ([]byte, error) {
	pw := &profileWriter{m: r.measured()}
	r.header(pw)
	r.memory(pw)
	r.compute(pw)
	r.flash(pw)
	data := pw.b.Bytes()
	if _, err := devices.ParseProfile(data, r.Options.Out); err != nil {
		return nil, fmt.Errorf("calibrate: the measured profile does not validate (nothing written):\n%w", err)
	}
	return data, nil
}

// profileWriter accumulates a profile's YAML; m starts every measured
// value's source.
type profileWriter struct {
	b bytes.Buffer
	m string
}

// w writes formatted text.
func (pw *profileWriter) w(format string, a ...any) { fmt.Fprintf(&pw.b, format, a...) }

// kv writes one value with its source at indent.
func (pw *profileWriter) kv(indent, key, value, source string) {
	pw.w("%s%s:\n%s  value: %s\n%s  source: %s\n", indent, key, indent, value, indent, strconv.Quote(source))
}

// header writes the comment block (the host, the load it ran under, the
// compute fit's points) and the profile's name, description and calibration.
func (r *Result) header(pw *profileWriter) {
	o, c, w, q := r.Options, r.Compute, pw.w, strconv.Quote
	u := c.Points[0]
	w("# This machine (%s), measured by lessim calibrate at %s on %s\n", o.Host, o.Now.Format(time.RFC3339), filepath.Base(o.Model))
	w("# (llama.cpp CPU decode, %d thread; flash = the model's file system, random O_DIRECT reads).\n", c.Threads)
	w("# Load average %.1f at the start, %.1f at the end, on %d CPUs", r.Load0, r.Load1, r.CPUs)
	if max(r.Load0, r.Load1) > float64(r.CPUs) {
		w(": other work shared the CPUs, so the timings are inflated; calibrate again on a quiet machine")
	}
	w(".\n#\n")
	w("# Compute fit: time per token = layer_overhead × layers + bytes per token ÷ (bandwidth × efficiency)\n")
	w("#   %-34s %6s %6s %14s %12s\n", "shape", "layers", "top-k", "bytes/token", "ms/token")
	for _, p := range c.Points {
		w("#   %-34s %6d %6d %14.0f %12.3f\n", p.Name, p.Layers, p.TopK, p.Bytes, p.TokenNS.Median/1e6)
	}
	if len(c.Formats) > 0 {
		w("# Per-format decode (memory.format_efficiency; every matrix in the format, the fit's overhead and rate for the rest):\n")
	}
	for _, f := range c.Formats {
		switch eff := f.BytesPerSec / r.BandwidthPeak; {
		case f.Why != "":
			w("# Format %s: not measured: %s.\n", f.Type, f.Why)
		case eff < 0.01:
			w("# Format %s: efficiency %.4f is below the profile bounds' 0.01: left out.\n", f.Type, eff)
		default:
			w("#   %-34s %6d %6d %14.0f %12.3f\n", f.Point.Name, f.Point.Layers, f.Point.TopK, f.Point.Bytes, f.Point.TokenNS.Median/1e6)
		}
	}
	w("# On %s: one expert %s of compute (%.0f bytes), one layer's dense part %s plus %s overhead.\n",
		filepath.Base(o.Model), us(u.ExpertBytes/c.BytesPerSec*1e9), u.ExpertBytes, us(u.DenseBytes/c.BytesPerSec*1e9), us(c.LayerOverheadNS))
	w("name: %s\n", q("calibrated-"+o.Host))
	w("description: %s\n", q(fmt.Sprintf("This machine (%s) as lessim calibrate measured it: 1-thread llama.cpp CPU decode, flash = the file system of %s", o.Host, filepath.Base(o.Model))))
	w("calibration: %s\n", q("Measured here by `lessim calibrate --model "+filepath.Base(o.Model)+"`; run it again after changing the machine, the model's file system or its read-ahead. Values marked assumed: could not be measured."))
}

// memory writes the memory section: RAM, reserve, bandwidth, efficiency.
func (r *Result) memory(pw *profileWriter) {
	o, c, m, kv := r.Options, r.Compute, pw.m, pw.kv
	u := c.Points[0]
	pw.w("memory:\n")
	ram := r.Mem.Total
	kv("  ", "ram", size(ram/(1<<20)*(1<<20)), m+one(size(ram/(1<<20)*(1<<20)))+" (MemTotal in /proc/meminfo)")
	res := ram - r.Mem.Available
	kv("  ", "reserve", size(res/(1<<20)*(1<<20)), m+one(size(res/(1<<20)*(1<<20)))+" (MemTotal − MemAvailable in /proc/meminfo: RAM the kernel and other processes held during calibration)")
	bw := r.BandwidthPeak
	kv("  ", "bandwidth", gbps(bw), m+r.Bandwidth.describe(gbps)+fmt.Sprintf(", best %s, the value"+
		" (streaming 64-bit loads over a %s buffer by one goroutine per CPU in Go; the best sample, as noise from other processes only lowers it: a lower bound of the DRAM peak)", gbps(bw), size(o.MemBytes)))
	eff := min(c.BytesPerSec/bw, 1)
	effSrc := m + fmt.Sprintf("decode byte rate %s (fit over %d model shapes, 1 thread, everything in RAM; this model %s per token) ÷ the bandwidth above",
		gbps(c.BytesPerSec), len(c.Points), u.TokenNS.describe(ms))
	if c.BytesPerSec > bw {
		effSrc += "; the rate exceeded the bandwidth (weights in CPU caches), so the efficiency is capped at 1 and the simulator will be slower than this machine"
	}
	kv("  ", "efficiency", fmt.Sprintf("%.3f", eff), effSrc)
	r.formatEfficiency(pw)
}

// formatEfficiency writes memory.format_efficiency: each timed format's
// byte rate ÷ the bandwidth, capped at 1; a format without a rate, or
// whose efficiency falls below the profile bounds' 0.01, is left out (the
// header says why).
func (r *Result) formatEfficiency(pw *profileWriter) {
	c, bw := r.Compute, r.BandwidthPeak
	started := false
	for _, f := range c.Formats {
		eff := min(f.BytesPerSec/bw, 1)
		if f.Why != "" || eff < 0.01 {
			continue
		}
		if !started {
			pw.w("  format_efficiency:\n")
			started = true
		}
		p := f.Point
		src := pw.m + fmt.Sprintf("decode of a synthetic variant of the model's shape with every matrix in %s (%d layers, top-%d, 1 thread, everything in RAM) %s per token: its %.0f %s bytes per token ÷ (that time − %d × layer_overhead %s − its other %.0f bytes at the fit's %s) = %s, ÷ the bandwidth above",
			f.Type, p.Layers, p.TopK, p.TokenNS.describe(ms), p.TypeBytes[f.Type], f.Type, p.Layers, us(c.LayerOverheadNS), p.Bytes-p.TypeBytes[f.Type], gbps(c.BytesPerSec), gbps(f.BytesPerSec))
		if f.BytesPerSec > bw {
			src += "; the rate exceeded the bandwidth, so the efficiency is capped at 1"
		}
		pw.kv("    ", string(f.Type), fmt.Sprintf("%.3f", eff), src)
	}
}

// compute writes the compute section: FLOPs, layer overhead, load cost.
func (r *Result) compute(pw *profileWriter) {
	c, m, kv := r.Compute, pw.m, pw.kv
	u := c.Points[0]
	pw.w("compute:\n")
	var batch []string
	for _, n := range batchSizes {
		if s, ok := u.BatchNS[n]; ok {
			rel := ""
			if n > 1 && u.TokenNS.Median > 0 {
				rel = fmt.Sprintf(" (%.2f× one token; %d one-token passes %.0f×)", s.Median/u.TokenNS.Median, n, float64(n))
			}
			batch = append(batch, fmt.Sprintf("%d: %s%s", n, s.describe(ms), rel))
		}
	}
	kv("  ", "flops", gflops(c.FLOPS), m+fmt.Sprintf("%.0f FLOPs per token ÷ %s, the time one more token adds to a pass (least-squares slope of pass time against tokens per pass, every row an output as in a speculative verify pass, at most one token's time less the layers' overhead; by tokens: %s)",
		u.ModelFLOPsTok, ms(c.BatchSlopeNS), strings.Join(batch, "; ")))
	if len(c.PassScale) > 0 {
		pw.w("  pass_scale:\n")
		for _, n := range slices.Sorted(maps.Keys(c.PassScale)) {
			kv("    ", strconv.Quote(strconv.Itoa(n)), fmt.Sprintf("%.3f", c.PassScale[n]), m+fmt.Sprintf("a pass of %d tokens, %s, less %d layers × %s of overhead, ÷ (%d × %s per token): what the pass cost beyond (or short of) flops' line",
				n, u.BatchNS[n].describe(ms), u.Layers, us(c.LayerOverheadNS), n, ms(c.BatchSlopeNS)))
		}
	}
	if c.OverheadFitted {
		var shapes []string
		for _, p := range c.Points {
			shapes = append(shapes, fmt.Sprintf("%s (%d layers, top-%d) %s per token", p.Name, p.Layers, p.TopK, p.TokenNS.describe(ms)))
		}
		how := "the per-layer term of the least-squares fit"
		if c.Clamped {
			how = "the per-layer term of the least-squares fit, held at 0 because it came out negative (per-layer cost not separable from bytes at this noise)"
		}
		v, live := r.liveLayerOverhead()
		kv("  ", "layer_overhead", us(v), m+fmt.Sprintf("%s over %d model shapes (this model and synthetic variants with fewer layers and experts), %s: %s%s",
			how, len(c.Points), us(c.LayerOverheadNS), strings.Join(shapes, "; "), live))
	} else {
		kv("  ", "layer_overhead", "0 us", "assumed: not separable from the byte rate here ("+c.Why+"); the decode time is all charged to bytes")
	}
	if d := c.Draft; d != nil {
		kv("  ", "draft_token", us(d.TokenNS.Median), m+fmt.Sprintf("one-token greedy decode of the draft model %s (1 thread, everything in RAM): %s, as the model drafter runs each draft (live --drafter model)",
			d.Name, d.TokenNS.describe(ms)))
		kv("  ", "draft_bytes", fmt.Sprintf("%d B", d.Bytes), m+fmt.Sprintf("the weight bytes per token of %s, every tensor but the token embedding (as live states the model drafter's cost): the drafter draft_token was measured on", d.Name))
	}
	loadCost(r, kv, m)
	r.cores(kv, m)
}

// liveLayerOverhead is compute.layer_overhead for lessim's live engine,
// which validate compares against: the fitted per-layer overhead of plain
// decode plus what the live engine adds to each layer of a token with
// every expert resident (its hooks on every layer: the live runs' per-token
// compute with no loads, the intercept of LiveLoad, minus plain decode's
// time on the same model, over its layers; none when that comes out
// negative), and the text that says so for the source ("" without live
// runs).
func (r *Result) liveLayerOverhead() (float64, string) {
	c, ll := r.Compute, r.LiveLoad
	if ll == nil {
		return c.LayerOverheadNS, ""
	}
	u := c.Points[0]
	extra := (ll.InterceptNS - u.TokenNS.Median) / float64(u.Layers)
	if extra <= 0 {
		return c.LayerOverheadNS, fmt.Sprintf("; lessim's live engine added nothing measurable per layer (its per-token compute with no loads, %s, is not above this decode's %s)", ms(ll.InterceptNS), ms(u.TokenNS.Median))
	}
	return c.LayerOverheadNS + extra, fmt.Sprintf("; plus %s per layer that lessim's live engine (which validate compares against) adds to a decode token with every expert resident: its per-token compute with no loads %s (the intercept of compute.load_fixed's fit) minus this decode's %s, over %d layers",
		us(extra), ms(ll.InterceptNS), ms(u.TokenNS.Median), u.Layers)
}

// flash writes the flash section: lanes, latency, the single-lane and
// aggregate curves, page size, read-ahead and fault cost.
func (r *Result) flash(pw *profileWriter) {
	o, m, kv := r.Options, pw.m, pw.kv
	pw.w("flash:\n")
	big := o.Sizes[len(o.Sizes)-1]
	var byLanes []string
	for _, l := range o.Lanes {
		p, _ := r.Point(big, l)
		byLanes = append(byLanes, fmt.Sprintf("%d lanes %s", l, p.Throughput.describe(mibps)))
	}
	kv("  ", "lanes", strconv.Itoa(r.KneeLanes), m+fmt.Sprintf("the fewest lanes within 5%% of the best throughput at %s reads: %s",
		size(big), strings.Join(byLanes, "; ")))
	r.latency(pw)
	curve := func(key string, lanes int) {
		pw.w("  %s:\n", key)
		for _, s := range o.Sizes {
			p, _ := r.Point(s, lanes)
			pw.w("    - read: %s\n      lanes: %d\n      bandwidth: %s\n      source: %s\n", size(s), lanes, mibps(p.Throughput.Median),
				strconv.Quote(m+p.Throughput.describe(mibps)+fmt.Sprintf(" (%d random O_DIRECT reads per lane per sample; time per read %s)", o.Reads, p.PerRead.describe(us))))
		}
	}
	curve("single_lane", 1)
	curve("aggregate", o.Lanes[len(o.Lanes)-1])
	kv("  ", "page_size", size(r.PageBytes), m+one(size(r.PageBytes))+" (getpagesize)")
	kv("  ", "read_ahead", size(r.ReadAhead.Bytes), m+one(size(r.ReadAhead.Bytes))+" ("+r.ReadAhead.File+")")
	r.readCost(kv, m)
	kv("  ", "fault_cost", us(r.Fault.Median), m+r.Fault.describe(us)+fmt.Sprintf(" (thread CPU time per minor fault touching every page of a MADV_RANDOM mapping of the model whose pages are cached, %.1f pages mapped per fault; I/O excluded)", r.PagesPerFault))
}

// latency writes flash.latency: the fitted intercept, or 1 us assumed when
// only one read size was measured.
func (r *Result) latency(pw *profileWriter) {
	if !r.LatencyOK {
		pw.kv("  ", "latency", "1 us", "assumed: one read size measured, so latency and transfer time cannot be told apart; held at the profile bounds' smallest latency")
		return
	}
	var bySize []string
	for _, s := range r.Options.Sizes {
		p, _ := r.Point(s, 1)
		bySize = append(bySize, fmt.Sprintf("%s %s", size(s), p.PerRead.describe(us)))
	}
	note := ""
	if r.LatencyHeld {
		note = " (it came out below 1 us, the profile bounds' smallest latency, at this noise: held at 1 us)"
	}
	pw.kv("  ", "latency", us(r.LatencyNS), pw.m+fmt.Sprintf("intercept of 1-lane time per read against read size (least squares through the medians)%s, capped below every point's time per read; time per read %s", note,
		strings.Join(bySize, "; ")))
}

// loadCost writes compute.load_fixed: with live runs (LiveLoad), what one
// load adds to the compute thread of lessim's live engine, which loads on
// I/O lanes and evicts on its own goroutine; the pread CPU cost measured on a
// single thread goes in the source (the lanes pay it, not the compute
// thread). compute.load_rate is left out: one model's experts all have one
// size, so a cost per byte cannot be told from a cost per load. A slope
// outside the profile's bounds (negative: loads did not slow compute at this
// noise) is held at the nearest bound and says so.
func loadCost(r *Result, kv func(indent, key, value, source string), m string) {
	pread := fmt.Sprintf("pread of an expert from a cold page cache costs %s + %.3f ns/byte of CPU on the thread that reads (least squares over %d reads of 64 KiB to 4 MiB, R² %.2f): the live engine's I/O lanes pay it",
		us(r.Load.FixedNS), r.Load.PerByteNS, r.Load.N, r.Load.R2)
	ll := r.LiveLoad
	if ll == nil {
		kv("  ", "load_fixed", "0 us", "assumed: no live runs measured the compute thread's cost of a load; "+pread)
		return
	}
	v, held := ll.PerLoadNS, ""
	switch {
	case v < 0:
		v, held = 0, " (the slope came out negative: loads did not measurably slow the compute thread; held at 0)"
	case v > 10e6:
		v, held = 10e6, " (above the profile's 10 ms bound; held there)"
	}
	kv("  ", "load_fixed", us(v), m+fmt.Sprintf("compute time (wall − stall) that one expert load adds to a decode token in lessim's live engine (loads on I/O lanes, evictions off the compute thread): least-squares slope %s ± %s (standard error) over %d tokens of %s; R² %.2f; intercept %s per token with no loads%s. Not load_rate: one model's experts have one size, so per byte and per load cannot be told apart. For reference, %s",
		us(ll.PerLoadNS), us(ll.PerLoadSE), ll.N, strings.Join(ll.Runs, " and "), ll.R2, ms(ll.InterceptNS), held, pread))
}
