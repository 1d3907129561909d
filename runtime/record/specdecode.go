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
// GreedyReference of the tokens to decode; seed seeds its draws.
func (s *Speculative) NewDecoder(lctx *llama.Context, prompt, ref []int32, vocab int, seed uint64) (*SpecDecoder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	d := &SpecDecoder{lctx: lctx, block: s.Block, d: ngram{}}
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
func (d *SpecDecoder) Next(max int) []int32 {
	t0 := time.Now()
	d.toks = append(d.toks[:0], d.hist[len(d.hist)-1])
	d.toks = d.d.draft(d.hist, min(d.block, max)-1, d.toks)
	d.draftNS = time.Since(t0).Nanoseconds()
	return d.toks
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
