// Package llama is lessim's small cgo binding to llama.cpp: load a GGUF model,
// tokenize, decode (batched prefill and single-token steps), sample, and
// capture every MoE layer's routing while the engine runs.
//
// # Build
//
// Everything that calls C carries the build tag llamacpp; without it the
// package holds only the list of supported MoE architectures. llama.cpp, ggml
// and ggml's CPU backend are compiled by cgo from the sources inside the Go
// module github.com/ollama/ollama v0.17.4 (blank import of its
// llama/llama.cpp/src package; first build several minutes, then cached). The
// headers are not copied: point the compiler at the module, e.g.
//
//	OD=$(go list -m -f '{{.Dir}}' github.com/ollama/ollama)
//	CGO_CPPFLAGS="-I$OD/llama/llama.cpp/include -I$OD/ml/backend/ggml/ggml/include" go build -tags llamacpp ./...
//
// # Engine settings
//
// Load maps the file with use_mmap on, no GPU layers and extra buffer types
// (weight repacking) off, so expert weights stay in the file mapping where a
// live driver can find and evict them. llama.cpp's log is silenced by default
// (a process-wide setting); the last error line is kept for error messages.
// Contexts default to 1 thread: ggml's spinning worker threads collapse when a
// shared core is busy. The physical batch equals the logical batch, so one
// Decode is one graph and one capture pass.
//
// # Capture
//
// With ContextOptions.Capture set, a C eval callback (capture.c) sees every
// graph node. For node names of the form "<name>-<block>" it asks the
// scheduler to stop after these, and copies them into C buffers:
//
//	ffn_moe_logits-l        router logits, F32 [experts × tokens]
//	  its src[1]            router input (ffn_norm-l in qwen3moe), F32 [hidden × tokens], on request
//	ffn_moe_topk-l          selected experts in rank order, I32 view [top-k × tokens] (strided: rows by nb[1])
//	ffn_moe_weights-l       gate weights of the selection, F32 [1 × top-k × tokens]
//	ffn_moe_weights_softmax-l, ffn_moe_weights_norm-l
//	                        the same after the architecture's softmax / normalisation;
//	                        the last one present is what the engine applies
//
// The name filter rejects non-MoE nodes with one 8-byte compare; rows are
// copied with memcpy from host buffers (ggml_backend_tensor_get otherwise),
// walking nb[1..3] for strided views. Go is not called during the pass unless a
// Hook is installed; after Decode, Captured(block) exposes the rows without a
// copy. The router input is taken from the router matmul's src[1] rather than
// the ffn_norm-l node because not every architecture names it ffn_norm; it is
// still allocated when the logits are ready (the expert matmuls read it later).
// ReadyNS stamps (CLOCK_MONOTONIC) when each layer's logits were ready.
//
// Caveats: ffn_moe_logits is before any router bias (gpt-oss adds one) and
// the selection may use biased probabilities (DeepSeek V3's exp_probs_b), so
// top-k of the logits equals the selection only for plain softmax routers
// such as qwen3moe. llama.cpp keeps only output rows after the last layer's
// attention: DecodeAll requests every row as an output so that every layer
// sees every token.
//
// The Hook (HookRouter at the logits, HookTopK at the selection, before the
// expert matmuls) is the place for a live scheduler: prefetch at the first,
// demand-load misses at the second.
//
// This package is the only place in lessim (with runtime/record) that reads
// the wall clock; cgo types never leave it.
package llama
