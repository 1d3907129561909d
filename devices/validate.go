package devices

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// field is one scalar quantity of a profile with its dotted path and kind;
// its plausible range is the Bound of the same path.
type field struct {
	path     string
	kind     Kind
	q        *Quantity
	optional bool // absent means "not stated" (zero in the Device)
}

// fields lists the profile's scalar quantities in schema order.
func (p *Profile) fields() []field {
	m, c, f := &p.Memory, &p.Compute, &p.Flash
	return []field{
		{"memory.ram", Size, &m.RAM, false},
		{"memory.reserve", Size, &m.Reserve, false},
		{"memory.bandwidth", Rate, &m.Bandwidth, false},
		{"memory.efficiency", Dimensionless, &m.Efficiency, false},
		{"memory.app_limit", Size, &m.AppLimit, true},
		{"memory.runtime", Size, &m.Runtime, true},
		{"memory.growth", Size, &m.Growth, true},
		{"compute.flops", Throughput, &c.FLOPS, false},
		{"compute.layer_overhead", Duration, &c.LayerOverhead, false},
		{"compute.load_fixed", Duration, &c.LoadFixed, true},
		{"compute.load_rate", Rate, &c.LoadRate, true},
		{"compute.threads", Dimensionless, &c.Threads, true},
		{"compute.gpu_sync", Duration, &c.GPUSync, true},
		{"compute.cores", Dimensionless, &c.Cores, true},
		{"compute.background", Dimensionless, &c.Background, true},
		{"compute.parallel", Dimensionless, &c.Parallel, true},
		{"compute.predict_cost", Duration, &c.PredictCost, true},
		{"compute.thread_overhead", Duration, &c.ThreadOverhead, true},
		{"compute.draft_token", Duration, &c.DraftToken, true},
		{"compute.draft_bytes", Size, &c.DraftBytes, true},
		{"flash.lanes", Dimensionless, &f.Lanes, false},
		{"flash.latency", Duration, &f.Latency, false},
		{"flash.page_size", Size, &f.PageSize, false},
		{"flash.read_ahead", Size, &f.ReadAhead, false},
		{"flash.fault_cost", Duration, &f.FaultCost, false},
		{"flash.read_ahead_async", Size, &f.ReadAheadAsync, true},
		{"flash.thermal_floor", Dimensionless, &f.ThermalFloor, true},
		{"flash.thermal_bytes", Size, &f.ThermalBytes, true},
		{"flash.read_cpu", Duration, &f.ReadCPU, true},
		{"flash.copy_rate", Rate, &f.CopyRate, true},
	}
}

// problems collects "path: reason" messages.
type problems []string

func (ps *problems) add(path, format string, args ...any) {
	*ps = append(*ps, path+": "+fmt.Sprintf(format, args...))
}

// checkSource reports a missing or empty source.
func (ps *problems) checkSource(path, src string) {
	s := strings.TrimSpace(src)
	switch {
	case s == "":
		ps.add(path, "missing source (cite where the number comes from, or write %q and why)", AssumedPrefix)
	case IsAssumed(s) && strings.TrimSpace(strings.TrimPrefix(s, AssumedPrefix)) == "":
		ps.add(path, "source %q gives no reason for the assumption", s)
	}
}

// Validate checks the whole profile and returns one error listing every
// problem, one per line, each as "file: field.path: reason": missing values or
// sources, unknown keys, unit errors, out-of-range values, and malformed curves.
func (p *Profile) Validate() error {
	_, ps := p.resolve()
	if len(ps) == 0 {
		return nil
	}
	name := p.file
	if name == "" {
		name = p.Name
	}
	errs := make([]error, len(ps))
	for i, s := range ps {
		errs[i] = errors.New(name + ": " + s)
	}
	return errors.Join(errs...)
}

// Device resolves the profile into SI numbers. It fails with Validate's error
// when the profile is invalid.
func (p *Profile) Device() (*Device, error) {
	d, ps := p.resolve()
	if len(ps) > 0 {
		return nil, p.Validate()
	}
	return d, nil
}

// Warnings lists what validation accepted but found suspicious, each as
// "field.path: reason", the same as the resolved Device.Warnings; nil when
// there is nothing to say or the profile is invalid (Validate says why).
func (p *Profile) Warnings() []string {
	d, ps := p.resolve()
	if len(ps) > 0 {
		return nil
	}
	return d.Warnings
}

