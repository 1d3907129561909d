package devices

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lessim/lessim/internal/errgolden"
)

// boundsProfile is a valid profile whose every value can be replaced: the
// keys of over name the fields (scalar paths such as "memory.ram", or
// "single.read", "agg.lanes" ... for the first point of each curve). Its
// values leave room for any one field to sit at either end of its range:
// curves slow enough that every point outlasts the longest latency.
func boundsProfile(over map[string]string) []byte {
	v := map[string]string{
		"memory.ram": "16 GiB", "memory.reserve": "4 GiB", "memory.bandwidth": "60 GB/s", "memory.efficiency": "0.7",
		"memory.app_limit": "12 GiB", "memory.runtime": "200 MiB", "memory.growth": "1 MiB",
		"compute.flops": "1 TFLOPS", "pass.2": "1.1", "compute.layer_overhead": "20 us", "compute.load_fixed": "10 us", "compute.load_rate": "8 GB/s",
		"compute.threads": "4", "compute.gpu_sync": "50 us", "flash.read_ahead_async": "128 KiB",
		"compute.cores": "8", "compute.background": "0.5", "compute.parallel": "0.9", "compute.predict_cost": "20 us", "compute.thread_overhead": "1 ms", "compute.draft_token": "5 ms", "compute.draft_bytes": "400 MiB", "flash.read_cpu": "10 us", "flash.copy_rate": "5 GB/s",
		"flash.lanes": "4", "flash.latency": "100 us", "flash.page_size": "16 KiB", "flash.read_ahead": "128 KiB", "flash.fault_cost": "2 us", "flash.thermal_floor": "0.7", "flash.thermal_bytes": "8 GiB",
		"single.read": "4 MiB", "single.bandwidth": "20 MB/s",
		"agg.read": "4 MiB", "agg.lanes": "8", "agg.bandwidth": "100 MB/s",
	}
	for k, x := range over {
		if _, ok := v[k]; !ok {
			panic("boundsProfile: unknown key " + k)
		}
		v[k] = x
	}
	q := func(k string) string { return fmt.Sprintf("{value: %q, source: \"assumed: test\"}", v[k]) }
	return fmt.Appendf(nil, `name: bounds
backend: {value: gpu, source: "assumed: test"}
memory:
  ram: %s
  reserve: %s
  bandwidth: %s
  efficiency: %s
  app_limit: %s
  runtime: %s
  growth: %s
compute:
  flops: %s
  layer_overhead: %s
  load_fixed: %s
  load_rate: %s
  threads: %s
  gpu_sync: %s
  cores: %s
  background: %s
  parallel: %s
  predict_cost: %s
  thread_overhead: %s
  draft_token: %s
  draft_bytes: %s
  pass_scale:
    "2": %s
flash:
  lanes: %s
  latency: %s
  single_lane:
    - {read: %q, bandwidth: %q, source: "assumed: test"}
  aggregate:
    - {read: %q, lanes: %q, bandwidth: %q, source: "assumed: test"}
  page_size: %s
  read_ahead: %s
  fault_cost: %s
  read_ahead_async: %s
  thermal_floor: %s
  thermal_bytes: %s
  read_cpu: %s
  copy_rate: %s
`, q("memory.ram"), q("memory.reserve"), q("memory.bandwidth"), q("memory.efficiency"), q("memory.app_limit"), q("memory.runtime"), q("memory.growth"),
		q("compute.flops"), q("compute.layer_overhead"), q("compute.load_fixed"), q("compute.load_rate"), q("compute.threads"), q("compute.gpu_sync"), q("compute.cores"), q("compute.background"), q("compute.parallel"), q("compute.predict_cost"), q("compute.thread_overhead"), q("compute.draft_token"), q("compute.draft_bytes"), q("pass.2"), q("flash.lanes"), q("flash.latency"),
		v["single.read"], v["single.bandwidth"], v["agg.read"], v["agg.lanes"], v["agg.bandwidth"],
		q("flash.page_size"), q("flash.read_ahead"), q("flash.fault_cost"), q("flash.read_ahead_async"), q("flash.thermal_floor"), q("flash.thermal_bytes"), q("flash.read_cpu"), q("flash.copy_rate"))
}

