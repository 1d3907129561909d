package devices

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// deviceNumber is one number of a resolved Device: its JSON path, its value
// (and as written, for messages) and the Bound (by profile field) it must
// satisfy.
type deviceNumber struct {
	path, bound string
	v           float64
	text        string
	optional    bool // zero means "not stated", as Profile.Device writes it
}

// integer and number make a deviceNumber of an integer or a float64 field.
func integer(path, bound string, v int64, optional bool) deviceNumber {
	return deviceNumber{path, bound, float64(v), strconv.FormatInt(v, 10), optional}
}

func number(path, bound string, v float64, optional bool) deviceNumber {
	return deviceNumber{path, bound, v, strconv.FormatFloat(v, 'g', -1, 64), optional}
}

// numbers lists d's scalar numbers in the order of Profile.fields.
func (d *Device) numbers() []deviceNumber {
	f := &d.Flash
	return []deviceNumber{
		integer("ram_bytes", "memory.ram", d.RAMBytes, false),
		integer("reserve_bytes", "memory.reserve", d.ReserveBytes, false),
		number("mem_bandwidth", "memory.bandwidth", d.MemBandwidth, false),
		number("mem_efficiency", "memory.efficiency", d.MemEfficiency, false),
		integer("app_limit_bytes", "memory.app_limit", d.AppLimitBytes, true),
		integer("runtime_bytes", "memory.runtime", d.RuntimeBytes, true),
		integer("growth_bytes", "memory.growth", d.GrowthBytes, true),
		number("compute_flops", "compute.flops", d.ComputeFLOPS, false),
		integer("layer_overhead_ns", "compute.layer_overhead", d.LayerOverhead, false),
		integer("load_fixed_ns", "compute.load_fixed", d.LoadFixedNS, true),
		number("load_rate", "compute.load_rate", d.LoadRate, true),
		integer("compute_threads", "compute.threads", int64(d.ComputeThreads), true),
		integer("gpu_sync_ns", "compute.gpu_sync", d.GPUSyncNS, true),
		integer("cores", "compute.cores", int64(d.Cores), true),
		number("background", "compute.background", d.Background, true),
		number("parallel", "compute.parallel", d.Parallel, true),
		integer("predict_ns", "compute.predict_cost", d.PredictNS, true),
		integer("thread_overhead_ns", "compute.thread_overhead", d.ThreadOverheadNS, true),
		integer("draft_token_ns", "compute.draft_token", d.DraftTokenNS, true),
		integer("draft_bytes", "compute.draft_bytes", d.DraftBytes, true),
		integer("flash.lanes", "flash.lanes", int64(f.Lanes), false),
		integer("flash.latency_ns", "flash.latency", f.LatencyNS, false),
		integer("flash.page_bytes", "flash.page_size", f.PageBytes, false),
		integer("flash.read_ahead_bytes", "flash.read_ahead", f.ReadAheadBytes, false),
		integer("flash.fault_ns", "flash.fault_cost", f.FaultNS, false),
		integer("flash.read_ahead_async_bytes", "flash.read_ahead_async", f.ReadAheadAsyncBytes, true),
		number("flash.thermal_floor", "flash.thermal_floor", f.ThermalFloor, true),
		integer("flash.thermal_bytes", "flash.thermal_bytes", f.ThermalBytes, true),
		integer("flash.read_cpu_ns", "flash.read_cpu", f.ReadCPUNS, true),
		number("flash.copy_rate", "flash.copy_rate", f.CopyRate, true),
	}
}

// Check reports every problem with a resolved device against the same
// bounds (Bounds) and cross-field rules a profile file must pass, each as
// "json.path: reason" with the path of Device's JSON (flash.latency_ns).
// It is for a Device that did not come from Profile.Device, such as the
// inline profile of an experiment spec; a device Profile.Device returned
// passes. An optional number is zero when not stated, as Profile.Device
// writes it.
func (d *Device) Check() []error {
	var ps problems
	if d.Name == "" {
		ps.add("name", "missing")
	}
	for _, n := range d.numbers() {
		if n.optional && n.v == 0 {
			continue
		}
		b := bound(n.bound)
		if msg := b.check(n.v, withUnit(n.text, b.Kind)); msg != "" {
			ps.add(n.path, "%s", msg)
		}
	}
	d.checkRelations(&ps)
	d.checkFormatEfficiency(&ps)
	d.checkPassScale(&ps)
	checkAssumed(&ps, d.Assumed)
	d.Flash.checkCurve(&ps, "flash.single_lane", d.Flash.SingleLane)
	d.Flash.checkCurve(&ps, "flash.aggregate", d.Flash.Aggregate)
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = fmt.Errorf("%s", p)
	}
	return errs
}

