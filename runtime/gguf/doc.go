// Package gguf reads and writes GGUF model files (the format of llama.cpp/ggml) in
// pure Go, exposes the storage of a Mixture-of-Experts model (which file bytes hold
// expert e of layer l), and writes synthetic MoE models that llama.cpp loads and decodes.
//
// # Layout
//
// A GGUF v2/v3 file (gguf.h) is, little-endian:
//
//	"GGUF" | version u32 | tensor count u64 | KV count u64
//	KV pairs:     key (u64 length + bytes) | value type u32 | value
//	              (arrays: element type u32 | count u64 | elements; nested arrays allowed)
//	tensor infos: name | n_dims u32 | dims u64×n_dims | ggml type u32 | offset u64
//	padding to general.alignment (default 32)
//	data section: each tensor at data start + its offset (a multiple of the alignment)
//
// Dimensions are in ggml order: dims[0] (ne0) is the fastest-varying. A matrix with
// ne0 = n_in and ne1 = n_out stores output row r as n_in contiguous values, so a router
// blk.N.ffn_gate_inp.weight of dims [n_embd, n_expert] holds expert e's router vector
// at row e.
//
// # Experts are three regions
//
// Stock GGUF stores a layer's routed experts as three 3-D tensors, ffn_gate_exps and
// ffn_up_exps of dims [n_embd, n_ff_exp, n_expert] and ffn_down_exps of dims
// [n_ff_exp, n_embd, n_expert] (some converters fuse gate and up into ffn_gate_up_exps).
// The expert index is the slowest dimension, so expert e of a tensor of size S bytes at
// absolute offset O is the contiguous byte range [O + e·S/n, O + (e+1)·S/n), and one
// expert is three such regions in three different places of the file. MoE and
// ModelSpec report these ranges; ModelSpec counts one expert's bytes as their sum.
//
// # Units
//
// Sizes and offsets are bytes; offsets are absolute file offsets unless named
// relative. Work is FLOPs, 2 per weight per token (one multiply-add). Tensor sizes come
// from ggml's block layouts (ggml-common.h), e.g. Q8_0 is 34 bytes per 32 weights.
//
// # Synthetic models
//
// SynthMoE writes a qwen3moe model with random weights whose routing across layers is
// correlated like a trained residual stream's: SynthOptions.RouterCorrelation sets how
// well lookahead (layer l+1's router on layer l's router input) predicts layer l+1,
// and SynthOptions.AttentionScale with AttentionSharing how much consecutive tokens
// share experts; the table on RouterCorrelation gives the measured effect, from the
// reference pass and from llama.cpp itself (TrainedLikeSynthOptions is the preset
// closest to trained models). Its bytes depend only on the options (one seeded PCG
// stream per tensor chunk), and its data is generated in parallel while streaming to
// disk. The tests measure routing with a plain float32 forward pass of the file
// (forward_test.go), the same computation as llama.cpp's models/qwen3moe.cpp.
//
// # Checks against real files
//
// ModelSpec's per-layer ExpertBytes and DenseBytes reproduce the figures a real engine
// logged for Qwen3-30B-A3B-Q4_K_M.gguf (3,059,712 and 11,953,152 bytes on its Q6_K
// layers, 2,654,208 and 11,682,816 on the others; reference_test.go).
//
// Sources: gguf.h, ggml.h, ggml-common.h, ggml-quants.c (quantize_row_q8_0_ref),
// llama-model.cpp and models/qwen3moe.cpp of the llama.cpp vendored in
// github.com/ollama/ollama v0.17.4.
package gguf
