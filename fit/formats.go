package fit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lessim/lessim/devices"
)

// formats are the per-format efficiencies (memory.format_efficiency) of
// the base profile that the runs' models read: FromRun scales them with
// memory.efficiency by one factor, since every token of a run reads the
// same mix of formats and one run cannot tell them apart. The others are
// kept.
type formats struct {
	eff    float64            // the base's memory.efficiency
	base   map[string]float64 // exercised formats' base efficiencies
	unread []string           // stated formats no run's model reads
	effLo  float64            // the fitted efficiency's bounds that keep every scaled format within [0.01, 1]
	effHi  float64
}

// newFormats finds the base's stated formats that the runs' models read
// (expert tensors, dense types, head).
func newFormats(base *devices.Profile, ms []Measured) (formats, error) {
	f := formats{base: map[string]float64{}, effLo: 0.01, effHi: 1}
	d, err := base.Device()
	if err != nil {
		return f, err
	}
	f.eff = d.MemEfficiency
	read := map[devices.QuantType]bool{}
	for _, m := range ms {
		s := m.Plan.Model
		if s == nil {
			continue
		}
		read[s.HeadType] = true
		for _, l := range s.Layers {
			for _, t := range l.DenseTypes {
				read[t.Type] = true
			}
			for _, t := range l.Tensors {
				read[t.Type] = true
			}
		}
	}
	for q, e := range d.FormatEfficiency {
		if !read[q] {
			f.unread = append(f.unread, string(q))
			continue
		}
		f.base[string(q)] = e
		f.effLo = max(f.effLo, 0.01*f.eff/e)
		f.effHi = min(f.effHi, f.eff/e)
	}
	slices.Sort(f.unread)
	return f, nil
}

// set writes each exercised format's efficiency for a fitted
// memory.efficiency of eff into c.
func (f formats) set(c *devices.Profile, eff float64, src string) {
	for q, e := range f.base {
		c.Memory.FormatEfficiency[q] = quantity(fmt.Sprintf("%.4g", e*eff/f.eff),
			fmt.Sprintf("%s; %s scaled with memory.efficiency (%.4g before the fit, and %.4g here)", src, q, e, e*eff/f.eff))
	}
}

// quantity is a set Quantity.
func quantity(value, source string) devices.Quantity {
	var q devices.Quantity
	q.Set(value, source)
	return q
}

// kept says what became of the stated formats.
func (f formats) kept() []string {
	var out []string
	if len(f.base) > 0 {
		names := make([]string, 0, len(f.base))
		for q := range f.base {
			names = append(names, q)
		}
		slices.Sort(names)
		out = append(out, fmt.Sprintf("memory.format_efficiency of %s: scaled by the fitted memory.efficiency's factor, not fitted one by one: every token of the run reads the same mix of formats, so they cannot be told apart", strings.Join(names, ", ")))
	}
	if len(f.unread) > 0 {
		out = append(out, fmt.Sprintf("memory.format_efficiency of %s: no weights of the run's model are stored in them", strings.Join(f.unread, ", ")))
	}
	return out
}
