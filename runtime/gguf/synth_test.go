package gguf

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSynthDeterministic: the same options give byte-identical files (through
// SynthMoE's temporary-file path too); another seed gives another file.
func TestSynthDeterministic(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	hash := func(name string, o SynthOptions) [32]byte {
		path := filepath.Join(dir, name)
		if err := SynthMoE(path, o); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(data)
	}
	a, b := hash("a.gguf", o), hash("b.gguf", o)
	if a != b {
		t.Fatal("two files from the same options differ")
	}
	if sha256.Sum256(synthBytes(t, o)) != a {
		t.Error("NewSynthWriter+WriteTo differs from SynthMoE")
	}
	o.Seed++
	if hash("c.gguf", o) == a {
		t.Error("another seed gave the same file")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("%d files in the directory, want 3 (no temporaries left)", len(ents))
	}
}

// TestSynthLayout checks the keys and tensor shapes llama.cpp's qwen3moe loader
// requires (llama-model.cpp load_hparams / load_tensors).
func TestSynthLayout(t *testing.T) {
	o := tinyOptions()
	o.Quant = "f16"
	f, err := parseBytes(synthBytes(t, o), "tiny.gguf")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]uint64{
		"qwen3moe.context_length": 256, "qwen3moe.embedding_length": 64, "qwen3moe.block_count": 2,
		"qwen3moe.attention.head_count": 4, "qwen3moe.attention.head_count_kv": 2, "qwen3moe.attention.key_length": 16,
		"qwen3moe.attention.value_length": 16, "qwen3moe.expert_count": 8, "qwen3moe.expert_used_count": 2,
		"qwen3moe.expert_feed_forward_length": 32, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
		"general.file_type": 1,
	} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
		}
	}
	if eps, ok := f.Float("qwen3moe.attention.layer_norm_rms_epsilon"); !ok || eps <= 0 {
		t.Errorf("rms epsilon %v %v", eps, ok)
	}
	if m, _ := f.String("tokenizer.ggml.model"); m != "llama" {
		t.Errorf("tokenizer model %q", m)
	}
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	if len(toks) != minVocab || toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" || toks[3+0x0a] != "<0x0A>" {
		t.Errorf("tokens %d: %q", len(toks), toks[:4])
	}
	seen := map[string]bool{}
	for _, tok := range toks {
		if seen[tok] {
			t.Errorf("duplicate token %q", tok)
		}
		seen[tok] = true
	}
	for _, key := range []string{"tokenizer.ggml.scores", "tokenizer.ggml.token_type"} {
		if kv, ok := f.Value(key); !ok || kv.Value.(Array).Len() != len(toks) {
			t.Errorf("%s missing or of the wrong length", key)
		}
	}
	want := map[string]struct {
		typ  TypeID
		dims []int64
	}{
		"token_embd.weight": {TypeF16, []int64{64, minVocab}}, "output_norm.weight": {TypeF32, []int64{64}},
		"output.weight": {TypeF16, []int64{64, minVocab}},
	}
	for _, b := range []string{"blk.0.", "blk.1."} {
		for name, s := range map[string]struct {
			typ  TypeID
			dims []int64
		}{
			"attn_norm": {TypeF32, []int64{64}}, "attn_q": {TypeF16, []int64{64, 64}}, "attn_k": {TypeF16, []int64{64, 32}},
			"attn_v": {TypeF16, []int64{64, 32}}, "attn_output": {TypeF16, []int64{64, 64}}, "attn_q_norm": {TypeF32, []int64{16}},
			"attn_k_norm": {TypeF32, []int64{16}}, "ffn_norm": {TypeF32, []int64{64}}, "ffn_gate_inp": {TypeF32, []int64{64, 8}},
			"ffn_gate_exps": {TypeF16, []int64{64, 32, 8}}, "ffn_up_exps": {TypeF16, []int64{64, 32, 8}},
			"ffn_down_exps": {TypeF16, []int64{32, 64, 8}},
		} {
			want[b+name+".weight"] = s
		}
	}
	if len(f.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for name, w := range want {
		ti, ok := f.Tensor(name)
		if !ok || ti.Type != w.typ || !reflect.DeepEqual(ti.Dims, w.dims) {
			t.Errorf("tensor %s: %+v, want %s %v", name, ti, w.typ.Name(), w.dims)
		}
	}
	norm, err := f.ReadTensorF32("blk.1.attn_q_norm.weight")
	if err != nil || !reflect.DeepEqual(norm, constF32(16, 1)) {
		t.Errorf("q norm %v %v", norm, err)
	}
}

