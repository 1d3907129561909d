package gguf

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
)

// synthScales are the weight scales SynthMoE derives from the options.
type synthScales struct {
	routerMix float64 // ρ in W_l = ρ·W_{l−1} + sqrt(1−ρ²)·N_l
	update    float64 // RMS of each sublayer's residual update (residual starts at RMS 1)
	attnOut   float64 // std of attn_output weights
	down      float64 // std of ffn_down_exps weights
	in        float64 // std of matrices reading a unit-RMS input (q, k, v, gate, up, router, output)
}

// siluRMS is sqrt(E[silu(g)²]) for g ~ N(0,1), by numerical integration.
func siluRMS() float64 {
	var s float64
	const h = 1e-3
	for x := -12.0; x <= 12; x += h {
		silu := x / (1 + math.Exp(-x))
		s += float64(silu * silu * math.Exp(-x*x/2) * h) // NB: conversion forbids FMA fusion
	}
	return math.Sqrt(s / math.Sqrt(2*math.Pi))
}

// scales maps the options to weight scales. Inputs of every matrix are unit-RMS
// (RMS-normed with unit norm weights), so std 1/sqrt(n_in) gives unit-RMS outputs;
// attn_output and ffn_down_exps are shrunk so that each sublayer adds UpdateRMS(ρ):
//   - attention: attn_output std = u / sqrt(heads·head_dim) (value vectors have RMS ≈ 1);
//   - MoE: silu(gate)·up has RMS siluRMS() ≈ 0.6; the top-k outputs are mixed with
//     weights summing to 1 (≈ 1/k each), which shrinks the RMS by ≈ 1/sqrt(k), so
//     ffn_down std = u·sqrt(k) / (sqrt(n_ff)·siluRMS()).
func (o SynthOptions) scales() synthScales {
	u := UpdateRMS(o.RouterCorrelation)
	return synthScales{
		routerMix: o.RouterCorrelation,
		update:    u,
		attnOut:   u * o.AttentionScale / math.Sqrt(float64(o.Heads*o.HeadDim)),
		down:      u * math.Sqrt(float64(o.TopK)) / (math.Sqrt(float64(o.ExpertFFN)) * siluRMS()),
		in:        1 / math.Sqrt(float64(o.Hidden)),
	}
}

// SynthMoE writes a synthetic but loadable and decodable MoE model (GGUF v3) to path.
// The weights are random (uniform with the stated standard deviations) and the
// tokenizer is a small SentencePiece-style vocabulary, so the text it generates is
// meaningless, but its shape, storage layout and routing statistics are those of a real
// MoE model: see SynthOptions.RouterCorrelation. The same options give a byte-identical
// file. Tensor data is generated while writing (in parallel, per expert), never held
// whole in memory.
func SynthMoE(path string, o SynthOptions) error {
	w, err := NewSynthWriter(o)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// NewSynthWriter returns the Writer SynthMoE uses, for callers that stream the model
// elsewhere (e.g. to hash it) or inspect its layout before writing.
func NewSynthWriter(o SynthOptions) (*Writer, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.Quant = strings.ToLower(o.Quant)
	qt, et := synthQuants[o.Quant], synthQuants[o.expertQuant()]
	sc := o.scales()
	w := NewWriter()
	for _, kv := range o.synthKVs(et, sc) {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			return nil, err
		}
	}
	if err := o.addTensors(w, qt, et, sc); err != nil {
		return nil, err
	}
	return w, nil
}

// synthKV is one metadata key and its value.
type synthKV struct {
	k string
	v any
}

// fileTypeOf is the llama_ftype (llama.h) a synthetic model states for its
// experts' type: MOSTLY_F16, _Q8_0, _Q3_K_S, _Q4_K_S, _MXFP4_MOE.
var fileTypeOf = map[TypeID]uint32{TypeF16: 1, TypeQ8_0: 7, TypeQ3_K: 11, TypeQ4_K: 14, TypeMXFP4: 38}

