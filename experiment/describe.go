package experiment

import (
	"fmt"
	"strings"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

// Describe is what a run's text result says about its inputs, one
// (key, value) line each, in order: model, device, policy, cache, layout,
// trace and, when the run decodes speculatively, how.
func (o *Outcome) Describe() [][2]string {
	m, s, res := o.Model, &o.Spec, o.Result
	h := [][2]string{
		{"model", fmt.Sprintf("%s (%s, %d MoE layers × %d experts, top-%d)", m.Name, m.Variant, len(m.Layers), m.Experts, m.TopK)},
		{"device", o.Device.Name},
		{"policy", s.Policy.Name},
		{"cache", fmt.Sprintf("%s (%s)", sim.FormatBytes(s.Cache.Bytes), "device budget "+sim.FormatBudget(res.DeviceBudgetBytes))},
		{"layout", s.layoutLine() + s.mmapLabel(o.Device)},
		{"trace", o.TraceLabel},
	}
	sp := s.Speculative
	switch {
	case s.SpecFromTrace && sp != nil:
		h = append(h, [2]string{"speculative", "passes from the trace, drafter " + sp.Drafter.label(m, o.Device)})
	case s.SpecFromTrace:
		h = append(h, [2]string{"speculative", "passes from the trace"})
	case sp != nil:
		acc := fmt.Sprintf("acceptance %.2f", sp.Accept)
		if sp.AcceptFromTrace {
			acc = fmt.Sprintf("acceptance %.3f (estimated from the trace)", sp.Accept)
		}
		h = append(h, [2]string{"speculative", fmt.Sprintf("block %d, %s, drafter %s", sp.Block, acc, sp.Drafter.label(m, o.Device))})
	}
	return h
}

// layoutLine is the layout and the compute order of a layer's experts.
func (s *Spec) layoutLine() string {
	if s.Barrier {
		return s.Layout + ", barrier (experts compute once all are resident)"
	}
	return fmt.Sprintf("%s, cached-first %v", s.Layout, s.CachedFirst)
}

// label names a drafter and its cost per draft token on dev.
func (d *Drafter) label(m *devices.ModelSpec, dev *devices.Device) string {
	b, f := d.Cost(m)
	switch {
	case b == 0 && f == 0:
		return d.Kind
	case d.measuredOn(dev):
		return fmt.Sprintf("%s (%s, measured %.3g ms per draft token)", d.Kind, sim.FormatBytes(b), float64(dev.DraftTokenNS)/1e6)
	}
	return fmt.Sprintf("%s (%s, %.3g GFLOP per draft token)", d.Kind, sim.FormatBytes(b), float64(f)/1e9)
}

// mmapLabel names the stock page-fault path's settings that are on, for the
// layout line ("" when none is).
func (s *Spec) mmapLabel(d *devices.Device) string {
	if s.Layout != string(sim.LayoutGGUFMmap) {
		return ""
	}
	var parts []string
	if n := d.Threads(); n > 1 {
		parts = append(parts, fmt.Sprintf("%d faulting threads", n))
	}
	if a := d.Flash.ReadAheadAsyncBytes; a > 0 {
		parts = append(parts, "async read-ahead "+sim.FormatBytes(a))
	}
	if s.MmapNeighbours {
		parts = append(parts, "neighbours resident")
	}
	if s.PageCache != "" {
		parts = append(parts, "page cache "+s.PageCache)
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}
