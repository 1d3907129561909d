package sim_test

import (
	"reflect"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/policies"
	"github.com/lessim/lessim/sim"
)

// TestFormatEfficiency charges each part of a pass at its format's
// efficiency (Device.FormatEfficiency), by hand on tinyModel (bandwidth
// 50 GB/s, memory.efficiency 0.5): an expert is 1 MiB of Q8_0, 41,944 ns
// at 25 GB/s and 83,887 ns at Q8_0's 0.25 (12.5 GB/s); a layer's dense
// part, 4 MiB of which 1 MiB is stated F32 at 0.125, goes from 167,773 ns
// to ceil((3 MiB + 4 × 1 MiB) / 25 GB/s) = 293,602 ns; the Q6_K head
// keeps 0.5 when the table does not name Q6_K. A table stating every type
// at memory.efficiency gives the result of none.
func TestFormatEfficiency(t *testing.T) {
	m := tinyModel()
	steps := randomSteps(m, 40, 3)
	for l := range m.Layers {
		m.Layers[l].DenseTypes = []devices.TypeBytes{{Type: "F32", Bytes: mib}}
	}
	m.HeadType = "Q6_K"
	cache := int64(len(m.Layers) * m.Experts * mib) // everything fits: the same loads either way
	config := func() sim.Config { c := baseConfig(cache); c.Model = m; return c }
	base := run(t, config(), steps, "lru", policies.DefaultParams(m))

	same := config()
	d := *same.Device
	d.FormatEfficiency = map[devices.QuantType]float64{"Q8_0": 0.5, "F32": 0.5, "MXFP4": 0.5}
	same.Device = &d
	if got := run(t, same, steps, "lru", policies.DefaultParams(m)); !reflect.DeepEqual(got, base) {
		t.Errorf("a table at memory.efficiency changed the result: time %d, want %d", got.TimeNS, base.TimeNS)
	}

	on := config()
	d2 := *on.Device
	d2.FormatEfficiency = map[devices.QuantType]float64{"Q8_0": 0.25, "F32": 0.125}
	on.Device = &d2
	got := run(t, on, steps, "lru", policies.DefaultParams(m))
	uses := int64(len(steps) * len(m.Layers) * m.TopK) // one token per pass: each use is one expert part
	passes := int64(len(steps) * len(m.Layers))
	want := base.ComputeNS + uses*(83887-41944) + passes*(293602-167773)
	if got.ComputeNS != want {
		t.Errorf("compute %d ns, want %d + %d uses × %d + %d layer passes × %d = %d", got.ComputeNS, base.ComputeNS, uses, 83887-41944, passes, 293602-167773, want)
	}
	if got.Misses != base.Misses || got.FlashBytes != base.FlashBytes {
		t.Errorf("loads changed: %d misses, %d bytes; want %d, %d", got.Misses, got.FlashBytes, base.Misses, base.FlashBytes)
	}
}