func TestSynthValidate(t *testing.T) {
	o := SynthOptions{Arch: "llama", Layers: -1, Experts: 4, TopK: 6, Hidden: 100, ExpertFFN: 48, Heads: 6, HeadsKV: 4,
		HeadDim: 15, Context: 10, Vocab: 100, Quant: "q5_k", RouterCorrelation: 1.5}
	err := o.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`arch "llama" is not supported (valid: gpt-oss, olmoe, qwen3moe)`, `quant "q5_k" is not supported (valid: f16, q8_0, q4_k, q3_k, mxfp4)`,
		"layers must be positive, got -1", "top-k 6 exceeds experts 4", "heads 6 is not a multiple of heads-kv 4",
		"head-dim 15 must be even", "vocab 100 is below the minimum 260", "router-correlation 1.5 must be within 0..1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	q := tinyOptions()
	q.Hidden, q.ExpertFFN, q.HeadDim = 48, 40, 6
	err = q.Validate()
	for _, want := range []string{"hidden 48 is not a multiple of 32", "expert-ffn 40 is not a multiple of 32", "heads×head-dim 24 is not a multiple of 32"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("q8_0 error lacks %q: %v", want, err)
		}
	}
	q.Quant = "F16" // any case; f16 has no block constraint
	if err := q.Validate(); err != nil {
		t.Errorf("f16: %v", err)
	}
	if err := SynthMoE(filepath.Join(t.TempDir(), "x.gguf"), o); err == nil {
		t.Error("SynthMoE accepted invalid options")
	}
	if err := TrainedLikeSynthOptions().Validate(); err != nil {
		t.Errorf("TrainedLikeSynthOptions: %v", err)
	}
	var d SynthOptions
	d.EnsureDefaults()
	def := DefaultSynthOptions()
	def.RouterCorrelation, def.Seed = 0, 0
	if !reflect.DeepEqual(d, def) {
		t.Errorf("EnsureDefaults: %+v", d)
	}
}

// TestDefaultSynthSize pins the size of the default model without writing it.
func TestDefaultSynthSize(t *testing.T) {
	w, err := NewSynthWriter(DefaultSynthOptions())
	if err != nil {
		t.Fatal(err)
	}
	var experts, total int64
	for _, ti := range w.tensors {
		total += ti.size
		if strings.HasSuffix(ti.name, "_exps.weight") {
			experts += ti.size
		}
	}
	// 16 layers × 64 experts × 3 × 1024 × 512 weights at 34 bytes per 32.
	if want := int64(16 * 64 * 3 * 1024 * 512 / 32 * 34); experts != want {
		t.Errorf("expert bytes %d, want %d", experts, want)
	}
	if total < 1_700_000_000 || total > 1_800_000_000 {
		t.Errorf("default model is %d bytes, want about 1.76 GB", total)
	}
}

// TestWriterSize: Size, known before any data is made, is the length of the
// file WriteTo writes, for both quant types.
func TestWriterSize(t *testing.T) {
	for _, q := range []string{"q8_0", "f16"} {
		o := tinyOptions()
		o.Quant, o.Vocab = q, minVocab+3
		w, err := NewSynthWriter(o)
		if err != nil {
			t.Fatal(err)
		}
		size, err := w.Size()
		if err != nil {
			t.Fatal(err)
		}
		if got := int64(len(synthBytes(t, o))); size != got {
			t.Errorf("%s: Size %d, file %d bytes", q, size, got)
		}
	}
}

// TestSynthRouters: the routers in the file follow W_l = ρ·W_{l−1} + sqrt(1−ρ²)·N_l,
// so adjacent layers' routers correlate with coefficient ≈ ρ.
func TestSynthRouters(t *testing.T) {
	for _, rho := range []float64{0, 0.5, 0.9} {
		o := tinyOptions()
		o.Hidden, o.Experts, o.TopK, o.Layers, o.RouterCorrelation = 256, 64, 8, 3, rho
		f, err := parseBytes(synthBytes(t, o), "r.gguf")
		if err != nil {
			t.Fatal(err)
		}
		var ws [][]float32
		for l := range o.Layers {
			w, err := f.ReadTensorF32("blk." + string(rune('0'+l)) + ".ffn_gate_inp.weight")
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		for l := 1; l < o.Layers; l++ {
			if c := pearson(ws[l-1], ws[l]); math.Abs(c-rho) > 0.03 {
				t.Errorf("rho %.1f: routers %d and %d correlate %.3f", rho, l-1, l, c)
			}
		}
	}
}

func pearson(a, b []float32) float64 {
	var sa, sb, saa, sbb, sab float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		sa, sb, saa, sbb, sab = sa+x, sb+y, saa+x*x, sbb+y*y, sab+x*y
	}
	n := float64(len(a))
	return (sab/n - sa*sb/n/n) / math.Sqrt((saa/n-sa*sa/n/n)*(sbb/n-sb*sb/n/n))
}

