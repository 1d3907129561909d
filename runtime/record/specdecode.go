//go:build llamacpp

package record

import (
	"errors"
	"fmt"
	"time"

	"github.com/lessim/lessim/runtime/llama"
)

// drafter proposes a verify pass's drafts (controlled, ngram).
type drafter interface {
	// draft appends to dst at most n tokens proposed to follow hist (the
	// sequence so far, prompt included; its last token is the block's
	// first, not decoded yet) and returns it.
	draft(hist []int32, n int, dst []int32) []int32
}

// SpecDecoder runs speculative decoding (Speculative) on one sequence of a
// context whose prompt is prefilled, every row an output: the caller
// decodes each block Next returns with DecodeAll (with its own hooks and
// timing) and then calls Verify.
type SpecDecoder struct {
	lctx    *llama.Context
	dm      *draftModel // the model drafter, nil for others
	block   int
	d       drafter
	ctl     *controlled // the controlled drafter, nil for others
	hist    []int32     // prompt, emitted tokens, then the next token (not decoded yet)
	toks    []int32     // the current block
	greedy  []int32
	draftNS int64
}

// NewDecoder starts decoding after prompt, prefilled in lctx (its last row's
// greedy token is the first decoded). The controlled drafter needs ref, the
// GreedyReference of the tokens to decode; seed seeds its draws. The model
// drafter loads its model (vocab tokens, as the target's) on a context of
// ctxLen tokens with threads compute threads. Close frees it.
func (s *Speculative) NewDecoder(lctx *llama.Context, prompt, ref []int32, vocab int, seed uint64, ctxLen, threads int) (*SpecDecoder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	d := &SpecDecoder{lctx: lctx, block: s.Block, d: ngram{}}
	if s.Drafter == DrafterModel {
		dm, err := openDraftModel(s.DraftModel, vocab, ctxLen, threads)
		if err != nil {
			return nil, err
		}
		d.dm, d.d = dm, dm
	}
	d.hist = append(append(make([]int32, 0, len(prompt)+len(ref)+1), prompt...), lctx.Argmax(-1))
	if s.Drafter == DrafterControlled {
		if len(ref) == 0 {
			return nil, errors.New("controlled drafter: no greedy reference to propose from")
		}
		d.ctl = newControlled(ref, len(prompt), s.Accept, vocab, seed)
		d.d = d.ctl
	}
	return d, nil
}

// Reference is the greedy reference the drafter needs for tokens decode
// tokens after prompt: GreedyReference for the controlled drafter, nil
// for others.
func (s *Speculative) Reference(model *llama.Model, prompt []int32, tokens, threads int) ([]int32, error) {
	if s == nil || s.Drafter != DrafterControlled {
		return nil, nil
	}
	return GreedyReference(model, prompt, tokens, threads)
}

// Next drafts the next verify block of at most max tokens (max ≥ 1: the
// tokens left to emit) and returns it: the next token, then the drafts.
// The slice is valid until the next call.
func (d *SpecDecoder) Next(max int) ([]int32, error) {
	t0 := time.Now()
	d.toks = append(d.toks[:0], d.hist[len(d.hist)-1])
	d.toks = d.d.draft(d.hist, min(d.block, max)-1, d.toks)
	d.draftNS = time.Since(t0).Nanoseconds()
	if d.dm != nil && d.dm.err != nil {
		return nil, d.dm.err
	}
	return d.toks, nil
}

// Close frees the model drafter's model and context (nothing for others).
func (d *SpecDecoder) Close() {
	if d.dm != nil {
		d.dm.close()
	}
}

// DraftNS is the wall-clock time the last Next spent drafting.
func (d *SpecDecoder) DraftNS() int64 { return d.draftNS }

// Verify reads the greedy tokens of the block the caller has decoded,
// accepts the longest confirmed prefix of drafts, removes the rejected
// drafts' KV entries and returns the tokens the pass emitted (its block's
// first ones).
func (d *SpecDecoder) Verify() (int, error) {
	d.greedy = d.greedy[:0]
	for i := range d.toks {
		d.greedy = append(d.greedy, d.lctx.Argmax(i))
	}
	a := accepted(d.toks, d.greedy)
	if a < len(d.toks) {
		if err := d.lctx.Truncate(d.lctx.Pos() - (len(d.toks) - a)); err != nil {
			return 0, err
		}
	}
	d.hist = append(append(d.hist, d.toks[1:a]...), d.greedy[a-1])
	return a, nil
}

