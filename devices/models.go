package devices

import (
	"fmt"
	"slices"
	"strings"
)

// modelEntry is one built-in model: its quant variants (the first is the
// default) and the function that lays out a variant.
type modelEntry struct {
	variants []string
	build    func(variant string) (*ModelSpec, error)
}

// builtinModels is the registry of built-in model specs; adding a model is one
// new file and one line here.
var builtinModels = map[string]modelEntry{
	MiniCPMV47:   {variants: []string{"q4_k_m", "mixed-q3k-experts"}, build: miniCPMV47},
	Qwen3_30BA3B: {variants: []string{"q4_k_m"}, build: qwen3_30BA3B},
}

// ModelNames lists the built-in models, sorted.
func ModelNames() []string {
	names := make([]string, 0, len(builtinModels))
	for n := range builtinModels {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ModelVariants lists a built-in model's quant variants, the default first;
// nil for an unknown model.
func ModelVariants(name string) []string {
	e, ok := builtinModels[name]
	if !ok {
		return nil
	}
	return slices.Clone(e.variants)
}

// LookupModel returns the spec of a built-in model in one of its variants; an
// empty variant selects the default. Unknown names and variants are errors
// listing the valid ones.
//
// NB: the spec does not state its layers' mixers (LayerSpec.Mixer and the
// fields with it): they would change every spec's encoding, and with it
// every trace's metadata. WithContextShape adds them when a run asks for the
// context cost.
func LookupModel(name, variant string) (*ModelSpec, error) {
	m, err := lookupFull(name, variant)
	if err != nil {
		return nil, err
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition, l.StateBytes, l.StateFLOPsPerToken = "", 0, 0, 0, 0
	}
	return m, nil
}

// WithContextShape returns m with every layer's mixer stated: m itself when
// it already states them (HasContextShape), else a copy that takes them from
// the built-in model of m's name and variant, whose layers must match m's
// (blocks and expert bytes). A model that states none and is not built in is
// an error saying what its spec must give.
func (m *ModelSpec) WithContextShape() (*ModelSpec, error) {
	if m.HasContextShape() {
		return m, nil
	}
	if _, ok := builtinModels[m.Name]; !ok {
		return nil, fmt.Errorf("model %s states no layer mixers and is not a built-in model: its spec must give each layer's mixer (%s or %s) with kv_bytes_per_token and attn_flops_per_position, or state_bytes and state_flops_per_token",
			m.Name, MixerAttention, MixerRecurrent)
	}
	full, err := lookupFull(m.Name, m.Variant)
	if err != nil {
		return nil, err
	}
	if len(full.Layers) != len(m.Layers) {
		return nil, fmt.Errorf("model %s: %d layers, the built-in model has %d: cannot take its layer mixers", m.Name, len(m.Layers), len(full.Layers))
	}
	c := *m
	c.Layers = slices.Clone(m.Layers)
	for i := range c.Layers {
		l, f := &c.Layers[i], &full.Layers[i]
		if l.Block != f.Block || l.ExpertBytes != f.ExpertBytes {
			return nil, fmt.Errorf("model %s: layer %d (block %d, %d-byte experts) differs from the built-in model's (block %d, %d-byte experts): cannot take its layer mixers",
				m.Name, i, l.Block, l.ExpertBytes, f.Block, f.ExpertBytes)
		}
		l.Mixer, l.KVBytesPerToken, l.AttnFLOPsPerPosition, l.StateBytes, l.StateFLOPsPerToken = f.Mixer, f.KVBytesPerToken, f.AttnFLOPsPerPosition, f.StateBytes, f.StateFLOPsPerToken
	}
	return &c, nil
}

// lookupFull is LookupModel with the layers' mixers stated.
func lookupFull(name, variant string) (*ModelSpec, error) {
	e, ok := builtinModels[name]
	if !ok {
		return nil, fmt.Errorf("unknown model %q (valid: %s)", name, strings.Join(ModelNames(), ", "))
	}
	if variant == "" {
		variant = e.variants[0]
	}
	if !slices.Contains(e.variants, variant) {
		return nil, fmt.Errorf("model %s: unknown variant %q (valid: %s)", name, variant, strings.Join(e.variants, ", "))
	}
	return e.build(variant)
}