// TestSynthRouting runs the reference forward pass over small synthetic models: the
// router logits recomputed from the file match, different tokens spread over the
// experts, and lookahead recall rises with RouterCorrelation.
func TestSynthRouting(t *testing.T) {
	recall := map[float64]float64{}
	for _, rho := range []float64{0, 0.7, 1} {
		o := SynthOptions{Layers: 4, Experts: 32, TopK: 4, Hidden: 128, ExpertFFN: 64, Heads: 4, HeadsKV: 2, HeadDim: 32,
			Context: 256, Vocab: minVocab, Quant: "q8_0", RouterCorrelation: rho, Seed: 5}
		f, err := parseBytes(synthBytes(t, o), "s.gguf")
		if err != nil {
			t.Fatal(err)
		}
		m := loadRef(t, f)
		r := rand.New(rand.NewPCG(9, 9))
		toks := make([]int, 32)
		for i := range toks {
			toks[i] = 3 + r.IntN(o.Vocab-3)
		}
		trs := m.run(toks)
		recall[rho] = m.lookaheadRecall(trs)
		used := map[int]int{}
		for _, tr := range trs {
			for _, e := range tr.topk[0] {
				used[e]++
			}
		}
		if len(used) < o.Experts*3/4 {
			t.Errorf("rho %.1f: layer 0 used only %d of %d experts over %d tokens", rho, len(used), o.Experts, len(toks))
		}
		for e, n := range used {
			if n > len(toks)/2 {
				t.Errorf("rho %.1f: expert %d chosen by %d of %d tokens", rho, e, n, len(toks))
			}
		}
	}
	t.Logf("lookahead recall by router correlation: %v", recall)
	if !(recall[0] < recall[0.7] && recall[0.7] < recall[1]) {
		t.Errorf("lookahead recall does not rise with router correlation: %v", recall)
	}
	if recall[0.7] < 0.5 || recall[0.7] > 0.95 {
		t.Errorf("lookahead recall at 0.7 is %.3f, want a realistic 0.5–0.95", recall[0.7])
	}
}