// synthKVs is the synthetic model's metadata: llama.cpp's keys for its
// architecture and shape, a toy tokenizer, and lessim's synthesis settings;
// et is the experts' type, which names the file type.
func (o SynthOptions) synthKVs(et TypeID, sc synthScales) []synthKV {
	arch := o.Arch
	tokens, scores, types := synthVocab(o.Vocab)
	kvs := []synthKV{
		{"general.architecture", arch},
		{"general.name", fmt.Sprintf("lessim-synth-%s-%dx%d-top%d", arch, o.Layers, o.Experts, o.TopK)},
		{"general.type", "model"},
		{"general.file_type", fileTypeOf[et]},
		{"general.quantization_version", uint32(2)},
		{arch + ".context_length", uint32(o.Context)},
		{arch + ".embedding_length", uint32(o.Hidden)},
		{arch + ".block_count", uint32(o.Layers)},
		{arch + ".feed_forward_length", uint32(o.ExpertFFN)},
		{arch + ".attention.head_count", uint32(o.Heads)},
		{arch + ".attention.head_count_kv", uint32(o.HeadsKV)},
		{arch + ".attention.key_length", uint32(o.HeadDim)},
		{arch + ".attention.value_length", uint32(o.HeadDim)},
		{arch + ".attention.layer_norm_rms_epsilon", float32(1e-6)},
		{arch + ".rope.freq_base", float32(1e6)},
		{arch + ".expert_count", uint32(o.Experts)},
		{arch + ".expert_used_count", uint32(o.TopK)},
		{arch + ".expert_feed_forward_length", uint32(o.ExpertFFN)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"lessim.synth.seed", o.Seed},
		{"lessim.synth.router_correlation", float32(o.RouterCorrelation)},
		{"lessim.synth.update_rms", float32(sc.update)},
		{"lessim.synth.attention_scale", float32(o.AttentionScale)},
		{"lessim.synth.attention_sharing", float32(o.AttentionSharing)},
	}
	if arch == "gpt-oss" {
		kvs = append(kvs, synthKV{arch + ".attention.sliding_window", uint32(synthSlidingWindow)})
	}
	return kvs
}

// synthSlidingWindow is the window of gpt-oss's sliding-window blocks.
const synthSlidingWindow = 128

// synthBiasStd is the std of a gpt-oss router bias: half a router logit's
// (about 1 for unit-RMS inputs), enough to change which experts win.
const synthBiasStd = 0.5

