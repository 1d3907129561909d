// Package record records router traces from the real llama.cpp engine
// (runtime/llama): for every prompt, one batched prefill pass and then
// Options.Tokens single-token decode passes, each token's routing through
// every MoE layer written as one traces.Step (one Parquet row per token per
// MoE layer) with traces.Create.
//
// # What is captured, and from where
//
// Per token and MoE layer l (block b = the spec's Layers[l].Block):
//
//	Experts      ffn_moe_topk-b          selected experts, rank order (highest gate first)
//	Weights      ffn_moe_weights_norm-b  gate weights of Experts as the engine applies them
//	             (or _softmax / raw ffn_moe_weights when the architecture does not normalize)
//	Logits       ffn_moe_logits-b        router logits over all experts (Options.Logits)
//	RouterInput  src[1] of the router matmul (ffn_norm-b in qwen3moe), hidden floats
//	             (Options.RouterInputs)
//	Lookahead    for d = 1..LookaheadDepth: W_{l+d} · x_l (+ bias_{l+d}), where W_{l+d}
//	             is MoE layer l+d's router (blk.N.ffn_gate_inp.weight read from the
//	             GGUF with runtime/gguf, dequantized to float32; .bias when the file
//	             has one, as gpt-oss does) and x_l is layer l's router input;
//	             absent (null) when l+d is past the last MoE layer
//	ComputeNS    decode rows: wall-clock ns from layer l's router logits being ready to
//	             layer l+1's (last layer: to the end of the pass), i.e. the window a
//	             lookahead prefetch issued at layer l has before layer l+1 decides;
//	             it includes the capture's own small cost. 0 for prefill rows.
//
// Scores are float32; lookahead dot products accumulate in float64. Recomputing
// W_l · x_l from a recorded row reproduces the recorded logits to about 1e-7
// relative on the synthetic models (the tests require 1e-5).
//
// # Passes and phases
//
// Prefill rows have Phase Prefill; a prompt is prefilled in passes of at most
// 256 tokens (one pass for the usual prompt), rows of one pass sharing its
// Pass. Each decode token is its own Pass; passes are numbered in trace order. llama.cpp drops non-output rows
// before the last layer, so the recorder prefills with every prompt token an
// output (llama.Context.DecodeAll): every layer then sees every prompt token
// and every prefill row is complete, at the cost of computing the output head
// for the whole prompt once (hence the 256-token passes: llama.cpp holds
// vocab × tokens output logits). Generation does not stop at end-of-sequence tokens, so each
// prompt yields exactly Tokens decode rows. Sampling is llama.cpp's top-k +
// temperature + seeded draw (prompt i seeded with Seed+i) or greedy; the same
// model, prompts, options and seed give the same routing (tested with 1
// thread; other thread counts are not checked for bit-identical results).
//
// # Prompts
//
// Options.Prompts nil records the built-in set (prompts.txt, "builtin-v1":
// prose, code, lists, numbers, SQL, dialogue, French, a table). Prompt files
// (ReadPrompts) hold prompts separated by blank lines, so one prompt may span
// several lines (code); lines starting with '#' are comments.
//
// # Validation
//
// CheckModel checks the file in pure Go before llama.cpp sees it, because
// llama.cpp aborts the process on some bad inputs: missing file, not GGUF,
// truncated header or tensor data, no or unsupported architecture (the list
// lives in runtime/llama, llama.MoEArchitectures), no MoE layers, a MoE block
// without a router, top-k outside 1..experts. Options.Validate lists every
// option problem at once. After loading, llama.cpp's view of the model
// (experts, top-k, hidden, blocks) must match the GGUF header.
//
// # Provenance
//
// traces.Meta.Model is runtime/gguf's ModelSpec of the file; Meta.Info holds
// the model file name, size and sha256, the architecture, the engine
// ("llama.cpp via github.com/ollama/ollama v0.17.4"), the prompt set's name,
// hash and count, tokens per prompt, seed, sampler, threads and lessim version.
//
// # Caveats
//
// Recording uses the wall clock and cgo: the files that do carry the build
// tag llamacpp; option checking, prompt parsing and CheckModel do not, so a
// CLI built without llama.cpp can still validate its input. The logits are
// before any router bias (gpt-oss) and the selection may use biased
// probabilities (DeepSeek V3), so "top-k of logits = Experts" holds only for
// plain softmax routers such as qwen3moe; lookahead scores include a router
// bias tensor but not a selection bias (exp_probs_b). Expert residency is not modelled here: the whole model sits
// in the page cache, so ComputeNS is compute time, not load time.
package record
