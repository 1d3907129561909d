//go:build llamacpp

package llama

/*
#include <stdlib.h>
#include "llama.h"
#include "capture.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// ContextOptions configures NewContext.
type ContextOptions struct {
	Threads int // compute threads; default 1 (ggml's spinning threads collapse on busy shared cores)
	Ctx     int // context length in tokens; default 512
	Batch   int // largest number of tokens one Decode may submit; default min(Ctx, 512)
	// Capture installs the routing capture (see CaptureOptions); nil decodes
	// without any eval callback.
	Capture *CaptureOptions
}

// CaptureOptions configures the eval callback that copies routing tensors.
type CaptureOptions struct {
	// RouterInputs also copies each MoE layer's router input (n_embd floats per
	// token), needed for lookahead scores.
	RouterInputs bool
	// Hook, when set, is called synchronously from inside Decode at two moments
	// per MoE layer: HookRouter (router input and logits known, before top-k) and
	// HookTopK (selection known, before the expert matmuls run). It may read
	// Captured(block) for that block. It costs one cgo callback per moment: leave
	// it nil when only recording.
	Hook func(kind HookKind, block int)
}

// HookKind says which moment a Hook call reports.
type HookKind int

const (
	// HookRouter fires when a layer's router logits (and input) are known.
	HookRouter HookKind = C.LX_LOGITS
	// HookTopK fires when a layer's selected experts are known.
	HookTopK HookKind = C.LX_TOPK
)

// Context is one llama.cpp inference context: a KV cache, a position and
// optionally a capture. It is not safe for concurrent use.
type Context struct {
	model   *Model
	ctx     *C.struct_llama_context
	cap     *C.lessim_capture
	hook    cgo.Handle
	batch   C.struct_llama_batch
	nBatch  int
	nCtx    int
	pos     int
	passNS  int64
	passCPU int64
	passBeg int64
}

func (o *ContextOptions) ensureDefaults() {
	if o.Threads == 0 {
		o.Threads = 1
	}
	if o.Ctx == 0 {
		o.Ctx = 512
	}
	if o.Batch == 0 {
		o.Batch = min(o.Ctx, 512)
	}
}

// Validate reports every problem with the options at once.
func (o *ContextOptions) Validate() error {
	var errs []error
	if o.Threads < 1 {
		errs = append(errs, fmt.Errorf("threads %d: want >= 1", o.Threads))
	}
	if o.Ctx < 1 {
		errs = append(errs, fmt.Errorf("context %d tokens: want >= 1", o.Ctx))
	}
	if o.Batch < 1 || o.Batch > o.Ctx {
		errs = append(errs, fmt.Errorf("batch %d tokens: want 1..context (%d)", o.Batch, o.Ctx))
	}
	return errors.Join(errs...)
}

// NewContext creates an inference context on m.
func (m *Model) NewContext(opt ContextOptions) (*Context, error) {
	if m == nil || m.m == nil {
		return nil, errors.New("new context: model is closed")
	}
	opt.ensureDefaults()
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("new context: %w", err)
	}
	if opt.Capture != nil && (m.info.Experts <= 0 || m.info.ExpertsUsed <= 0) {
		return nil, fmt.Errorf("new context: capture needs a MoE model; %s has expert_count %d, expert_used_count %d",
			m.info.Arch, m.info.Experts, m.info.ExpertsUsed)
	}
	p := C.llama_context_default_params()
	p.n_ctx = C.uint32_t(opt.Ctx)
	p.n_batch = C.uint32_t(opt.Batch)
	p.n_ubatch = C.uint32_t(opt.Batch) // one graph per Decode, so one capture pass
	p.n_seq_max = 1
	p.n_threads = C.int32_t(opt.Threads)
	p.n_threads_batch = C.int32_t(opt.Threads)
	p.no_perf = true
	c := &Context{model: m, nBatch: opt.Batch, nCtx: opt.Ctx}
	if opt.Capture != nil {
		i := m.info
		c.cap = C.lessim_capture_new(C.int(i.Blocks), C.int(i.Embd), C.int(i.Experts), C.int(i.ExpertsUsed),
			C.int(opt.Batch), C.bool(opt.Capture.RouterInputs))
		if c.cap == nil {
			return nil, errors.New("new context: out of memory for the capture buffers")
		}
		if opt.Capture.Hook != nil {
			c.hook = cgo.NewHandle(opt.Capture.Hook)
			c.cap.hook = C.uintptr_t(c.hook)
		}
		p.cb_eval = C.ggml_backend_sched_eval_callback(C.lessim_cb_eval)
		p.cb_eval_user_data = unsafe.Pointer(c.cap)
	}
	C.lessim_clear_last_error()
	c.ctx = C.llama_init_from_model(m.m, p)
	if c.ctx == nil {
		c.freeCapture()
		return nil, fmt.Errorf("new context: llama.cpp refused it%s", lastError())
	}
	c.batch = C.llama_batch_init(C.int32_t(opt.Batch), 0, 1)
	return c, nil
}

// Reset clears the KV cache and restarts positions at 0 (a new sequence).
func (c *Context) Reset() {
	C.llama_memory_clear(C.llama_get_memory(c.ctx), C.bool(true))
	c.pos = 0
}

// Pos is the position the next decoded token gets.
func (c *Context) Pos() int { return c.pos }

// Size is the context length in tokens (ContextOptions.Ctx).
func (c *Context) Size() int { return c.nCtx }

// Truncate removes the KV cache entries of positions pos and after (a
// speculative verify pass's rejected drafts), so the next decoded token
// gets position pos.
func (c *Context) Truncate(pos int) error {
	if pos < 0 || pos > c.pos {
		return fmt.Errorf("truncate to position %d: the context holds positions 0..%d", pos, c.pos-1)
	}
	if !bool(C.llama_memory_seq_rm(C.llama_get_memory(c.ctx), 0, C.llama_pos(pos), -1)) {
		return fmt.Errorf("truncate to position %d: llama.cpp cannot remove part of this model's memory (a recurrent state)", pos)
	}
	c.pos = pos
	return nil
}

// Argmax is the greedy token of the i-th output row of the last Decode
// (-1 = last): the lowest id among the largest logits, as llama.cpp's
// greedy sampler picks it.
func (c *Context) Argmax(i int) int32 {
	l := c.Logits(i)
	best := int32(0)
	for t, v := range l {
		if v > l[best] {
			best = int32(t)
		}
	}
	return best
}

// Decode runs one forward pass over tokens at the next positions, computing
// logits for the last token only (a normal prefill or decode step).
func (c *Context) Decode(tokens []int32) error { return c.decode(tokens, false) }

// DecodeAll is Decode with outputs requested for every token. The recorder
// prefills this way because llama.cpp drops non-output rows before the last
// layer: with every row an output, every layer sees every prompt token.
func (c *Context) DecodeAll(tokens []int32) error { return c.decode(tokens, true) }

func (c *Context) decode(tokens []int32, all bool) error {
	if c.ctx == nil {
		return errors.New("decode: context is closed")
	}
	n := len(tokens)
	switch {
	case n == 0:
		return errors.New("decode: no tokens")
	case n > c.nBatch:
		return fmt.Errorf("decode: %d tokens exceed the batch size %d", n, c.nBatch)
	case c.pos+n > c.nCtx:
		return fmt.Errorf("decode: positions %d..%d exceed the context of %d tokens", c.pos, c.pos+n-1, c.nCtx)
	}
	vocab := int32(c.model.info.Vocab)
	b := &c.batch
	tok := unsafe.Slice(b.token, n)
	pos := unsafe.Slice(b.pos, n)
	nseq := unsafe.Slice(b.n_seq_id, n)
	seq := unsafe.Slice(b.seq_id, n)
	out := unsafe.Slice(b.logits, n)
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("decode: token %d at index %d outside the vocabulary [0, %d)", t, i, vocab)
		}
		tok[i] = C.llama_token(t)
		pos[i] = C.llama_pos(c.pos + i)
		nseq[i] = 1
		*seq[i] = 0
		out[i] = 0
		if all || i == n-1 {
			out[i] = 1
		}
	}
	b.n_tokens = C.int32_t(n)
	if c.cap != nil {
		C.lessim_capture_reset(c.cap)
	}
	var beg, wall, cpu C.int64_t
	rc := C.lessim_decode(c.ctx, *b, &beg, &wall, &cpu)
	c.passBeg, c.passNS, c.passCPU = int64(beg), int64(wall), int64(cpu)
	if rc != 0 {
		return fmt.Errorf("decode: llama_decode returned %d%s", int(rc), lastError())
	}
	c.pos += n
	if c.cap != nil && c.cap.err[0] != 0 {
		return fmt.Errorf("decode: %s", C.GoString(&c.cap.err[0]))
	}
	return nil
}

// PassNS is the wall-clock duration of the last Decode in nanoseconds.
func (c *Context) PassNS() int64 { return c.passNS }

// PassCPUNS is the CPU time the calling thread spent in the last Decode. With
// Threads = 1 ggml computes on that thread, so this is the pass's compute time
// undisturbed by other processes on a busy machine; with more threads it
// misses the workers' time.
func (c *Context) PassCPUNS() int64 { return c.passCPU }

// Logits returns the output logits of the i-th output row of the last Decode
// (-1 = last). The slice aliases llama.cpp memory valid until the next Decode.
func (c *Context) Logits(i int) []float32 {
	p := C.llama_get_logits_ith(c.ctx, C.int32_t(i))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), c.model.info.Vocab)
}

// Close frees the context and its capture buffers.
func (c *Context) Close() error {
	if c == nil || c.ctx == nil {
		return errors.New("close context: already closed")
	}
	C.llama_batch_free(c.batch)
	C.llama_free(c.ctx)
	c.ctx = nil
	c.freeCapture()
	return nil
}

func (c *Context) freeCapture() {
	if c.cap != nil {
		C.lessim_capture_free(c.cap)
		c.cap = nil
	}
	if c.hook != 0 {
		c.hook.Delete()
		c.hook = 0
	}
}