// resolve parses every quantity, checks ranges and builds the Device; it
// returns every problem found. The Device is meaningful only without problems.
func (p *Profile) resolve() (*Device, problems) {
	var ps problems
	ps = append(ps, p.problems...)
	if strings.TrimSpace(p.Name) == "" {
		ps.add("name", "missing")
	}
	d := &Device{Name: p.Name}
	vals := map[string]float64{}
	for _, f := range p.fields() {
		if f.optional && !f.q.set {
			continue
		}
		v, ok := ps.quantity(f)
		if f.kind == Size || f.kind == Duration {
			v = math.Round(v) // whole bytes and nanoseconds
		}
		if ok {
			if msg := bound(f.path).check(v, f.q.Value); msg != "" {
				ps.add(f.path, "%s", msg)
			} else {
				vals[f.path] = v
			}
		}
		if f.q.set && IsAssumed(f.q.Source) {
			d.Assumed = append(d.Assumed, f.path)
		}
	}
	ram, okR := vals["memory.ram"]
	res, okS := vals["memory.reserve"]
	if okR && okS && ram > 0 && res >= ram {
		ps.add("memory.reserve", "must be less than memory.ram (got %s >= %s)", p.Memory.Reserve.Value, p.Memory.RAM.Value)
	}

	if lim, ok := vals["memory.app_limit"]; ok && okR && lim > ram {
		ps.add("memory.app_limit", "must be at most memory.ram (got %s > %s)", p.Memory.AppLimit.Value, p.Memory.RAM.Value)
	}
	// NB: by value, not by presence: a runtime of 0 counts nothing against
	// a limit (and a resolved Device cannot tell it from an unstated one).
	if rt := vals["memory.runtime"]; rt > 0 && !p.Memory.AppLimit.set {
		ps.add("memory.runtime", "counts against memory.app_limit: give memory.app_limit too (or neither)")
	}

	d.RAMBytes = int64(math.Round(vals["memory.ram"]))
	d.AppLimitBytes = int64(vals["memory.app_limit"])
	d.RuntimeBytes = int64(vals["memory.runtime"])
	d.GrowthBytes = int64(vals["memory.growth"])
	if p.Memory.Growth.set && !p.Memory.AppLimit.set {
		ps.add("memory.growth", "grows the footprint against memory.app_limit: give memory.app_limit too (or neither)")
	}
	d.ReserveBytes = int64(math.Round(vals["memory.reserve"]))
	d.MemBandwidth = vals["memory.bandwidth"]
	d.MemEfficiency = vals["memory.efficiency"]
	d.FormatEfficiency = ps.formatEfficiency(p, &d.Assumed)
	d.ComputeFLOPS = vals["compute.flops"]
	d.PassScaleByTokens = ps.passScale(p, &d.Assumed)
	d.LayerOverhead = int64(math.Round(vals["compute.layer_overhead"]))
	d.LoadFixedNS = int64(math.Round(vals["compute.load_fixed"]))
	d.LoadRate = vals["compute.load_rate"]
	d.Flash.Lanes = int(vals["flash.lanes"])
	d.Flash.LatencyNS = int64(math.Round(vals["flash.latency"]))
	d.Flash.PageBytes = int64(math.Round(vals["flash.page_size"]))
	d.Flash.ReadAheadBytes = int64(math.Round(vals["flash.read_ahead"]))
	d.Flash.FaultNS = int64(math.Round(vals["flash.fault_cost"]))
	d.ComputeThreads = int(vals["compute.threads"])
	d.GPUSyncNS = int64(math.Round(vals["compute.gpu_sync"]))
	d.Cores = int(vals["compute.cores"])
	d.Background = vals["compute.background"]
	if p.Compute.Background.set && !p.Compute.Cores.set {
		ps.add("compute.background", "shares compute.cores: give compute.cores too (or neither)")
	}
	d.Parallel = vals["compute.parallel"]
	d.PredictNS = int64(math.Round(vals["compute.predict_cost"]))
	d.ThreadOverheadNS = int64(math.Round(vals["compute.thread_overhead"]))
	d.DraftTokenNS = int64(math.Round(vals["compute.draft_token"]))
	d.DraftBytes = int64(math.Round(vals["compute.draft_bytes"]))
	if p.Compute.DraftToken.set != p.Compute.DraftBytes.set {
		ps.add("compute.draft_token", "give compute.draft_token and compute.draft_bytes together (or neither): the time is the draft model's of those bytes")
	}
	d.Flash.ReadCPUNS = int64(math.Round(vals["flash.read_cpu"]))
	d.Flash.CopyRate = vals["flash.copy_rate"]
	d.Flash.ReadAheadAsyncBytes = int64(math.Round(vals["flash.read_ahead_async"]))
	d.Backend = ps.backend(p, &d.Assumed)
	d.Flash.ThermalFloor = vals["flash.thermal_floor"]
	d.Flash.ThermalBytes = int64(vals["flash.thermal_bytes"])
	if p.Flash.ThermalFloor.set != p.Flash.ThermalBytes.set {
		ps.add("flash.thermal_floor", "give flash.thermal_floor and flash.thermal_bytes together (or neither)")
	}

	lat, okLat := vals["flash.latency"]
	if !okLat {
		lat = -1 // unknown: parse the curves but skip the conversion
	}
	single, assumedS := ps.curve("flash.single_lane", p.Flash.SingleLane, true, lat, &d.Warnings)
	agg, assumedA := ps.curve("flash.aggregate", p.Flash.Aggregate, false, lat, &d.Warnings)
	if assumedS {
		d.Assumed = append(d.Assumed, "flash.single_lane")
	}
	if assumedA {
		d.Assumed = append(d.Assumed, "flash.aggregate")
	}
	d.Flash.SingleLane = single
	d.Flash.Aggregate = agg
	return d, ps
}

