//go:build llamacpp

package llama

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/runtime/gguf"
)

// TestQuantizeQ8_0MatchesGo cross-checks ggml's Q8_0 quantizer against
// lessim's own (gguf.AppendQ8_0): the same bytes.
func TestQuantizeQ8_0MatchesGo(t *testing.T) {
	xs := make([]float32, 4*256)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%7)
	}
	got, err := Quantize(gguf.TypeQ8_0, xs, 256)
	if err != nil {
		t.Fatal(err)
	}
	want, err := gguf.AppendQ8_0(nil, xs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("ggml's Q8_0 differs from gguf.AppendQ8_0")
	}
}

func TestQuantizeRefuses(t *testing.T) {
	xs := make([]float32, 512)
	for _, tc := range []struct {
		name string
		t    gguf.TypeID
		xs   []float32
		row  int64
	}{
		{"row not whole blocks", gguf.TypeQ4_K, xs, 128},
		{"not whole rows", gguf.TypeQ8_0, xs[:500], 256},
		{"no values", gguf.TypeQ8_0, nil, 256},
		{"unknown type", gguf.TypeID(4), xs, 256},
		{"needs an importance matrix", gguf.TypeID(16), xs, 256}, // IQ2_XXS
	} {
		if _, err := Quantize(tc.t, tc.xs, tc.row); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestSynthFormatsRun writes the same small model with its experts (and,
// second, every matrix) in each format lessim synthesizes and checks that
// llama.cpp loads and decodes it to logits close to the F16 model's (the
// weights are the same, quantized), and that the model spec states each
// tensor's type.
func TestSynthFormatsRun(t *testing.T) {
	dir := t.TempDir()
	base := gguf.DefaultSynthOptions()
	base.Layers, base.Experts, base.TopK, base.Hidden, base.ExpertFFN, base.Vocab = 2, 8, 2, 256, 256, 512
	base.Heads, base.HeadsKV, base.HeadDim = 4, 2, 64
	base.Quantize = Quantize
	logits := func(o gguf.SynthOptions, name string) ([]float32, *devices.ModelSpec) {
		t.Helper()
		path := filepath.Join(dir, name+".gguf")
		if err := gguf.SynthMoE(path, o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := f.ModelSpec()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m, err := Load(path, ModelOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer m.Close()
		c, err := m.NewContext(ContextOptions{Threads: 1, Ctx: 64, Batch: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Decode([]int32{1, 300, 301, 302}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return slices.Clone(c.Logits(-1)), spec
	}
	f16 := base
	f16.Quant = "f16"
	ref, _ := logits(f16, "f16")
	for _, q := range []string{"q8_0", "q4_k", "q3_k", "mxfp4"} {
		for _, all := range []bool{false, true} {
			o := base
			o.Quant, o.ExpertQuant = "f16", q
			name := q + "-experts"
			if all {
				o.Quant, o.ExpertQuant, name = q, "", q
			}
			got, spec := logits(o, name)
			want, _ := devices.ParseQuantType(q)
			for _, l := range spec.Layers {
				for _, tn := range l.Tensors {
					if tn.Type != want {
						t.Errorf("%s: expert tensor %s is %s", name, tn.Name, tn.Type)
					}
				}
				dense := slices.IndexFunc(l.DenseTypes, func(d devices.TypeBytes) bool { return d.Type == want })
				if (dense >= 0) != (all || q == "f16") {
					t.Errorf("%s: dense types %v", name, l.DenseTypes)
				}
			}
			if all && spec.HeadType != want {
				t.Errorf("%s: head type %s", name, spec.HeadType)
			}
			cos := cosine(got, ref)
			t.Logf("%s: logits' cosine to the F16 model's %.4f", name, cos)
			if !(cos > 0.9) {
				t.Errorf("%s: logits' cosine to the F16 model's is %.4f", name, cos)
			}
		}
	}
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}
