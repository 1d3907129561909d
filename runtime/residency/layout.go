package residency

import (
	"fmt"

	"github.com/lessim/lessim/runtime/gguf"
)

// Expert names one routed expert: Layer indexes the file's MoE layers (gguf.MoE.Layers,
// the order of devices.ModelSpec.Layers), Index is the expert within the layer.
type Expert struct {
	Layer, Index int
}

// String prints the expert as "l3/e17".
func (e Expert) String() string { return fmt.Sprintf("l%d/e%d", e.Layer, e.Index) }

// Region is an absolute file byte range [Start, End).
type Region struct{ Start, End int64 }

// Len is the region's size in bytes.
func (r Region) Len() int64 { return r.End - r.Start }

// Layout is where every expert's bytes are in a GGUF file.
type Layout struct {
	Layers  []gguf.MoELayer // the file's MoE layers, in block order
	Experts int             // experts per layer
	Tensors []Region        // every expert tensor whole, in file order per layer
}

// NewLayout builds the layout from a parsed file's MoE view. A file without
// routed experts is an error.
func NewLayout(f *gguf.File) (*Layout, error) {
	m, err := f.MoE()
	if err != nil {
		return nil, err
	}
	if m.Experts <= 0 {
		return nil, fmt.Errorf("%s: no routed experts", f.Name)
	}
	l := &Layout{Layers: m.Layers, Experts: m.Experts}
	for _, ml := range m.Layers {
		for _, t := range ml.Tensors {
			start, _ := t.Range(0)
			l.Tensors = append(l.Tensors, Region{start, start + int64(m.Experts)*t.ExpertBytes})
		}
	}
	return l, nil
}

// Check reports whether e names an expert of the layout.
func (l *Layout) Check(e Expert) error {
	if e.Layer < 0 || e.Layer >= len(l.Layers) {
		return fmt.Errorf("expert %v: layer %d out of range [0, %d)", e, e.Layer, len(l.Layers))
	}
	if e.Index < 0 || e.Index >= l.Experts {
		return fmt.Errorf("expert %v: index %d out of range [0, %d)", e, e.Index, l.Experts)
	}
	return nil
}

// Regions are expert e's file regions, one per expert tensor of its layer, in file
// order. e must pass Check.
func (l *Layout) Regions(e Expert) []Region {
	rs := l.Layers[e.Layer].ExpertRanges(e.Index)
	out := make([]Region, len(rs))
	for i, r := range rs {
		out[i] = Region{r.Start, r.End}
	}
	return out
}

// Bytes is one expert's size on layer layer (the sum of its regions).
func (l *Layout) Bytes(layer int) int64 { return l.Layers[layer].ExpertBytes() }

// MaxRegion is the largest single region of any expert, the buffer a pread needs.
func (l *Layout) MaxRegion() int64 {
	var m int64
	for _, ml := range l.Layers {
		for _, t := range ml.Tensors {
			m = max(m, t.ExpertBytes)
		}
	}
	return m
}

// inward is the page-aligned part of r that lies wholly inside it (may be empty).
func inward(r Region, page int64) Region {
	s := (r.Start + page - 1) / page * page
	e := r.End / page * page
	if e < s {
		e = s
	}
	return Region{s, e}
}

// outward is the smallest page-aligned range covering r.
func outward(r Region, page int64) Region {
	return Region{r.Start / page * page, (r.End + page - 1) / page * page}
}