// backend checks the optional backend (cpu or gpu, sourced) and
// compute.gpu_sync, which a gpu backend needs and a cpu one refuses. It
// returns the backend as the Device holds it ("" for cpu).
func (ps *problems) backend(p *Profile, assumed *[]string) string {
	b, sync := &p.Backend, p.Compute.GPUSync.set
	v := ""
	if b.set {
		for _, u := range b.unknown {
			ps.add("backend", "unknown field %s", u)
		}
		if b.shape != "" {
			ps.add("backend", "%s", b.shape)
			return ""
		}
		ps.checkSource("backend", b.Source)
		switch strings.TrimSpace(b.Value) {
		case BackendCPU:
		case BackendGPU:
			v = BackendGPU
		default:
			ps.add("backend", "%q is not a backend (valid: %s, %s)", b.Value, BackendCPU, BackendGPU)
			return ""
		}
		if IsAssumed(b.Source) {
			*assumed = append(*assumed, "backend")
		}
	}
	switch {
	case v == BackendGPU && !sync:
		ps.add("compute.gpu_sync", "missing: backend gpu needs the cost of one host-device synchronisation (want {value: ..., source: ...})")
	case v != BackendGPU && sync:
		ps.add("compute.gpu_sync", "applies only with backend gpu (the CPU backend has no host-device synchronisation)")
	}
	return v
}

// quantity checks one scalar quantity and parses it.
func (ps *problems) quantity(f field) (float64, bool) {
	q := f.q
	if !q.set {
		ps.add(f.path, "missing (want {value: ..., source: ...})")
		return 0, false
	}
	for _, u := range q.unknown {
		ps.add(f.path, "unknown field %s", u)
	}
	if q.shape != "" {
		ps.add(f.path, "%s", q.shape)
		return 0, false
	}
	ps.checkSource(f.path, q.Source)
	if strings.TrimSpace(q.Value) == "" {
		ps.add(f.path, "missing value")
		return 0, false
	}
	v, err := ParseQuantity(q.Value, f.kind)
	if err != nil {
		ps.add(f.path, "%v", err)
		return 0, false
	}
	return v, true
}

