package traces

// Phase says whether a token was part of the prompt (prefill) or generated (decode).
type Phase uint8

const (
	// Prefill tokens are processed together in one batched pass.
	Prefill Phase = 0
	// Decode tokens are generated one pass each (or a block per
	// speculative verify pass).
	Decode Phase = 1
	// Draft is a rejected speculative draft: a token a verify pass ran
	// (Pass is that pass's) after the tokens it accepted, and did not
	// accept. Its KV entry was removed, and the position it held is the one
	// the next accepted token takes. It emits nothing.
	Draft Phase = 2
)

func (p Phase) String() string {
	switch p {
	case Prefill:
		return "prefill"
	case Draft:
		return "draft"
	}
	return "decode"
}

// Step is one token's routing through every MoE layer: the in-memory form of the
// trace rows that share (Seq, Pos). Layers[i] is MoE layer i of the model spec.
type Step struct {
	Seq   int32 // sequence (prompt) index within the trace
	Pos   int32 // token position within the sequence
	Phase Phase
	// Pass groups tokens that the recording engine processed in one forward pass
	// (all prompt tokens of a prefill; one token per decode pass; a
	// speculative verify pass's accepted tokens and then its rejected
	// drafts). -1 when unknown (never for a Draft).
	Pass   int32
	Layers []LayerStep
}

// LayerStep is one token at one MoE layer.
type LayerStep struct {
	// Experts are the selected experts in rank order (highest gate first); len = top-k.
	Experts []int32
	// Weights are the normalized gate weights of Experts (may be nil).
	Weights []float32
	// Logits are the router logits over all experts (nil when not recorded).
	Logits []float32
	// Lookahead[d-1] are the router scores of MoE layer i+d computed from this
	// layer's router input (len = experts), for d = 1..depth; nil when absent.
	// They are known at the moment this layer's router input is known.
	Lookahead [][]float32
	// LookaheadIndex[d-1] are Lookahead[d-1]'s best candidates, filled by
	// IndexLookahead, or by the Reader from a compact-lookahead file (Meta.LookaheadTop); nil until then.
	LookaheadIndex []CandidateIndex
	// RouterInput is the router's input vector (the ffn_norm output, len = hidden),
	// recorded only on request; nil otherwise.
	RouterInput []float32
	// Hit is the recording engine's residency flag per expert (imported traces
	// only; nil otherwise): 1 when the expert was already cached.
	Hit []bool
	// ComputeNS is the recording engine's measured time for this layer, 0 if unknown.
	ComputeNS int64
}

// Source yields a trace's steps in order, like bufio.Scanner: call Next until it
// returns false, then check Err. The Step returned by Step is valid until the
// next call to Next.
type Source interface {
	Next() bool
	Step() *Step
	Err() error
}