// Diverged reports whether the decoded sequence left the controlled
// drafter's reference (batched and one-token passes rounding apart on a
// near tie): its drafts were then no longer the target's tokens with
// probability α.
func (d *SpecDecoder) Diverged() bool { return d.ctl != nil && d.ctl.diverged }

// GreedyReference decodes n tokens after prompt greedily with model, one
// token per pass, on a context of its own (no capture) with the prompt
// prefilled as Record and live prefill it, and returns the token fed at
// each position from the prompt's end: the target's own tokens, which the
// controlled drafter proposes.
func GreedyReference(model *llama.Model, prompt []int32, n, threads int) ([]int32, error) {
	lctx, err := model.NewContext(llama.ContextOptions{Threads: threads, Ctx: len(prompt) + n + 1, Batch: max(min(len(prompt), prefillChunk), 1)})
	if err != nil {
		return nil, err
	}
	defer lctx.Close()
	for off := 0; off < len(prompt); off += prefillChunk {
		if err := lctx.DecodeAll(prompt[off:min(off+prefillChunk, len(prompt))]); err != nil {
			return nil, fmt.Errorf("greedy reference: %w", err)
		}
	}
	ref := make([]int32, 0, n)
	for len(ref) < n {
		ref = append(ref, lctx.Argmax(-1))
		if len(ref) == n {
			break
		}
		if err := lctx.Decode(ref[len(ref)-1:]); err != nil {
			return nil, fmt.Errorf("greedy reference: %w", err)
		}
	}
	return ref, nil
}

// draftModel is DrafterModel: a draft model decoding the sequence greedily
// on a context of its own. toks are the tokens in its KV cache; a draft
// first rolls it back to the longest prefix it shares with the sequence
// (the rejected drafts go) and decodes the rest.
type draftModel struct {
	m    *llama.Model
	ctx  *llama.Context
	toks []int32
	err  error // the first decode error; Next reports it
}

func openDraftModel(path string, vocab, ctxLen, threads int) (*draftModel, error) {
	f, err := openGGUF(path, "draft model")
	if err != nil {
		return nil, err
	}
	f.Close()
	m, err := llama.Load(path, llama.ModelOptions{})
	if err != nil {
		return nil, fmt.Errorf("draft model: %w", err)
	}
	if v := m.Info().Vocab; v != vocab {
		m.Close()
		return nil, fmt.Errorf("draft model %s: %d tokens in its vocabulary, the target's %d: a draft model must share the target's vocabulary", path, v, vocab)
	}
	ctx, err := m.NewContext(llama.ContextOptions{Threads: threads, Ctx: ctxLen, Batch: min(ctxLen, prefillChunk)})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("draft model: %w", err)
	}
	return &draftModel{m: m, ctx: ctx}, nil
}

func (d *draftModel) draft(hist []int32, n int, dst []int32) []int32 {
	if d.err != nil || n <= 0 {
		return dst
	}
	keep := 0
	for keep < min(len(d.toks), len(hist)-1) && d.toks[keep] == hist[keep] {
		keep++
	}
	if keep < len(d.toks) {
		if d.err = d.ctx.Truncate(keep); d.err != nil {
			return dst
		}
		d.toks = d.toks[:keep]
	}
	for off := keep; off < len(hist); off += prefillChunk {
		if d.err = d.ctx.Decode(hist[off:min(off+prefillChunk, len(hist))]); d.err != nil {
			return dst
		}
	}
	d.toks = append(d.toks, hist[keep:]...)
	for j := range n {
		t := d.ctx.Argmax(-1)
		dst = append(dst, t)
		if j == n-1 || d.ctx.Pos() >= d.ctx.Size() {
			break
		}
		if d.err = d.ctx.Decode([]int32{t}); d.err != nil {
			return dst
		}
		d.toks = append(d.toks, t)
	}
	return dst
}

func (d *draftModel) close() {
	d.ctx.Close()
	d.m.Close()
}