// curve checks and parses one curve: non-empty, every point parsed, within
// its bounds and sourced, read sizes strictly increasing, single-lane points
// measured at one lane. With a known latency (>= 0) it converts each measured
// point into a transfer rate: n reads of size S in flight took T = n·S/measured
// each, of which the latency is spent before the transfer, so the transfers
// ran at n·S/(T − latency) in total; that rate must lie within its bound too.
// Throughput that falls as reads grow is accepted with a warning, appended to
// warn. It reports whether any point is assumed. The returned curve is nil
// when any point failed.
func (ps *problems) curve(path string, pts []CurveSample, singleLane bool, latencyNS float64, warn *[]string) ([]CurvePoint, bool) {
	if len(pts) == 0 {
		ps.add(path, "empty: want at least one {read: <size>, bandwidth: <rate>, source: ...} point")
		return nil, false
	}
	out := make([]CurvePoint, 0, len(pts))
	assumed, bad := false, false
	var prev CurveSample // the previous parsed point as written
	prevBW := 0.0        // and its measured throughput
	var idx []int        // index in pts of each point in out
	for i, c := range pts {
		pp := fmt.Sprintf("%s[%d]", path, i)
		for _, u := range c.unknown {
			ps.add(pp, "unknown field %s", u)
		}
		if c.shape != "" {
			ps.add(pp, "%s", c.shape)
			bad = true
			continue
		}
		ps.checkSource(pp, c.Source)
		assumed = assumed || IsAssumed(c.Source)
		size, okS := ps.curveValue(pp+".read", c.Read, Size, "flash.*[].read")
		bw, okB := ps.curveValue(pp+".bandwidth", c.Bandwidth, Rate, "flash.*[].bandwidth")
		lanes, okL := 1.0, true
		if strings.TrimSpace(c.Lanes) != "" {
			lanes, okL = ps.curveValue(pp+".lanes", c.Lanes, Dimensionless, "flash.*[].lanes")
			if okL && singleLane && lanes != 1 {
				ps.add(pp+".lanes", "must be 1 on the single-lane curve (got %s)", c.Lanes)
				okL = false
			}
		}
		if !okS || !okB || !okL {
			bad = true
			continue
		}
		read := int64(size) // whole: curveValue rounds sizes
		if j := slices.IndexFunc(out, func(o CurvePoint) bool { return o.ReadBytes == read }); j >= 0 {
			ps.add(pp+".read", "duplicate read size %s (same as point %d)", c.Read, idx[j])
			bad = true
			continue
		} else if n := len(out); n > 0 && read < out[n-1].ReadBytes {
			ps.add(pp+".read", "not sorted: %s after %s (read sizes must increase)", c.Read, prev.Read)
			bad = true
		} else if n > 0 && bw < prevBW {
			*warn = append(*warn, fmt.Sprintf("%s: throughput falls as reads grow (%s at %s after %s at %s); accepted, but check the point: larger reads are normally at least as fast",
				pp, c.Bandwidth, c.Read, prev.Bandwidth, prev.Read))
		}
		rate := bw
		if latencyNS >= 0 {
			perRead := lanes * float64(read) / bw * 1e9 // ns
			if perRead <= latencyNS {
				ps.add(pp, "%d × %s at %s is %.0f ns per read, not more than flash.latency (%.0f ns): lower the latency or check the point",
					int(lanes), c.Read, c.Bandwidth, perRead, latencyNS)
				bad = true
			} else {
				rate = lanes * float64(read) / ((perRead - latencyNS) / 1e9)
				if msg := bound(transferRateField).check(rate, fmt.Sprintf("%.4g B/s", rate)); msg != "" {
					ps.add(pp, "transfer rate after removing flash.latency: %s", msg)
					bad = true
				}
			}
		}
		idx = append(idx, i)
		out = append(out, CurvePoint{ReadBytes: read, BytesPerSec: rate})
		prev, prevBW = c, bw
	}
	if bad {
		return nil, assumed
	}
	return out, assumed
}

// curveValue parses one curve field, which must be present and within the
// bound named by field; sizes are rounded to whole bytes first.
func (ps *problems) curveValue(path, s string, k Kind, field string) (float64, bool) {
	if strings.TrimSpace(s) == "" {
		ps.add(path, "missing")
		return 0, false
	}
	v, err := ParseQuantity(s, k)
	if err != nil {
		ps.add(path, "%v", err)
		return 0, false
	}
	if k == Size {
		v = math.Round(v)
	}
	if msg := bound(field).check(v, s); msg != "" {
		ps.add(path, "%s", msg)
		return 0, false
	}
	return v, true
}
