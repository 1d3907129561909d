package record

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
	"github.com/lessim/lessim/runtime/gguf"
)

// writeGGUF writes a minimal GGUF with the given architecture and F32 tensors
// (name → dims); it is header-valid but not a runnable model.
func writeGGUF(t *testing.T, arch string, kv map[string]uint32, tensors map[string][]int64) string {
	t.Helper()
	w := gguf.NewWriter()
	if arch != "" {
		if err := w.AddKV("general.architecture", arch); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range kv {
		if err := w.AddKV(arch+"."+k, v); err != nil {
			t.Fatal(err)
		}
	}
	for name, dims := range tensors {
		n := int64(4)
		for _, d := range dims {
			n *= d
		}
		if err := w.AddTensor(name, gguf.TypeF32, dims, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), arch+".gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckModelErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "readme.gguf")
	if err := os.WriteFile(notGGUF, []byte("# not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	moeTensors := func(router bool) map[string][]int64 {
		m := map[string][]int64{
			"blk.0.ffn_gate_exps.weight": {8, 4, 4},
			"blk.0.ffn_up_exps.weight":   {8, 4, 4},
			"blk.0.ffn_down_exps.weight": {4, 8, 4},
		}
		if router {
			m["blk.0.ffn_gate_inp.weight"] = []int64{8, 4}
		}
		return m
	}
	moeKV := map[string]uint32{"expert_count": 4, "expert_used_count": 2, "embedding_length": 8, "block_count": 1}
	for _, tc := range []struct {
		name, path string
	}{
		{"missing", filepath.Join(dir, "nope.gguf")},
		{"directory", dir},
		{"not gguf", notGGUF},
		{"no arch", writeGGUF(t, "", nil, nil)},
		{"unsupported arch", writeGGUF(t, "qwen2", nil, map[string][]int64{"blk.0.ffn_up.weight": {8, 8}})},
		{"dense", writeGGUF(t, "llama", map[string]uint32{"block_count": 1}, map[string][]int64{"blk.0.ffn_up.weight": {8, 8}})},
		{"no router", writeGGUF(t, "qwen3moe", moeKV, moeTensors(false))},
		{"bad top-k", writeGGUF(t, "olmoe", map[string]uint32{"expert_count": 4, "expert_used_count": 9, "embedding_length": 8}, moeTensors(true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc, err := CheckModel(tc.path)
			if err == nil {
				mc.File.Close()
			} else if strings.Contains(err.Error(), "\n") {
				t.Errorf("CheckModel error %q spans lines, want one", err)
			}
			errgolden.Check(t, "check", err)
		})
	}
}

// checkSmallSynth writes a small synthetic MoE (3 layers × 8 experts, top-2)
// and returns its CheckModel (closed when the test ends) and its path.
func checkSmallSynth(t *testing.T) (*ModelCheck, string) {
	return checkSmallSynthArch(t, "qwen3moe")
}

// checkSmallSynthArch is checkSmallSynth of architecture arch.
func checkSmallSynthArch(t *testing.T, arch string) (*ModelCheck, string) {
	t.Helper()
	o := gguf.DefaultSynthOptions()
	o.Arch = arch
	o.Layers, o.Experts, o.TopK, o.Hidden, o.ExpertFFN, o.Vocab = 3, 8, 2, 64, 32, 512
	o.Heads, o.HeadsKV, o.HeadDim = 2, 1, 32
	p := filepath.Join(t.TempDir(), "synth.gguf")
	if err := gguf.SynthMoE(p, o); err != nil {
		t.Fatal(err)
	}
	mc, err := CheckModel(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.File.Close() })
	return mc, p
}

func TestCheckModelSynth(t *testing.T) {
	mc, p := checkSmallSynth(t)
	if len(mc.MoE.Layers) != 3 || len(mc.Spec.Layers) != 3 {
		t.Fatalf("%d MoE layers, spec %d; want 3", len(mc.MoE.Layers), len(mc.Spec.Layers))
	}
	w, err := mc.Routers()
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 3 || len(w[0].W) != 8*64 || w[0].Bias != nil {
		t.Fatalf("routers: %d layers of %d values, bias %v", len(w), len(w[0].W), w[0].Bias)
	}
	// Truncating the file anywhere in the tensor data is caught before llama.cpp.
	data, _ := os.ReadFile(p)
	for _, frac := range []int{2, 3, 100} {
		cut := filepath.Join(t.TempDir(), "cut.gguf")
		os.WriteFile(cut, data[:len(data)*(frac-1)/frac], 0o644)
		if mc, err := CheckModel(cut); err == nil {
			mc.File.Close()
			t.Errorf("truncated to %d/%d: CheckModel succeeded", frac-1, frac)
		} else if !strings.Contains(err.Error(), "truncated") {
			t.Errorf("truncated: error %q does not say so", err)
		}
	}
}

// TestRoutersWithBias: a gpt-oss-style model's routers carry their biases,
// one per expert, read from blk.N.ffn_gate_inp.bias, and Scores adds them.
func TestRoutersWithBias(t *testing.T) {
	mc, _ := checkSmallSynthArch(t, "gpt-oss")
	rs, err := mc.Routers()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d routers, want 3", len(rs))
	}
	for i, r := range rs {
		b, err := mc.File.ReadTensorF32(fmt.Sprintf("blk.%d.ffn_gate_inp.bias", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Bias) != 8 || !slices.Equal(r.Bias, b) || slices.Max(b) == 0 {
			t.Fatalf("router %d: bias %v, file %v: want the file's 8 non-zero values", i, r.Bias, b)
		}
		x := make([]float32, 64)
		got := make([]float32, 8)
		r.Scores(got, x) // x = 0: the scores are the bias
		if !slices.Equal(got, b) {
			t.Errorf("router %d: scores of 0 = %v, want the bias %v", i, got, b)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Tokens: -1, LookaheadDepth: 99, Threads: -2, Temperature: -1, TopK: -3, Prompts: []string{"a", ""}}
	errgolden.Check(t, "every-problem", o.Validate())
	d := DefaultOptions()
	d.ModelPath, d.Out = "m.gguf", "t.parquet"
	if err := d.Validate(); err != nil {
		t.Errorf("DefaultOptions with paths: %v", err)
	}
}

func TestRouterScores(t *testing.T) {
	w := []float32{1, 2, 3, -1, 0, 1} // 2 experts × 3 hidden
	x := []float32{1, 1, 2}
	for _, tc := range []struct {
		bias, want []float32
	}{{nil, []float32{9, 1}}, {[]float32{0.5, -2}, []float32{9.5, -1}}} {
		got := make([]float32, 2)
		Router{W: w, Bias: tc.bias}.Scores(got, x)
		if !slices.Equal(got, tc.want) {
			t.Errorf("bias %v: scores = %v, want %v", tc.bias, got, tc.want)
		}
	}
}

// TestOptionsLimits: non-finite or huge temperatures (NaN aborted llama.cpp's
// sampler), a thread count past MaxThreads and decode tokens past
// MaxContext are refused before any model loads; the bounds themselves pass.
func TestOptionsLimits(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Temperature = float32(math.NaN()) }, "temperature NaN"},
		{func(o *Options) { o.Temperature = float32(math.Inf(1)) }, "temperature +Inf"},
		{func(o *Options) { o.Temperature = 1e30 }, "temperature 1e+30"},
		{func(o *Options) { o.Threads = 100000 }, "threads 100000: want 1..256"},
		{func(o *Options) { o.Tokens = MaxContext }, "exceeds the 65536-token context"},
	} {
		o := DefaultOptions()
		o.ModelPath, o.Out = "m.gguf", "t.parquet"
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
	o := DefaultOptions()
	o.ModelPath, o.Out, o.Temperature, o.Threads, o.Tokens = "m.gguf", "t.parquet", MaxTemperature, MaxThreads, MaxContext-1
	if err := o.Validate(); err != nil {
		t.Errorf("the bounds themselves: %v", err)
	}
	if err := CheckContext(2, MaxContext-1); err == nil {
		t.Error("CheckContext: 2 + MaxContext-1 tokens accepted")
	}
}

func TestCheckLookahead(t *testing.T) {
	for _, tc := range []struct {
		depth, layers int
		ok            bool
	}{{0, 1, true}, {1, 2, true}, {3, 4, true}, {1, 1, false}, {4, 4, false}, {8, 4, false}} {
		err := CheckLookahead(tc.depth, tc.layers)
		if (err == nil) != tc.ok {
			t.Errorf("depth %d, %d layers: error %v, want ok %v", tc.depth, tc.layers, err, tc.ok)
		}
	}
}