// baseUnit is the unit a value of kind k is written in at full precision.
func baseUnit(k Kind) string {
	return map[Kind]string{Size: " B", Rate: " B/s", Duration: " ns", Throughput: " FLOPS"}[k]
}

// outside returns values one step beyond each end of b, written in base
// units. A step is one unit (byte, ns, B/s, FLOP/s, count) where float64
// resolves it, a relative 1e-12 beyond, and 1e-9 for fractions.
func outside(b Bound) (below, above string) {
	lo, hi := b.Range()
	step := func(v float64) float64 {
		if b.Kind == Dimensionless && !b.Whole {
			return 1e-9
		}
		return max(1, math.Abs(v)*1e-12)
	}
	f := func(v float64) string {
		if b.Kind == Dimensionless && !b.Whole {
			return fmt.Sprintf("%.10g", v)
		}
		return fmt.Sprintf("%.0f", v) + baseUnit(b.Kind)
	}
	return f(lo - step(lo)), f(hi + step(hi))
}

// boundCases maps a profile bound to the boundsProfile keys it is tested
// through, and the other values it needs to be tested alone.
var boundCases = map[string]struct {
	keys  []string          // boundsProfile keys that take the value
	paths []string          // the paths the error names, one per key
	with  map[string]string // other fields set so that only this one can fail
}{
	"memory.ram":          {with: map[string]string{"memory.reserve": "0 B", "memory.app_limit": "64 MiB"}},
	"memory.reserve":      {with: map[string]string{"memory.ram": "16 TiB"}},
	"memory.app_limit":    {with: map[string]string{"memory.ram": "16 TiB"}},
	"compute.pass_scale":  {keys: []string{"pass.2"}, paths: []string{"compute.pass_scale.2"}},
	"flash.*[].read":      {keys: []string{"single.read", "agg.read"}, paths: []string{"flash.single_lane[0].read", "flash.aggregate[0].read"}, with: map[string]string{"flash.latency": "1 us"}},
	"flash.*[].lanes":     {keys: []string{"agg.lanes"}, paths: []string{"flash.aggregate[0].lanes"}, with: map[string]string{"flash.latency": "1 us"}},
	"flash.*[].bandwidth": {keys: []string{"single.bandwidth", "agg.bandwidth"}, paths: []string{"flash.single_lane[0].bandwidth", "flash.aggregate[0].bandwidth"}, with: map[string]string{"flash.latency": "1 us"}},
}