// assumedNames lists the names Device.Assumed may hold, in profile order:
// the profile's dotted field names (as Profile.Device writes them and the
// assumed-values warning prints them), the backend and the flash curves.
func assumedNames() []string {
	var names []string
	for _, f := range (&Profile{}).fields() {
		names = append(names, f.path)
	}
	return append(names, "backend", "flash.single_lane", "flash.aggregate")
}

// checkAssumed refuses a name in assumed that is no profile field: a
// warning naming it would point at nothing to measure.
func checkAssumed(ps *problems, assumed []string) {
	valid := assumedNames()
	for i, a := range assumed {
		if !slices.Contains(valid, a) && !isFormatEfficiencyName(a) && !isPassScaleName(a) {
			ps.add(fmt.Sprintf("assumed[%d]", i), "unknown field %q (valid: %s)", a, strings.Join(valid, ", "))
		}
	}
}

// checkRelations checks the rules between numbers that Profile.Device
// enforces besides their ranges.
func (d *Device) checkRelations(ps *problems) {
	if d.ReserveBytes >= d.RAMBytes {
		ps.add("reserve_bytes", "must be less than ram_bytes (got %d >= %d)", d.ReserveBytes, d.RAMBytes)
	}
	if d.AppLimitBytes > d.RAMBytes {
		ps.add("app_limit_bytes", "must be at most ram_bytes (got %d > %d)", d.AppLimitBytes, d.RAMBytes)
	}
	if d.RuntimeBytes != 0 && d.AppLimitBytes == 0 {
		ps.add("runtime_bytes", "counts against app_limit_bytes: give app_limit_bytes too (or neither)")
	}
	if d.GrowthBytes != 0 && d.AppLimitBytes == 0 {
		ps.add("growth_bytes", "grows the footprint against app_limit_bytes: give app_limit_bytes too (or neither)")
	}
	if d.Background != 0 && d.Cores == 0 {
		ps.add("background", "shares cores: give cores too (or neither)")
	}
	switch d.Backend {
	case "":
		if d.GPUSyncNS != 0 {
			ps.add("gpu_sync_ns", "applies only with backend %s (the CPU backend has no host-device synchronisation)", BackendGPU)
		}
	case BackendGPU:
		if d.GPUSyncNS == 0 {
			ps.add("gpu_sync_ns", "missing: backend %s needs the cost of one host-device synchronisation", BackendGPU)
		}
	default:
		ps.add("backend", "%q is not a backend of a resolved profile (valid: %s, or omit it for %s)", d.Backend, BackendGPU, BackendCPU)
	}
	if f := &d.Flash; (f.ThermalFloor == 0) != (f.ThermalBytes == 0) {
		ps.add("flash.thermal_floor", "give flash.thermal_floor and flash.thermal_bytes together (or neither)")
	}
	if (d.DraftTokenNS == 0) != (d.DraftBytes == 0) {
		ps.add("draft_token_ns", "give draft_token_ns and draft_bytes together (or neither): the time is the draft model's of those bytes")
	}
}

// checkCurve checks one resolved curve: non-empty, read sizes within their
// bound and strictly increasing, each rate a transfer rate within its bound
// (Profile.Device has removed the latency from the measured throughput).
func (f *Flash) checkCurve(ps *problems, path string, c []CurvePoint) {
	if len(c) == 0 {
		ps.add(path, "empty: want at least one {read_bytes, bytes_per_sec} point")
	}
	read, rate := bound("flash.*[].read"), bound(transferRateField)
	for i, p := range c {
		pp := fmt.Sprintf("%s[%d]", path, i)
		if msg := read.check(float64(p.ReadBytes), withUnit(strconv.FormatInt(p.ReadBytes, 10), Size)); msg != "" {
			ps.add(pp+".read_bytes", "%s", msg)
		} else if i > 0 && p.ReadBytes <= c[i-1].ReadBytes {
			ps.add(pp+".read_bytes", "read sizes must increase (got %d after %d)", p.ReadBytes, c[i-1].ReadBytes)
		}
		if msg := rate.check(p.BytesPerSec, withUnit(strconv.FormatFloat(p.BytesPerSec, 'g', -1, 64), Rate)); msg != "" {
			ps.add(pp+".bytes_per_sec", "%s", msg)
		}
	}
}

// withUnit adds k's base unit to a number in SI base units, as a message
// shows it.
func withUnit(s string, k Kind) string {
	if k == Dimensionless {
		return s
	}
	return s + " " + k.units()[0].name
}