// addTensors adds every weight: embedding, output head and norm, then each
// layer's attention, norms, router and experts, drawn from o.Seed; the
// matrices in type qt, the routed experts in et.
func (o SynthOptions) addTensors(w *Writer, qt, et TypeID, sc synthScales) error {
	arch := o.Arch
	g := &synthGen{seed: o.Seed, q: o.Quantize}
	h, vocab := int64(o.Hidden), int64(o.Vocab)
	qdim, kvdim := int64(o.Heads*o.HeadDim), int64(o.HeadsKV*o.HeadDim)
	ffn, ne := int64(o.ExpertFFN), int64(o.Experts)
	ones := func(n int64) []byte { return AppendF32(nil, constF32(int(n), 1)) }
	qkNorm := int64(o.HeadDim) // qwen3moe normalizes q and k per head
	if arch == "olmoe" {
		qkNorm = h // olmoe over the whole projection
	}

	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Embedding rows have unit RMS: the residual stream starts at RMS 1.
	add(w.AddTensorFunc("token_embd.weight", qt, []int64{h, vocab}, g.matrix("token_embd.weight", qt, h, vocab, 1, 1)))
	add(w.AddTensor("output_norm.weight", TypeF32, []int64{h}, ones(h)))
	add(w.AddTensorFunc("output.weight", qt, []int64{h, vocab}, g.matrix("output.weight", qt, h, vocab, 1, sc.in)))

	routers := g.routers(o, sc)
	for l := range o.Layers {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", l, s) }
		mat := func(s string, n0, n1, n2 int64, std float64) { // a routed expert tensor
			add(w.AddTensorFunc(name(s), et, dims(n0, n1, n2), g.matrix(name(s), et, n0, n1*max(n2, 1), max(n2, 1), std)))
		}
		// Attention matrices may share structure across layers (AttentionSharing).
		attn := func(s string, n0, n1 int64, std float64) {
			srcs := chain(func(k int) string { return fmt.Sprintf("blk.%d.%s.weight", k, s) }, l, o.AttentionSharing)
			add(w.AddTensorFunc(name(s), qt, []int64{n0, n1}, g.mixed(srcs, qt, n0, n1, 1, std)))
		}
		add(w.AddTensor(name("attn_norm"), TypeF32, []int64{h}, ones(h)))
		attn("attn_q", h, qdim, sc.in)
		attn("attn_k", h, kvdim, sc.in)
		attn("attn_v", h, kvdim, sc.in)
		attn("attn_output", qdim, h, sc.attnOut)
		if arch != "gpt-oss" {
			add(w.AddTensor(name("attn_q_norm"), TypeF32, []int64{qkNorm}, ones(qkNorm)))
			add(w.AddTensor(name("attn_k_norm"), TypeF32, []int64{qkNorm}, ones(qkNorm)))
			add(w.AddTensor(name("ffn_norm"), TypeF32, []int64{h}, ones(h)))
		} else {
			add(w.AddTensor(name("post_attention_norm"), TypeF32, []int64{h}, ones(h)))
			add(w.AddTensor(name("attn_sinks"), TypeF32, []int64{int64(o.Heads)}, AppendF32(nil, constF32(o.Heads, 0))))
		}
		add(w.AddTensor(name("ffn_gate_inp"), TypeF32, []int64{h, ne}, AppendF32(nil, routers[l])))
		mat("ffn_gate_exps", h, ffn, ne, sc.in)
		mat("ffn_up_exps", h, ffn, ne, sc.in)
		mat("ffn_down_exps", ffn, h, ne, sc.down)
		if arch == "gpt-oss" {
			// Biases: the router's random (so they change the selection),
			// the others zero.
			bias := func(s string, shape ...int64) {
				n := int64(1)
				for _, d := range shape {
					n *= d
				}
				add(w.AddTensor(fmt.Sprintf("blk.%d.%s.bias", l, s), TypeF32, shape, AppendF32(nil, make([]float32, n))))
			}
			rb := make([]float32, o.Experts)
			uniform(g.rng(fmt.Sprintf("blk.%d.ffn_gate_inp.bias", l), 0), rb, synthBiasStd)
			add(w.AddTensor(fmt.Sprintf("blk.%d.ffn_gate_inp.bias", l), TypeF32, []int64{ne}, AppendF32(nil, rb)))
			bias("attn_q", qdim)
			bias("attn_k", kvdim)
			bias("attn_v", kvdim)
			bias("attn_output", h)
			bias("ffn_gate_exps", ffn, ne)
			bias("ffn_up_exps", ffn, ne)
			bias("ffn_down_exps", h, ne)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func dims(n0, n1, n2 int64) []int64 {
	if n2 > 0 {
		return []int64{n0, n1, n2}
	}
	return []int64{n0, n1}
}

func constF32(n int, v float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

// synthGen derives one independent PCG stream per (tensor, slice) from the seed, so
// the bytes do not depend on generation order or parallelism.
type synthGen struct {
	seed uint64
	q    Quantizer // for the types AppendType cannot write
}

func (g *synthGen) rng(name string, slice int) *rand.Rand {
	h := fnv.New64a()
	io.WriteString(h, name)
	return rand.New(rand.NewPCG(g.seed, h.Sum64()^(uint64(slice)+1)*0x9e3779b97f4a7c15))
}

// uniform fills xs with values uniform on [−√3·std, √3·std) (standard deviation std).
func uniform(r *rand.Rand, xs []float32, std float64) {
	a := float32(2 * math.Sqrt(3) * std)
	for i := 0; i+1 < len(xs); i += 2 {
		v := r.Uint64()
		xs[i] = (float32(uint32(v)>>8)/(1<<24) - 0.5) * a
		xs[i+1] = (float32(uint32(v>>32)>>8)/(1<<24) - 0.5) * a
	}
	if len(xs)%2 == 1 {
		xs[len(xs)-1] = (float32(r.Uint32()>>8)/(1<<24) - 0.5) * a
	}
}

// source is one random stream a tensor's values are mixed from, with its weight.
type source struct {
	name string // tensor whose streams are used
	coef float32
}

// matrix returns a fill function writing rows × n0 random values of std std from the
// tensor's own streams.
func (g *synthGen) matrix(name string, t TypeID, n0, rows, slices int64, std float64) func(io.Writer) error {
	return g.mixed([]source{{name, 1}}, t, n0, rows, slices, std)
}

// mixed returns a fill function writing rows × n0 values Σ coef·N(src), where N(src)
// are the uniform streams of std std named after each source. The rows are split
// into slices equal parts (the experts of a 3-D tensor) and each slice into chunks of
// at most about 4 Mi values; each chunk has its own stream (its index in the
// tensor), chunks are generated in parallel and written in order.
func (g *synthGen) mixed(srcs []source, t TypeID, n0, rows, slices int64, std float64) func(io.Writer) error {
	return func(w io.Writer) error {
		perSlice := rows / slices
		// Cap one work item at about 4 Mi values so huge 2-D tensors also stream.
		chunkRows := max(1, min(perSlice, (4<<20)/n0))
		type item struct {
			index        int // stream index within the tensor
			slice, nrows int64
		}
		var items []item
		for s := range slices {
			for r := int64(0); r < perSlice; r += chunkRows {
				items = append(items, item{len(items), s, min(chunkRows, perSlice-r)})
			}
		}
		return generateOrdered(w, len(items), func(i int) ([]byte, error) {
			it := items[i]
			xs := make([]float32, it.nrows*n0)
			if len(srcs) == 1 && srcs[0].coef == 1 {
				uniform(g.rng(srcs[0].name, it.index), xs, std)
				return encode(g.q, t, xs, n0)
			}
			noise := make([]float32, len(xs))
			for _, src := range srcs {
				uniform(g.rng(src.name, it.index), noise, std)
				for j, v := range noise {
					xs[j] += float32(src.coef * v) // NB: no FMA, for cross-platform bytes
				}
			}
			return encode(g.q, t, xs, n0)
		})
	}
}

// chain is the sources of layer l's copy of a per-layer tensor whose layers follow
// W_l = s·W_{l−1} + sqrt(1−s²)·N_l (W_0 = N_0), written out as
// W_l = s^l·N_0 + Σ_{0<k≤l} s^(l−k)·sqrt(1−s²)·N_k, so every layer streams on its own.
func chain(name func(layer int) string, l int, s float64) []source {
	if s == 0 {
		return []source{{name(l), 1}}
	}
	var out []source
	for k := 0; k <= l; k++ {
		c := math.Pow(s, float64(l-k))
		if k > 0 {
			c *= math.Sqrt(1 - s*s)
		}
		if c != 0 {
			out = append(out, source{name(k), float32(c)})
		}
	}
	return out
}

// generateOrdered runs gen(0..n-1) on GOMAXPROCS workers, at most two items per
// worker in flight, and writes the results to w in index order, so generation
// overlaps writing and memory stays bounded.
func generateOrdered(w io.Writer, n int, gen func(i int) ([]byte, error)) error {
	type result struct {
		b   []byte
		err error
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, 2*workers)
	next := make(chan int)
	stop := make(chan struct{})
	go func() {
		defer close(next)
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case next <- i:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b, err := gen(i)
				results[i] <- result{b, err}
			}
		}()
	}
	var err error
	for i := range n {
		r := <-results[i]
		<-slots
		if err = r.err; err == nil {
			_, err = w.Write(r.b)
		}
		if err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	return err
}

// routers builds every layer's router (n_embd × n_expert, F32) with
// W_l = ρ·W_{l−1} + sqrt(1−ρ²)·N_l, each of std 1/sqrt(n_embd).
func (g *synthGen) routers(o SynthOptions, sc synthScales) [][]float32 {
	n := o.Hidden * o.Experts
	out := make([][]float32, o.Layers)
	noise := make([]float32, n)
	rho := float32(sc.routerMix)
	keep := float32(math.Sqrt(1 - sc.routerMix*sc.routerMix))
	for l := range out {
		out[l] = make([]float32, n)
		uniform(g.rng(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", l), 0), noise, sc.in)
		for i := range noise {
			if l == 0 {
				out[l][i] = noise[i]
			} else {
				// NB: the conversions forbid fused multiply-add, which arm64 would
				// otherwise use, so files are byte-identical across platforms.
				out[l][i] = float32(rho*out[l-1][i]) + float32(keep*noise[i])
			}
		}
	}
	return out
}
