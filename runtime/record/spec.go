package record

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Speculative is greedy speculative decoding on the real engine (Record's
// and runtime/live's): each decode pass runs one llama_decode over a block
// of Block tokens, the last emitted token and Block−1 drafts from the
// Drafter, accepts the longest prefix of drafts that the target's own greedy
// tokens confirm, emits those and the target's token after them, and removes
// the rejected drafts' KV entries. A nil *Speculative decodes one token per
// pass.
type Speculative struct {
	// Block is the tokens verified per pass, 2..MaxBlock.
	Block int
	// Drafter is DrafterControlled, DrafterNgram or DrafterModel.
	Drafter string
	// DraftModel is DrafterModel's GGUF: a smaller model with the
	// target's vocabulary, decoding greedily on a context of its own.
	DraftModel string
	// Accept is the controlled drafter's α: each draft is the target's own
	// next greedy token with probability Accept, another token otherwise.
	Accept float64
	// Seed seeds the controlled drafter's draws (prompt i uses Seed+i).
	Seed uint64
}

// Drafters the real engine runs (experiment.Drafter kinds of the same names).
const (
	// DrafterControlled proposes, with probability Accept, the token the
	// target itself decodes greedily at that position, known from a plain
	// greedy decode of the same prompt run first (GreedyReference), and
	// another token otherwise, so acceptance is set on any model, a
	// synthetic one included. Its cost is a table lookup.
	DrafterControlled = "controlled"
	// DrafterNgram is prompt lookup decoding: the tokens that followed the
	// latest earlier occurrence of the context's last 3 (else 2, else 1)
	// tokens; no proposal (a one-token pass) when none occurred.
	DrafterNgram = "ngram"
	// DrafterModel is a draft model (Speculative.DraftModel): it decodes
	// the sequence greedily and proposes its own next tokens; its cost is
	// its decode, measured as any drafter's (SpecDecoder.DraftNS).
	DrafterModel = "model"
)

// MaxBlock bounds Speculative.Block (experiment.MaxSpecBlock).
const MaxBlock = 64

// ngramMax is the longest suffix the n-gram drafter looks up.
const ngramMax = 3

// Validate reports every problem with the settings at once.
func (s *Speculative) Validate() error {
	var errs []error
	if s.Block < 2 || s.Block > MaxBlock {
		errs = append(errs, fmt.Errorf("speculative block %d: want 2..%d tokens per verify pass", s.Block, MaxBlock))
	}
	switch s.Drafter {
	case DrafterControlled:
		if !(s.Accept >= 0 && s.Accept <= 1) {
			errs = append(errs, fmt.Errorf("controlled drafter: acceptance %g outside [0, 1]", s.Accept))
		}
	case DrafterNgram, DrafterModel:
		if s.Accept != 0 {
			errs = append(errs, fmt.Errorf("%s drafter: an acceptance applies to the controlled drafter only (this one's follows from what it drafts)", s.Drafter))
		}
	default:
		errs = append(errs, fmt.Errorf("drafter %q: the real engine runs %s, %s or %s", s.Drafter, DrafterControlled, DrafterNgram, DrafterModel))
	}
	if (s.Drafter == DrafterModel) != (s.DraftModel != "") {
		errs = append(errs, fmt.Errorf("drafter %q with draft model %q: a draft model goes with the %s drafter, and it needs one", s.Drafter, s.DraftModel, DrafterModel))
	}
	return errors.Join(errs...)
}

// controlled is DrafterControlled: ref[i] is the target's greedy token at
// position base+i.
type controlled struct {
	ref      []int32
	base     int
	accept   float64
	vocab    int
	rng      *rand.Rand
	diverged bool // the sequence left ref: drafts are no longer controlled
}

func newControlled(ref []int32, base int, accept float64, vocab int, seed uint64) *controlled {
	return &controlled{ref: ref, base: base, accept: accept, vocab: vocab, rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
}

func (c *controlled) draft(hist []int32, n int, dst []int32) []int32 {
	p := len(hist) // the first draft's position
	if i := p - 1 - c.base; i >= 0 && (i >= len(c.ref) || c.ref[i] != hist[p-1]) {
		c.diverged = true
	}
	for j := range n {
		i := p + j - c.base
		if i < 0 || i >= len(c.ref) {
			break
		}
		t := c.ref[i]
		// NB: one draw per draft, accepted or not, so the leading accepted
		// drafts are geometric in α whatever the block.
		if c.rng.Float64() >= c.accept && c.vocab > 1 {
			t = int32((int(t) + 1 + c.rng.IntN(c.vocab-1)) % c.vocab)
		}
		dst = append(dst, t)
	}
	return dst
}

// ngram is DrafterNgram.
type ngram struct{}

func (ngram) draft(hist []int32, n int, dst []int32) []int32 {
	for g := min(ngramMax, len(hist)-1); g >= 1; g-- {
		suffix := hist[len(hist)-g:]
		// NB: the latest earlier occurrence, so it is followed by at least one token.
		for i := len(hist) - g - 1; i >= 0; i-- {
			if slices.Equal(hist[i:i+g], suffix) {
				return append(dst, hist[i+g:min(i+g+n, len(hist))]...)
			}
		}
	}
	return dst
}

// accepted is how many of a verified block's tokens are emitted: the first
// (the last emitted token's successor, decoded now) and each draft while it
// equals the target's greedy token after the one before it (greedy[i] is
// the target's token after block[i]).
func accepted(block, greedy []int32) int {
	a := 1
	for a < len(block) && block[a] == greedy[a-1] {
		a++
	}
	return a
}
