package gguf

import (
	"reflect"
	"testing"

	"github.com/lessim/lessim/devices"
)

// TestModelSpecMatchesBuildSpec cross-checks two independent derivations: ModelSpec
// read from a synthetic file's tensor directory and devices.BuildSpec computed from
// the same shape.
func TestModelSpecMatchesBuildSpec(t *testing.T) {
	for _, quant := range []string{"q8_0", "f16"} {
		o := tinyOptions()
		o.Quant = quant
		f, err := parseBytes(synthBytes(t, o), "tiny.gguf")
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.ModelSpec()
		if err != nil {
			t.Fatal(err)
		}
		q, err := devices.ParseQuantType(quant)
		if err != nil {
			t.Fatal(err)
		}
		mixers := make([]devices.MixerShape, o.Layers) // every block full attention
		for i := range mixers {
			mixers[i] = devices.AttentionMixer(o.Heads, o.HeadsKV, o.HeadDim)
		}
		want, err := devices.BuildSpec(devices.Shape{
			Name: got.Name, Arch: "qwen3moe", Variant: quant, Source: got.Source,
			MoELayers: o.Layers, Experts: o.Experts, TopK: o.TopK, Hidden: o.Hidden, ExpertFFN: o.ExpertFFN, Vocab: o.Vocab,
			ExpertQuant: devices.Uniform(q), Heads: o.Heads, KVHeads: o.HeadsKV, HeadDim: o.HeadDim, QKNorm: true, DenseType: q,
			Mixers: mixers,
		})
		if err != nil {
			t.Fatal(err)
		}
		// The file states its dense part's bytes by type and the head's type;
		// BuildSpec (the built-in models' layout) does not.
		if got.HeadType != q {
			t.Errorf("%s: head type %s", quant, got.HeadType)
		}
		got.HeadType = ""
		for i := range got.Layers {
			var sum int64
			for _, d := range got.Layers[i].DenseTypes {
				sum += d.Bytes
			}
			if sum != got.Layers[i].DenseBytes {
				t.Errorf("%s: layer %d: dense types %v sum to %d, dense bytes %d", quant, i, got.Layers[i].DenseTypes, sum, got.Layers[i].DenseBytes)
			}
			got.Layers[i].DenseTypes = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nModelSpec %+v\nBuildSpec %+v", quant, got, want)
		}
	}
}
