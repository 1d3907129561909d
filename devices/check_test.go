package devices

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// boundsDevice is boundsProfile resolved: every optional number stated, a
// gpu backend.
func boundsDevice(t *testing.T) *Device {
	t.Helper()
	p, err := ParseProfile(boundsProfile(nil), "bounds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// setJSON returns d with the number at the dotted JSON path (curve points
// as name.index.field) replaced by raw, through Device's JSON as a spec's
// inline profile arrives.
func setJSON(t *testing.T, d *Device, path, raw string) *Device {
	t.Helper()
	b, _ := json.Marshal(d)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var o any = m
	ks := strings.Split(path, ".")
	for _, k := range ks[:len(ks)-1] {
		if a, ok := o.([]any); ok {
			var i int
			fmt.Sscan(k, &i)
			o = a[i]
		} else {
			o = o.(map[string]any)[k]
		}
	}
	o.(map[string]any)[ks[len(ks)-1]] = json.RawMessage(raw)
	b, _ = json.Marshal(m)
	var out Device
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s = %s: %v", path, raw, err)
	}
	return &out
}

// TestCheckShipped: every embedded profile and a profile stating every
// optional number pass Check (what Profile.Device resolves is valid).
func TestCheckShipped(t *testing.T) {
	for _, name := range ProfileNames() {
		d, err := LoadDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		if errs := d.Check(); len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	if errs := boundsDevice(t).Check(); len(errs) > 0 {
		t.Errorf("bounds profile: %v", errs)
	}
}

// TestCheckCoversProfile: Check holds every scalar number of a profile to
// its Bound, so a resolved device cannot skip a check a file gets.
func TestCheckCoversProfile(t *testing.T) {
	var want, got []string
	for _, f := range (&Profile{}).fields() {
		want = append(want, f.path)
	}
	for _, n := range (&Device{}).numbers() {
		got = append(got, n.bound)
	}
	if !slices.Equal(want, got) {
		t.Errorf("Device.numbers bounds\n%v\nwant the profile's fields\n%v", got, want)
	}
}

// TestCheckBounds puts each number of a resolved device one step beyond
// each end of its profile bound: refused, naming the JSON path, the value
// as written and the bound's reason.
func TestCheckBounds(t *testing.T) {
	base := boundsDevice(t)
	for _, n := range base.numbers() {
		b := bound(n.bound)
		lo, hi := b.Range()
		whole := n.text == fmt.Sprint(int64(n.v))
		for _, v := range []float64{lo - step(b, lo), hi + step(b, hi)} {
			if n.optional && v == 0 {
				continue // not stated
			}
			raw := strconv.FormatFloat(v, 'g', -1, 64)
			if whole {
				raw = fmt.Sprintf("%.0f", v)
			}
			errs := setJSON(t, base, n.path, raw).Check()
			want := fmt.Sprintf("%s: %s is outside %s: %s", n.path, withUnit(raw, b.Kind), b.RangeText(), b.Reason)
			if !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == want }) {
				t.Errorf("%s = %s: errors %v lack\n%s", n.path, raw, errs, want)
			}
		}
	}
}

// step is one unit beyond a bound's end where float64 resolves it.
func step(b Bound, v float64) float64 {
	if b.Kind == Dimensionless && !b.Whole {
		return 1e-9
	}
	return max(1, math.Abs(v)*1e-12)
}

// TestCheckQA are the inline profiles a QA pass ran: each is refused with
// the field that is wrong, every problem at once.
func TestCheckQA(t *testing.T) {
	d, err := LoadDevice("iphone-17-pro-max")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, raw, want string }{
		{"flash.latency_ns", "9223372036854775807", "flash.latency_ns: 9223372036854775807 ns is outside [1 us, 100 ms]"},
		{"flash.single_lane.0.bytes_per_sec", "1e-300", "flash.single_lane[0].bytes_per_sec: 1e-300 B/s is outside"},
		{"flash.aggregate.1.read_bytes", "131072", "flash.aggregate[1].read_bytes: read sizes must increase (got 131072 after 131072)"},
		{"mem_bandwidth", "1e-300", "mem_bandwidth: 1e-300 B/s is outside"},
		{"compute_flops", "1e300", "compute_flops: 1e+300 FLOPS is outside"},
		{"gpu_sync_ns", "20000", "gpu_sync_ns: applies only with backend gpu"},
		{"backend", `"GPU"`, `backend: "GPU" is not a backend of a resolved profile (valid: gpu, or omit it for cpu)`},
		{"backend", `"gpu"`, "gpu_sync_ns: missing: backend gpu needs"},
		{"compute_threads", "100000000", "compute_threads: 100000000 is outside [1, 256] threads"},
		{"flash.read_ahead_async_bytes", "-1", "flash.read_ahead_async_bytes: -1 B is outside"},
		{"flash.page_bytes", "3", "flash.page_bytes: 3 B is outside [4 KiB, 2 MiB], a power of two"},
		{"ram_bytes", "9223372036854775807", "ram_bytes: 9223372036854775807 B is outside [256 MiB, 16 TiB]"},
		{"reserve_bytes", "12884901888", "reserve_bytes: must be less than ram_bytes"},
		{"runtime_bytes", "1048576", "runtime_bytes: counts against app_limit_bytes"},
		{"flash.thermal_floor", "0.5", "flash.thermal_floor: give flash.thermal_floor and flash.thermal_bytes together"},
		{"name", `""`, "name: missing"},
		{"assumed", `["flash.lanes", "nope"]`, `assumed[1]: unknown field "nope" (valid: memory.ram, memory.reserve, `},
		{"assumed", `["flash.latency_ns"]`, `assumed[0]: unknown field "flash.latency_ns" (valid: `},
	} {
		errs := setJSON(t, d, tc.path, tc.raw).Check()
		if !slices.ContainsFunc(errs, func(e error) bool { return strings.HasPrefix(e.Error(), tc.want) }) {
			t.Errorf("%s = %s: errors %v lack %q", tc.path, tc.raw, errs, tc.want)
		}
	}
	if errs := (&Device{}).Check(); len(errs) < 10 {
		t.Errorf("an empty device: want every problem at once, got %v", errs)
	}
}