// TestProfileBounds puts every profile number at each end of its range (accepted)
// and one step beyond (refused, naming the field, the value as written, the
// range and the reason), driven by the one table of Bounds.
func TestProfileBounds(t *testing.T) {
	tested := 0
	for _, b := range Bounds() {
		if strings.HasPrefix(b.Field, "model.") || b.Field == transferRateField {
			continue
		}
		tested++
		c := boundCases[b.Field]
		if c.keys == nil {
			c.keys, c.paths = []string{b.Field}, []string{b.Field}
		}
		below, above := outside(b)
		for i, key := range c.keys {
			try := func(value string) error {
				over := map[string]string{key: value}
				for k, v := range c.with {
					over[k] = v
				}
				_, err := ParseProfile(boundsProfile(over), "bounds.yaml")
				return err
			}
			for _, v := range []string{b.Min, b.Max} {
				err := try(v)
				if b.Field == "memory.reserve" && v == b.Max {
					// The range admits 16 TiB, but reserve must also stay below RAM.
					if err == nil || !strings.Contains(err.Error(), "memory.reserve: must be less than memory.ram") || strings.Contains(err.Error(), "outside") {
						t.Errorf("%s = %s with 16 TiB RAM: %v", key, v, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s = %s (an end of its range) refused:\n%v", key, v, err)
				}
			}
			for _, v := range []string{below, above} {
				err := try(v)
				want := fmt.Sprintf("bounds.yaml: %s: %s is outside %s: %s", c.paths[i], v, b.RangeText(), b.Reason)
				if err == nil {
					t.Errorf("%s = %s (outside %s) accepted", key, v, b.RangeText())
				} else if !slices.Contains(strings.Split(err.Error(), "\n"), want) {
					t.Errorf("%s = %s: error\n%v\nlacks the line\n%s", key, v, err, want)
				}
			}
		}
	}
	if tested != 34 {
		t.Errorf("only %d profile bounds tested", tested)
	}
}

// TestBoundsTable checks the table itself: every end parses and lo <= hi,
// every row has a reason, every profile field has a row, and the shipped
// profiles and built-in models lie inside (they validate).
func TestBoundsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Bounds() {
		lo, hi := b.Range()
		if seen[b.Field] || lo > hi || len(b.Reason) < 20 || !b.Contains(lo) || !b.Contains(hi) && !b.PowerOfTwo {
			t.Errorf("bad row %+v", b)
		}
		seen[b.Field] = true
	}
	var p Profile
	for _, f := range p.fields() {
		if !seen[f.path] {
			t.Errorf("profile field %s has no bound", f.path)
		}
	}
	for _, name := range ProfileNames() {
		if _, err := LoadDevice(name); err != nil {
			t.Errorf("shipped profile: %v", err)
		}
	}
	for _, name := range ModelNames() {
		for _, v := range ModelVariants(name) {
			m, err := LookupModel(name, v)
			if err == nil {
				err = m.Validate()
			}
			if err != nil {
				t.Errorf("built-in model %s %s: %v", name, v, err)
			}
		}
	}
}

// TestPageSizePowerOfTwo: a page size inside the range but not a power of two is refused.
func TestPageSizePowerOfTwo(t *testing.T) {
	_, err := ParseProfile(boundsProfile(map[string]string{"flash.page_size": "12 KiB"}), "bounds.yaml")
	errgolden.Check(t, "flash-page_size-12-kib", err)
}

// TestLanesWhole: a lane count inside the range but with a fraction is
// refused as not whole, not as outside the range it is inside.
func TestLanesWhole(t *testing.T) {
	_, err := ParseProfile(boundsProfile(map[string]string{"flash.lanes": "4.5"}), "bounds.yaml")
	if err == nil || !strings.Contains(err.Error(), "flash.lanes: 4.5 is not a whole number (want [1, 1024] reads, whole)") || strings.Contains(err.Error(), "outside") {
		t.Errorf("4.5 lanes: %v", err)
	}
}

// TestTransferRateBound: a point barely slower than the latency implies an
// absurd transfer rate once the latency is removed; it is refused.
func TestTransferRateBound(t *testing.T) {
	// 4 MiB at 41.94 GB/s is 100.0013 us per read: 1.3 ns of transfer after a 100 us latency.
	_, err := ParseProfile(boundsProfile(map[string]string{"single.bandwidth": "41.943 GB/s"}), "bounds.yaml")
	want := "flash.single_lane[0]: transfer rate after removing flash.latency: "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is outside [1 MB/s, 1 TB/s]") {
		t.Errorf("want %q ... outside [1 MB/s, 1 TB/s], got %v", want, err)
	}
}

// TestUnitTypo is the case: "75.8 B/s" for 75.8 GB/s gave negative
// milliseconds per token; it must be refused with the field, value, range and reason.
func TestUnitTypo(t *testing.T) {
	_, err := ParseProfile(boundsProfile(map[string]string{"memory.bandwidth": "75.8 B/s"}), "typo.yaml")
	b := bound("memory.bandwidth")
	want := "typo.yaml: memory.bandwidth: 75.8 B/s is outside [1 GB/s, 10 TB/s]: " + b.Reason
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestTinyRates is the other case: absurdly small flash and compute
// rates gave results faster than the real profile (the time of one read or
// one part overflowed int64 nanoseconds and wrapped negative). Each is refused.
func TestTinyRates(t *testing.T) {
	for _, tc := range []struct{ key, value, path string }{
		{"compute.flops", "1e-6 FLOPS", "compute.flops"},
		{"compute.flops", "1 FLOPS", "compute.flops"},
		{"single.bandwidth", "1 B/s", "flash.single_lane[0].bandwidth"},
		{"agg.bandwidth", "1e-3 B/s", "flash.aggregate[0].bandwidth"},
		{"memory.efficiency", "1e-9", "memory.efficiency"},
	} {
		_, err := ParseProfile(boundsProfile(map[string]string{tc.key: tc.value}), "tiny.yaml")
		want := fmt.Sprintf("tiny.yaml: %s: %s is outside ", tc.path, tc.value)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s = %s: got %v, want %q...", tc.key, tc.value, err, want)
		}
	}
}

