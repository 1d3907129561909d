package devices

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// field is one scalar quantity of a profile with its dotted path and kind.
type field struct {
	path string
	kind Kind
	q    *Quantity
	ok   func(float64) bool // range check
	want string             // the range, for the message
}

var (
	positive = func(v float64) bool { return v > 0 }
	nonNeg   = func(v float64) bool { return v >= 0 }
	fraction = func(v float64) bool { return v > 0 && v <= 1 }
	atLeast1 = func(v float64) bool { return v >= 1 }
)

// fields lists the profile's scalar quantities in schema order.
func (p *Profile) fields() []field {
	m, c, f := &p.Memory, &p.Compute, &p.Flash
	return []field{
		{"memory.ram", Size, &m.RAM, positive, "> 0"},
		{"memory.reserve", Size, &m.Reserve, nonNeg, ">= 0"},
		{"memory.bandwidth", Rate, &m.Bandwidth, positive, "> 0"},
		{"memory.efficiency", Dimensionless, &m.Efficiency, fraction, "in (0,1]"},
		{"compute.flops", Throughput, &c.FLOPS, positive, "> 0"},
		{"compute.layer_overhead", Duration, &c.LayerOverhead, nonNeg, ">= 0"},
		{"flash.lanes", Dimensionless, &f.Lanes, atLeast1, ">= 1"},
		{"flash.latency", Duration, &f.Latency, nonNeg, ">= 0"},
		{"flash.page_size", Size, &f.PageSize, positive, "> 0"},
		{"flash.read_ahead", Size, &f.ReadAhead, nonNeg, ">= 0"},
		{"flash.fault_cost", Duration, &f.FaultCost, nonNeg, ">= 0"},
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
		v, ok := ps.quantity(f)
		if f.kind == Size || f.kind == Duration {
			v = math.Round(v) // whole bytes and nanoseconds
		}
		switch {
		case !ok:
		case math.Abs(v) > 1<<62:
			ps.add(f.path, "out of range (got %s)", f.q.Value)
		case !f.ok(v):
			ps.add(f.path, "must be %s (got %s)", f.want, f.q.Value)
		case f.path == "flash.lanes" && (v != math.Trunc(v) || v > 1<<20):
			ps.add(f.path, "must be a whole number <= 1048576 (got %s)", f.q.Value)
		default:
			vals[f.path] = v
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

	d.RAMBytes = int64(math.Round(vals["memory.ram"]))
	d.ReserveBytes = int64(math.Round(vals["memory.reserve"]))
	d.MemBandwidth = vals["memory.bandwidth"]
	d.MemEfficiency = vals["memory.efficiency"]
	d.ComputeFLOPS = vals["compute.flops"]
	d.LayerOverhead = int64(math.Round(vals["compute.layer_overhead"]))
	d.Flash.Lanes = int(vals["flash.lanes"])
	d.Flash.LatencyNS = int64(math.Round(vals["flash.latency"]))
	d.Flash.PageBytes = int64(math.Round(vals["flash.page_size"]))
	d.Flash.ReadAheadBytes = int64(math.Round(vals["flash.read_ahead"]))
	d.Flash.FaultNS = int64(math.Round(vals["flash.fault_cost"]))

	lat, okLat := vals["flash.latency"]
	if !okLat {
		lat = -1 // unknown: parse the curves but skip the conversion
	}
	single, assumedS := ps.curve("flash.single_lane", p.Flash.SingleLane, true, lat)
	agg, assumedA := ps.curve("flash.aggregate", p.Flash.Aggregate, false, lat)
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

// curve checks and parses one curve: non-empty, every point parsed, positive
// and sourced, read sizes strictly increasing, single-lane points measured at
// one lane. With a known latency (>= 0) it converts each measured point into
// a transfer rate: n reads of size S in flight took T = n·S/measured each,
// of which the latency is spent before the transfer, so the transfers ran at
// n·S/(T − latency) in total. It reports whether any point is assumed. The
// returned curve is nil when any point failed.
func (ps *problems) curve(path string, pts []CurveSample, singleLane bool, latencyNS float64) ([]CurvePoint, bool) {
	if len(pts) == 0 {
		ps.add(path, "empty: want at least one {read: <size>, bandwidth: <rate>, source: ...} point")
		return nil, false
	}
	out := make([]CurvePoint, 0, len(pts))
	assumed, bad := false, false
	prev := ""    // the previous parsed point's read size as written
	var idx []int // index in pts of each point in out
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
		size, okS := ps.curveValue(pp+".read", c.Read, Size)
		bw, okB := ps.curveValue(pp+".bandwidth", c.Bandwidth, Rate)
		lanes, okL := 1.0, true
		if strings.TrimSpace(c.Lanes) != "" {
			lanes, okL = ps.curveValue(pp+".lanes", c.Lanes, Dimensionless)
			if okL && (lanes != math.Trunc(lanes) || lanes > 1<<20) {
				ps.add(pp+".lanes", "must be a whole number (got %s)", c.Lanes)
				okL = false
			}
			if okL && singleLane && lanes != 1 {
				ps.add(pp+".lanes", "must be 1 on the single-lane curve (got %s)", c.Lanes)
				okL = false
			}
		}
		if !okS || !okB || !okL {
			bad = true
			continue
		}
		read := int64(math.Round(size))
		if j := slices.IndexFunc(out, func(o CurvePoint) bool { return o.ReadBytes == read }); j >= 0 {
			ps.add(pp+".read", "duplicate read size %s (same as point %d)", c.Read, idx[j])
			bad = true
			continue
		} else if n := len(out); n > 0 && read < out[n-1].ReadBytes {
			ps.add(pp+".read", "not sorted: %s after %s (read sizes must increase)", c.Read, prev)
			bad = true
		}
		rate := bw
		if latencyNS >= 0 {
			perRead := lanes * float64(read) / bw * 1e9 // ns
			if perRead <= latencyNS {
				ps.add(pp, "%d × %s at %s is %.0f ns per read, not more than flash.latency (%.0f ns): lower the latency or check the point",
					int(lanes), c.Read, c.Bandwidth, perRead, latencyNS)
				bad = true
			}
			rate = lanes * float64(read) / ((perRead - latencyNS) / 1e9)
		}
		idx = append(idx, i)
		out = append(out, CurvePoint{ReadBytes: read, BytesPerSec: rate})
		prev = c.Read
	}
	if bad {
		return nil, assumed
	}
	return out, assumed
}

// curveValue parses one curve field, which must be present and positive.
func (ps *problems) curveValue(path, s string, k Kind) (float64, bool) {
	if strings.TrimSpace(s) == "" {
		ps.add(path, "missing")
		return 0, false
	}
	v, err := ParseQuantity(s, k)
	if err != nil {
		ps.add(path, "%v", err)
		return 0, false
	}
	if v <= 0 || k == Size && math.Round(v) <= 0 {
		ps.add(path, "must be > 0 (got %s)", s)
		return 0, false
	}
	return v, true
}
