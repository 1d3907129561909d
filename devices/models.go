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
func LookupModel(name, variant string) (*ModelSpec, error) {
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
