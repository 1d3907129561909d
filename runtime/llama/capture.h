//go:build llamacpp

// capture.h declares lessim's C-side eval callback: it filters graph tensors by
// name and copies the routing tensors of every MoE layer into C buffers, so that
// Go is not called per tensor. See doc.go for the tensor names and layouts.
#ifndef LESSIM_CAPTURE_H
#define LESSIM_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include "ggml.h"
#include "llama.h"

// Capture kinds; the order is the buffer index used in rows[].
enum {
    LX_INPUT = 0,     // router input (src[1] of ffn_moe_logits), n_embd floats per token
    LX_LOGITS = 1,    // ffn_moe_logits, n_expert floats per token
    LX_TOPK = 2,      // ffn_moe_topk, n_used int32 per token
    LX_W_RAW = 3,     // ffn_moe_weights, n_used floats per token
    LX_W_SOFTMAX = 4, // ffn_moe_weights_softmax
    LX_W_NORM = 5,    // ffn_moe_weights_norm
    LX_NKIND = 6
};

typedef struct lessim_capture {
    int n_block, n_embd, n_expert, n_used, cap_tokens;
    bool want_input;
    float * input;     // [n_block][cap_tokens][n_embd]
    float * logits;    // [n_block][cap_tokens][n_expert]
    int32_t * topk;    // [n_block][cap_tokens][n_used]
    float * weights;   // [3][n_block][cap_tokens][n_used]: raw, softmax, norm
    int32_t * rows;    // [n_block][LX_NKIND] rows captured in the current pass
    int64_t * t_ns;    // [n_block] CLOCK_MONOTONIC ns when the router logits were ready
    int64_t n_calls;   // tensors copied since creation
    char err[256];     // first error of the current pass ("" = none)
    uintptr_t hook;    // cgo.Handle of a Go hook, 0 = none
} lessim_capture;

lessim_capture * lessim_capture_new(int n_block, int n_embd, int n_expert, int n_used, int cap_tokens, bool want_input);
void lessim_capture_free(lessim_capture * c);
void lessim_capture_reset(lessim_capture * c);
bool lessim_cb_eval(struct ggml_tensor * t, bool ask, void * user_data);
int64_t lessim_now_ns(void);
// lessim_decode runs llama_decode and measures it: wall-clock (CLOCK_MONOTONIC)
// and the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID; with 1 thread
// ggml computes on the caller, so this is the pass's compute time even when
// the machine is oversubscribed). *start_ns gets the wall-clock start.
int32_t lessim_decode(struct llama_context * ctx, struct llama_batch batch, int64_t * start_ns, int64_t * wall_ns, int64_t * cpu_ns);
void lessim_log_quiet(enum ggml_log_level level, const char * text, void * user_data);
void lessim_log_stderr(enum ggml_log_level level, const char * text, void * user_data);
const char * lessim_last_error(void);
void lessim_clear_last_error(void);

#endif