// TestNaNInfEverywhere writes NaN, infinities and overflowing numbers into
// every field, in each spelling YAML and the quantity syntax allow; every one
// is refused naming its field.
func TestNaNInfEverywhere(t *testing.T) {
	keys := map[string]struct {
		path string
		kind Kind
	}{
		"single.read": {"flash.single_lane[0].read", Size}, "single.bandwidth": {"flash.single_lane[0].bandwidth", Rate},
		"agg.read": {"flash.aggregate[0].read", Size}, "agg.lanes": {"flash.aggregate[0].lanes", Dimensionless},
		"agg.bandwidth": {"flash.aggregate[0].bandwidth", Rate},
	}
	var p Profile
	for _, f := range p.fields() {
		keys[f.path] = struct {
			path string
			kind Kind
		}{f.path, f.kind}
	}
	for key, k := range keys {
		unit := ""
		if k.kind != Dimensionless {
			unit = " " + k.kind.units()[0].name
		}
		for _, v := range []string{".nan", ".inf", "-.inf", ".NaN", "NaN", "nan" + unit, "Inf" + unit, "+Inf" + unit,
			"-Infinity" + unit, "1e999" + unit, "1e308" + unit + "x", "0x1p1024" + unit} {
			_, err := ParseProfile(boundsProfile(map[string]string{key: v}), "nan.yaml")
			if err == nil || !strings.Contains(err.Error(), "nan.yaml: "+k.path+": ") {
				t.Errorf("%s = %q: got %v, want an error naming %s", key, v, err, k.path)
			}
		}
	}
	// A number in range of float64 that overflows once multiplied by its unit.
	if v, err := ParseQuantity("1e300 TB/s", Rate); err == nil {
		t.Errorf("ParseQuantity(1e300 TB/s) = %v, want an error", v)
	}
}

