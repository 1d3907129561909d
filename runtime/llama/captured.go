//go:build llamacpp

package llama

/*
#include "capture.h"
*/
import "C"

import "unsafe"

// LayerCapture is what the capture copied for one block in the last Decode.
// Its slices alias C memory owned by the Context: valid until the next Decode
// or Close, so copy what you keep.
type LayerCapture struct {
	Block int
	// Rows is the number of token rows captured (tokens of the pass).
	Rows int
	// Logits are ffn_moe_logits, Rows × experts, row-major by token.
	Logits []float32
	// TopK are ffn_moe_topk: the selected experts in rank order, Rows × used.
	TopK []int32
	// Weights are the gate weights of TopK as the engine applies them: the last
	// of ffn_moe_weights_norm, ffn_moe_weights_softmax, ffn_moe_weights present.
	Weights []float32
	// Input is the router input (the router matmul's src[1], ffn_norm in most
	// architectures), Rows × n_embd; nil unless requested.
	Input []float32
	// ReadyNS is when the router logits were ready, in ns after the pass began.
	ReadyNS int64
}

// Captured returns the capture of block for the last Decode; ok is false when
// the context has no capture or the block produced no router logits (a dense
// block, or a layer the pass did not reach).
func (c *Context) Captured(block int) (lc LayerCapture, ok bool) {
	cp := c.cap
	if cp == nil || block < 0 || block >= int(cp.n_block) {
		return lc, false
	}
	rows := unsafe.Slice(cp.rows, int(cp.n_block)*C.LX_NKIND)[block*C.LX_NKIND : (block+1)*C.LX_NKIND]
	n := int(rows[C.LX_LOGITS])
	if n == 0 {
		return lc, false
	}
	capTok := int(cp.cap_tokens)
	ne, nx, nu := int(cp.n_embd), int(cp.n_expert), int(cp.n_used)
	lc = LayerCapture{Block: block, Rows: n}
	lc.Logits = unsafe.Slice((*float32)(unsafe.Pointer(cp.logits)), int(cp.n_block)*capTok*nx)[block*capTok*nx:][:n*nx]
	if k := int(rows[C.LX_TOPK]); k > 0 {
		lc.TopK = unsafe.Slice((*int32)(unsafe.Pointer(cp.topk)), int(cp.n_block)*capTok*nu)[block*capTok*nu:][:k*nu]
	}
	per := int(cp.n_block) * capTok * nu
	all := unsafe.Slice((*float32)(unsafe.Pointer(cp.weights)), 3*per)
	for stage := 2; stage >= 0; stage-- {
		if k := int(rows[C.LX_W_RAW+stage]); k > 0 {
			lc.Weights = all[stage*per+block*capTok*nu:][:k*nu]
			break
		}
	}
	if cp.want_input {
		if k := int(rows[C.LX_INPUT]); k > 0 {
			lc.Input = unsafe.Slice((*float32)(unsafe.Pointer(cp.input)), int(cp.n_block)*capTok*ne)[block*capTok*ne:][:k*ne]
		}
	}
	if t := int64(unsafe.Slice(cp.t_ns, int(cp.n_block))[block]); t != 0 {
		lc.ReadyNS = t - c.passBeg
	}
	return lc, true
}

// CapturedTensors counts the tensors the capture has copied since NewContext.
func (c *Context) CapturedTensors() int64 {
	if c.cap == nil {
		return 0
	}
	return int64(c.cap.n_calls)
}
