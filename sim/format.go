package sim

import "github.com/lessim/lessim/devices"

// weightBytes are the weight bytes each part of a pass reads, converted to
// bytes at the profile's memory.efficiency: a part stored in a type whose
// efficiency the profile states (memory.format_efficiency) counts
// bytes × efficiency ÷ that type's efficiency (Device.EquivalentBytes), so
// its time is Σ_type bytes ÷ (bandwidth × efficiency(type)). The types come
// from the model spec: each expert tensor's type, a layer's dense_types and
// the head_type. With no per-format table every entry is the part's bytes
// exactly, and results are those of one efficiency.
type weightBytes struct {
	dense, expert []float64 // by MoE layer
	head          float64
}

func newWeightBytes(m *devices.ModelSpec, d *devices.Device) weightBytes {
	w := weightBytes{dense: make([]float64, len(m.Layers)), expert: make([]float64, len(m.Layers))}
	for l := range m.Layers {
		ls := &m.Layers[l]
		w.dense[l] = d.EquivalentBytes(ls.DenseBytes, ls.DenseTypes...)
		parts := make([]devices.TypeBytes, len(ls.Tensors))
		for i, t := range ls.Tensors {
			parts[i] = devices.TypeBytes{Type: t.Type, Bytes: t.Bytes}
		}
		w.expert[l] = d.EquivalentBytes(ls.ExpertBytes, parts...)
	}
	w.head = d.EquivalentBytes(m.HeadBytes, devices.TypeBytes{Type: m.HeadType, Bytes: m.HeadBytes})
	return w
}