// TestFallingCurveWarns: throughput that falls as reads grow is accepted
// with a warning naming the point; the shipped profiles have none.
func TestFallingCurveWarns(t *testing.T) {
	data := []byte(strings.Replace(string(boundsProfile(nil)),
		`    - {read: "4 MiB", lanes: "8", bandwidth: "100 MB/s", source: "assumed: test"}`,
		`    - {read: "1 MiB", lanes: "8", bandwidth: "120 MB/s", source: "assumed: test"}
    - {read: "4 MiB", lanes: "8", bandwidth: "100 MB/s", source: "assumed: test"}`, 1))
	p, err := ParseProfile(data, "falling.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"flash.aggregate[1]: throughput falls as reads grow (100 MB/s at 4 MiB after 120 MB/s at 1 MiB); accepted, but check the point: larger reads are normally at least as fast"}
	if !slices.Equal(p.Warnings(), want) || !slices.Equal(d.Warnings, want) {
		t.Errorf("Warnings() = %q, Device.Warnings = %q, want %q", p.Warnings(), d.Warnings, want)
	}
	for _, name := range ProfileNames() {
		p, _ := LoadProfile(name)
		if w := p.Warnings(); w != nil {
			t.Errorf("%s: warnings %q", name, w)
		}
	}
	var bad Profile
	if bad.Warnings() != nil {
		t.Error("an invalid profile has warnings")
	}
}

// tinySpec is a valid one-layer spec with room for any one field to sit at
// either end of its range.
func tinySpec() *ModelSpec {
	return &ModelSpec{Name: "b", Blocks: 1, Experts: 8, TopK: 2, Hidden: 64, ExpertFFN: 64,
		Layers:         []LayerSpec{{Block: 0, ExpertBytes: 1 << 20, DenseBytes: 1 << 20}},
		NonExpertBytes: 16 << 20, HeadBytes: 1 << 20, KVBytesPerToken: 1 << 10}
}

// modelSetters put one value into a tinySpec field, adjusting the others the
// value constrains (top_k <= experts, layers <= blocks, non-expert bytes >=
// dense + head) so that only the field under test can fail.
var modelSetters = map[string]func(m *ModelSpec, v int64){
	"model.blocks": func(m *ModelSpec, v int64) { m.Blocks = int(v) },
	"model.layers": func(m *ModelSpec, v int64) {
		m.Blocks, m.Layers = int(max(v, 1)), nil
		for i := range v {
			m.Layers = append(m.Layers, LayerSpec{Block: int(i), ExpertBytes: 1 << 20})
		}
	},
	"model.experts":               func(m *ModelSpec, v int64) { m.Experts, m.TopK = int(v), int(min(v, 2)) },
	"model.top_k":                 func(m *ModelSpec, v int64) { m.Experts, m.TopK = 4096, int(v) },
	"model.shared_experts":        func(m *ModelSpec, v int64) { m.SharedExperts, m.SharedFFN = int(v), 64 },
	"model.hidden":                func(m *ModelSpec, v int64) { m.Hidden = int(v) },
	"model.expert_ffn":            func(m *ModelSpec, v int64) { m.ExpertFFN = int(v) },
	"model.shared_ffn":            func(m *ModelSpec, v int64) { m.SharedFFN = int(v) },
	"model.vocab":                 func(m *ModelSpec, v int64) { m.Vocab = int(v) },
	"model.layers[].expert_bytes": func(m *ModelSpec, v int64) { m.Layers[0].ExpertBytes = v },
	"model.layers[].dense_bytes": func(m *ModelSpec, v int64) {
		m.Layers[0].DenseBytes, m.NonExpertBytes = v, 1<<40
	},
	"model.layers[].dense_flops_per_token":  func(m *ModelSpec, v int64) { m.Layers[0].DenseFLOPsPerToken = v },
	"model.layers[].expert_flops_per_token": func(m *ModelSpec, v int64) { m.Layers[0].ExpertFLOPsPerToken = v },
	"model.head_bytes":                      func(m *ModelSpec, v int64) { m.HeadBytes, m.NonExpertBytes = v, 1<<40 },
	"model.head_flops_per_token":            func(m *ModelSpec, v int64) { m.HeadFLOPsPerToken = v },
	"model.non_expert_bytes": func(m *ModelSpec, v int64) {
		m.NonExpertBytes, m.HeadBytes, m.Layers[0].DenseBytes = v, 0, 0
	},
	"model.kv_bytes_per_token": func(m *ModelSpec, v int64) { m.KVBytesPerToken = v },
	"model.layers[].kv_bytes_per_token": func(m *ModelSpec, v int64) {
		l := &m.Layers[0]
		l.KVBytesPerToken, m.KVBytesPerToken = v, 64<<20
		if v != 0 {
			l.Mixer, l.AttnFLOPsPerPosition = MixerAttention, 1
		}
	},
	"model.layers[].attn_flops_per_position": func(m *ModelSpec, v int64) {
		l := &m.Layers[0]
		if l.AttnFLOPsPerPosition = v; v != 0 {
			l.Mixer, l.KVBytesPerToken = MixerAttention, 1
		}
	},
	"model.layers[].state_bytes": func(m *ModelSpec, v int64) {
		l := &m.Layers[0]
		if l.StateBytes = v; v != 0 {
			l.Mixer = MixerRecurrent
		}
	},
	"model.layers[].state_flops_per_token": func(m *ModelSpec, v int64) {
		l := &m.Layers[0]
		if l.StateFLOPsPerToken = v; v != 0 {
			l.Mixer, l.StateBytes = MixerRecurrent, 1
		}
	},
}

// TestModelSpecBounds puts every model-spec number at each end of its range
// (accepted) and one step beyond (refused with the field, value, range and
// reason), driven by the one table of Bounds.
func TestModelSpecBounds(t *testing.T) {
	if err := tinySpec().Validate(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range Bounds() {
		if !strings.HasPrefix(b.Field, "model.") {
			continue
		}
		n++
		set, ok := modelSetters[b.Field]
		if !ok {
			t.Errorf("no setter for %s", b.Field)
			continue
		}
		path := strings.Replace(strings.TrimPrefix(b.Field, "model."), "layers[]", "layers[0]", 1)
		lo, hi := b.Range()
		for _, v := range []int64{int64(lo), int64(hi)} {
			m := tinySpec()
			set(m, v)
			if err := m.Validate(); err != nil {
				t.Errorf("%s = %d (an end of its range) refused:\n%v", b.Field, v, err)
			}
		}
		for _, v := range []int64{int64(lo) - 1, int64(hi) + 1} {
			m := tinySpec()
			set(m, v)
			text := fmt.Sprint(v)
			if b.Kind == Size {
				text += " B"
			}
			want := fmt.Sprintf("model b: %s: %s is outside %s: %s", path, text, b.RangeText(), b.Reason)
			err := m.Validate()
			if err == nil || !slices.Contains(strings.Split(err.Error(), "\n"), want) {
				t.Errorf("%s = %d: error\n%v\nlacks the line\n%s", b.Field, v, err, want)
			}
		}
	}
	if n != len(modelSetters) {
		t.Errorf("%d model bounds, %d setters", n, len(modelSetters))
	}
}

// TestModelSpecNoNaN: a model spec's numbers are integers. JSON (trace
// metadata) cannot write NaN or infinities and refuses integers out of
// range; YAML refuses .nan and .inf, but yaml.v3 decodes -.inf into an int64
// as math.MinInt64, which Validate then refuses by its bounds.
func TestModelSpecNoNaN(t *testing.T) {
	for _, doc := range []string{`{"experts": NaN}`, `{"top_k": Infinity}`, `{"layers": [{"expert_bytes": -1e999}]}`, `{"kv_bytes_per_token": 1e30}`} {
		var m ModelSpec
		if err := json.Unmarshal([]byte(doc), &m); err == nil {
			t.Errorf("JSON %s decoded into %+v", doc, m)
		}
	}
	for _, tc := range []struct{ doc, field string }{
		{"experts: .nan", "experts"}, {"top_k: .inf", "top_k"},
		{"layers: [{expert_bytes: -.inf}]", "layers[0].expert_bytes"}, {"kv_bytes_per_token: -.inf", "kv_bytes_per_token"},
	} {
		m := tinySpec()
		if err := yaml.Unmarshal([]byte(tc.doc), m); err != nil {
			continue // refused at parse time
		}
		if err := m.Validate(); err == nil || !strings.Contains(err.Error(), ": "+tc.field+": ") {
			t.Errorf("YAML %q: decoded and validated: %v", tc.doc, err)
		}
	}
}

// TestWorstCaseConversions proves that inside the bounds no single
// conversion of bytes or FLOPs into nanoseconds (sim's durationNS and flash
// transfer times: ceil(amount × 1e9 / rate)) can overflow: at the slowest
// rates and largest sizes the table allows, each stays below 2^53 ns (about
// 104 days), where float64 holds whole nanoseconds exactly, so converting to
// int64 is exact and any 1024 such times add up without overflowing int64.
// It also resolves a device at the slow extremes and asks its flash model
// for the largest expert read with every lane busy.
func TestWorstCaseConversions(t *testing.T) {
	hi := func(f string) float64 { _, h := bound(f).Range(); return h }
	lo := func(f string) float64 { l, _ := bound(f).Range(); return l }
	conv := func(amount, rate float64) float64 { return math.Ceil(amount * 1e9 / rate) }

	memRate := lo("memory.bandwidth") * lo("memory.efficiency")
	maxBytes := max(hi("model.layers[].expert_bytes"), hi("model.layers[].dense_bytes"), hi("model.head_bytes"))
	maxFLOPs := max(hi("model.layers[].dense_flops_per_token"), hi("model.layers[].expert_flops_per_token"), hi("model.head_flops_per_token"))
	// The slowest one transfer can be: the slowest curve rate shared by every lane.
	xfer := lo(transferRateField) / hi("flash.lanes")
	pages := hi("model.layers[].expert_bytes") / lo("flash.page_size")
	worst := map[string]float64{
		"memory part (largest expert, dense block or head)": conv(maxBytes, memRate),
		"compute part (largest FLOPs, one token)":           conv(maxFLOPs, lo("compute.flops")),
		"flash read (largest expert, all lanes busy)":       hi("flash.latency") + conv(hi("model.layers[].expert_bytes"), xfer),
		"page faults of the largest expert":                 pages * hi("flash.fault_cost"),
		"layer overhead":                                    hi("compute.layer_overhead"),
	}
	for name, ns := range worst {
		t.Logf("%-52s %.4g ns", name, ns)
		if !(ns > 0 && ns < 1<<53) {
			t.Errorf("%s: %.4g ns is not below 2^53", name, ns)
		}
	}
	// A hot device reads at the thermal floor's share of the curve: the one
	// conversion past 2^53 (whole, a multiple of 16 ns), still below the
	// 2^57 ns the simulator's flash clock argument takes (sim/pass.go).
	hot := hi("flash.latency") + conv(hi("model.layers[].expert_bytes"), xfer*lo("flash.thermal_floor"))
	t.Logf("%-52s %.4g ns", "flash read when hot (at the thermal floor)", hot)
	if !(hot > 1<<53 && hot < 1<<57) {
		t.Errorf("hot flash read: %.4g ns is not in (2^53, 2^57)", hot)
	}

	// The same through the device model: a profile at the slow extremes.
	p, err := ParseProfile(boundsProfile(map[string]string{
		"memory.bandwidth": bound("memory.bandwidth").Min, "memory.efficiency": bound("memory.efficiency").Min,
		"compute.flops": bound("compute.flops").Min, "flash.lanes": bound("flash.lanes").Max,
		"flash.latency": bound("flash.latency").Max, "flash.fault_cost": bound("flash.fault_cost").Max,
		"single.read": bound("flash.*[].read").Max, "single.bandwidth": bound("flash.*[].bandwidth").Min,
		"agg.read": bound("flash.*[].read").Max, "agg.lanes": bound("flash.*[].lanes").Max, "agg.bandwidth": bound("flash.*[].bandwidth").Min,
	}), "slowest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Device()
	if err != nil {
		t.Fatal(err)
	}
	for _, read := range []int64{int64(lo("flash.*[].read")), 1 << 20, int64(hi("model.layers[].expert_bytes"))} {
		for _, k := range []int{1, d.Flash.Lanes} {
			ns := d.Flash.ReadNS(read, k)
			if ns <= 0 || float64(ns) > worst["flash read (largest expert, all lanes busy)"] {
				t.Errorf("ReadNS(%d, %d) = %d on the slowest device: not in (0, %.4g]", read, k, ns, worst["flash read (largest expert, all lanes busy)"])
			}
		}
	}
}

// boundsDoc is docs/profile-bounds.md, which lists the bounds table.
const boundsDoc = "../docs/profile-bounds.md"

// boundsMarkdown renders the table of Bounds as docs/profile-bounds.md lists it.
func boundsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Field | Min | Max | Unit | Also | Why |\n|---|---|---|---|---|---|\n")
	for _, r := range Bounds() {
		also := ""
		switch {
		case r.PowerOfTwo:
			also = "power of two"
		case r.Whole:
			also = "whole"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Field, r.Min, r.Max, r.Unit, also, r.Reason)
	}
	return b.String()
}

// TestBoundsDoc checks that docs/profile-bounds.md lists exactly the bounds
// table (-rewrite regenerates the table between its markers).
func TestBoundsDoc(t *testing.T) {
	data, err := os.ReadFile(boundsDoc)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "-rewrite` -->\n", "<!-- end of bounds table -->"
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the table markers", boundsDoc)
	}
	i += len(begin)
	want := boundsMarkdown()
	if *rewrite {
		if err := os.WriteFile(boundsDoc, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := doc[i:j]; got != want {
		t.Errorf("%s's table differs from devices.Bounds() (run go test ./devices -run TestBoundsDoc -rewrite and read the diff):\n got:\n%s\nwant:\n%s", boundsDoc, got, want)
	}
}
