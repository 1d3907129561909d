package devices

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of p that keeps its file name but not the bytes
// it was read from, so YAML encodes the copy's current values (without the
// original's comments). Tools that derive a profile (a fit, a calibration)
// edit a clone and write it.
func (p *Profile) Clone() *Profile {
	c := *p
	c.raw = nil
	c.problems = slices.Clone(p.problems)
	c.Flash.SingleLane = slices.Clone(p.Flash.SingleLane)
	c.Flash.Aggregate = slices.Clone(p.Flash.Aggregate)
	c.Memory.FormatEfficiency = maps.Clone(p.Memory.FormatEfficiency)
	c.Compute.PassScale = maps.Clone(p.Compute.PassScale)
	return &c
}

// Set replaces q's value (a number with its unit, as a profile writes it)
// and its source, and marks it present.
func (q *Quantity) Set(value, source string) {
	*q = Quantity{Value: value, Source: source, set: true}
}

// SetFile sets the name p's validation messages begin with ("" names p by
// its Name). A derived profile (a fit's candidate) is not the file its base
// was read from, and its problems must not be reported as that file's.
func (p *Profile) SetFile(name string) { p.file = name }