// TestWriteFileFailure: a failing write leaves nothing behind.
func TestWriteFileFailure(t *testing.T) {
	w := NewWriter()
	must(t, w.AddTensorFunc("t", TypeF32, []int64{4}, func(io.Writer) error {
		return os.ErrInvalid
	}))
	dir := t.TempDir()
	path := filepath.Join(dir, "x.gguf")
	if err := w.WriteFile(path); err == nil || !strings.HasPrefix(err.Error(), "writing "+path+": tensor t: ") {
		t.Fatalf("error %v", err)
	}
	if err := w.WriteFile(filepath.Join(dir, "missing", "x.gguf")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %d files", len(ents))
	}
	// Over an existing model: the failed write leaves it byte-identical.
	old := []byte("GGUF an older model")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(path); err == nil {
		t.Fatal("failing fill: no error")
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, old) {
		t.Errorf("the old model changed: %q %v", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the folder, want only the old model", len(ents))
	}
}

// TestSynthOLMoE: olmoe's q/k norms span the embedding, and its shape constraints are
// validated.
func TestSynthOLMoE(t *testing.T) {
	o := tinyOptions()
	o.Arch, o.Heads, o.HeadsKV, o.HeadDim = "olmoe", 2, 2, 32
	f, err := parseBytes(synthBytes(t, o), "olmoe.gguf")
	if err != nil {
		t.Fatal(err)
	}
	for name, dims := range map[string][]int64{
		"blk.1.attn_q_norm.weight": {64}, "blk.1.attn_k_norm.weight": {64}, "blk.1.attn_k.weight": {64, 64},
		"blk.1.ffn_down_exps.weight": {32, 64, 8},
	} {
		if ti, ok := f.Tensor(name); !ok || !reflect.DeepEqual(ti.Dims, dims) {
			t.Errorf("%s: %+v, want dims %v", name, ti, dims)
		}
	}
	for key, want := range map[string]uint64{"olmoe.feed_forward_length": 32, "olmoe.expert_count": 8, "olmoe.attention.head_count_kv": 2} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
		}
	}
	if s, err := f.ModelSpec(); err != nil || s.Arch != "olmoe" || s.ExpertFFN != 32 || len(s.Layers) != 2 {
		t.Errorf("ModelSpec: %+v %v", s, err)
	}
	o.HeadsKV, o.HeadDim = 1, 16
	err = o.Validate()
	for _, want := range []string{"olmoe needs heads×head-dim = hidden, got 2×16 = 32, hidden 64", "olmoe needs heads-kv = heads"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestSynthPinnedHash pins the bytes of the tiny model, so a change to generation
// (or a platform that computes differently) is noticed. If generation changes on
// purpose, update the hash and say so in the commit message: traces recorded from
// older synthetic files then no longer match newly generated ones.
func TestSynthPinnedHash(t *testing.T) {
	const want = "68d548cc928a1c1bc392c89d4068b7d4322c76f891b965f0078a57b8c9d69bee"
	got := fmt.Sprintf("%x", sha256.Sum256(synthBytes(t, tinyOptions())))
	if got != want {
		t.Errorf("tiny synthetic model sha256 %s, pinned %s", got, want)
	}
}

// TestSynthAttentionSharing: adjacent layers' attention matrices correlate with
// coefficient ≈ AttentionSharing, and sharing 0 leaves them independent.
func TestSynthAttentionSharing(t *testing.T) {
	for _, s := range []float64{0, 0.9} {
		o := tinyOptions()
		o.Quant, o.Layers, o.Hidden, o.Heads, o.HeadsKV, o.HeadDim, o.AttentionSharing = "f16", 3, 128, 4, 4, 32, s
		f, err := parseBytes(synthBytes(t, o), "a.gguf")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"attn_q", "attn_output"} {
			var ws [][]float32
			for l := range o.Layers {
				w, err := f.ReadTensorF32(fmt.Sprintf("blk.%d.%s.weight", l, m))
				if err != nil {
					t.Fatal(err)
				}
				ws = append(ws, w)
			}
			for l := 1; l < o.Layers; l++ {
				if c := pearson(ws[l-1], ws[l]); math.Abs(c-s) > 0.03 {
					t.Errorf("sharing %.1f: %s of layers %d and %d correlate %.3f", s, m, l-1, l, c)
				}
			}
			if c := pearson(ws[0], ws[2]); math.Abs(c-s*s) > 0.03 {
				t.Errorf("sharing %.1f: %s of layers 0 and 2 correlate %.3f, want %.3f", s, m, c, s*s)
			}
		}
	}
}

// TestSynthFormatsRefused: the K-quants and MXFP4 need a quantizer (the
// llama.cpp build's), and rows that are whole blocks of the format; both
// checks report together. With a quantizer, the experts are written in
// --expert-quant and the rest in --quant.
func TestSynthFormatsRefused(t *testing.T) {
	o := tinyOptions()
	o.ExpertQuant = "q4_k"
	err := o.Validate()
	for _, want := range []string{"q4_k needs ggml's quantizer", "hidden 64 is not a multiple of 256 (the q4_k block size)", "expert-ffn 32 is not a multiple of 256"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "heads×head-dim") {
		t.Errorf("the attention is q8_0, not q4_k: %v", err)
	}
	o = tinyOptions()
	o.Hidden, o.ExpertFFN, o.Heads, o.HeadDim = 256, 256, 4, 64
	o.ExpertQuant = "mxfp4"
	var calls []TypeID
	o.Quantize = func(t TypeID, xs []float32, rowLen int64) ([]byte, error) {
		calls = append(calls, t)
		return make([]byte, int64(len(xs))/32*17), nil
	}
	f, err := parseBytes(synthBytes(t, o), "mx.gguf")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := f.ModelSpec()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range spec.Layers {
		for _, x := range l.Tensors {
			if x.Type != "MXFP4" || x.Bytes != 256*256/32*17 {
				t.Errorf("expert tensor %+v", x)
			}
		}
	}
	if spec.HeadType != "Q8_0" || len(calls) == 0 || slices.ContainsFunc(calls, func(c TypeID) bool { return c != TypeMXFP4 }) {
		t.Errorf("head %s, quantizer called for %v", spec.HeadType, calls)
	}
}
