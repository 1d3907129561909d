package devices

import (
	"fmt"
	"slices"
	"strings"
)

// TypeBytes is part of a layer's resident weights stored in one ggml type:
// the bytes of every tensor of that type (ModelSpec: dense_types).
type TypeBytes struct {
	Type  QuantType `json:"type" yaml:"type"`
	Bytes int64     `json:"bytes" yaml:"bytes"`
}

// formatEfficiencyPath is the profile field of per-format efficiencies;
// one format's is formatEfficiencyPath + "." + its type name.
const formatEfficiencyPath = "memory.format_efficiency"

// Efficiency is the fraction of peak DRAM bandwidth the decode matmuls over
// weights of type q reach: FormatEfficiency[q] when the profile states it,
// else MemEfficiency (also for q == "", a type the spec does not state).
func (d *Device) Efficiency(q QuantType) float64 {
	if e, ok := d.FormatEfficiency[q]; ok {
		return e
	}
	return d.MemEfficiency
}

// EquivalentBytes is what weights read as parts cost in bytes at
// MemEfficiency: Σ bytes × MemEfficiency ÷ Efficiency(type), plus the
// bytes of total that no part states at MemEfficiency. With no
// FormatEfficiency (or only formats of MemEfficiency's value) it is
// exactly total: the sum of whole numbers of bytes below 2^53 is exact in
// float64, and each ratio is 1.
func (d *Device) EquivalentBytes(total int64, parts ...TypeBytes) float64 {
	if len(d.FormatEfficiency) == 0 {
		return float64(total)
	}
	rest, eq := total, 0.0
	for _, p := range parts {
		rest -= p.Bytes
		eq += float64(p.Bytes) * float64(d.MemEfficiency/d.Efficiency(p.Type)) // NB: no FMA
	}
	return eq + float64(max(rest, 0))
}

// formatEfficiency checks and parses the optional memory.format_efficiency
// table: each key a known ggml type (any case, each once), each value a
// sourced efficiency within memory.efficiency's bound. It returns the
// table (nil when absent) and appends the assumed entries' paths.
func (ps *problems) formatEfficiency(p *Profile, assumed *[]string) map[QuantType]float64 {
	if len(p.Memory.FormatEfficiency) == 0 {
		return nil
	}
	keys := make([]string, 0, len(p.Memory.FormatEfficiency))
	for k := range p.Memory.FormatEfficiency {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := map[QuantType]float64{}
	for _, k := range keys {
		q := p.Memory.FormatEfficiency[k]
		path := formatEfficiencyPath + "." + k
		t, err := ParseQuantType(k)
		if err != nil {
			ps.add(path, "%v", err)
			continue
		}
		if string(t) != k {
			ps.add(path, "write the type as GGUF files name it: %s", t)
			continue
		}
		v, ok := ps.quantity(field{path, Dimensionless, &q, false})
		if !ok {
			continue
		}
		if msg := bound("memory.efficiency").check(v, q.Value); msg != "" {
			ps.add(path, "%s", msg)
			continue
		}
		out[t] = v
		if IsAssumed(q.Source) {
			*assumed = append(*assumed, path)
		}
	}
	return out
}

// checkFormatEfficiency checks a resolved device's per-format table as
// Profile.Device does.
func (d *Device) checkFormatEfficiency(ps *problems) {
	checkTable(ps, "format_efficiency", d.FormatEfficiency, bound("memory.efficiency"), func(k QuantType) string {
		if _, ok := quantBlocks[k]; !ok {
			return fmt.Sprintf("unknown quant type %q (valid: %s)", string(k), joinNames(QuantTypes()))
		}
		return ""
	})
}

// isFormatEfficiencyName reports whether an Assumed name is one format's
// efficiency.
func isFormatEfficiencyName(name string) bool {
	t, ok := strings.CutPrefix(name, formatEfficiencyPath+".")
	_, known := quantBlocks[QuantType(t)]
	return ok && known
}
