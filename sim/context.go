package sim

import (
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/traces"
)

// passContext is what the context cost (Config.ContextCost) needs to know
// about the current pass: its tokens' positions.
type passContext struct {
	tokens int
	maxCtx int64 // context positions the pass's last token attends to: max(Pos) + 1
	sumCtx int64 // Σ over the pass's tokens of Pos + 1 (causal attention)
}

// beginContext records the positions of the pass over steps[i:j].
func (e *engine) beginContext(steps []*traces.Step) {
	c := passContext{tokens: len(steps)}
	for _, s := range steps {
		p := int64(max(s.Pos, 0)) + 1
		c.maxCtx = max(c.maxCtx, p)
		c.sumCtx += p
	}
	e.ctx = c
}

// contextTime is layer l's context term for the current pass, charged on the
// compute thread after its dense part:
//
//	attention: max(kv_bytes × maxCtx ÷ (bandwidth × efficiency), attn_flops × Σ(Pos+1) ÷ flops)
//	recurrent: max(2 × state_bytes ÷ (bandwidth × efficiency), tokens × state_flops ÷ flops)
//
// The pass reads the layer's KV cache once for all its tokens (up to the
// last position) and each token attends to its own position and those
// before it; a recurrent layer reads and writes its state once per pass.
func (e *engine) contextTime(l int) Time {
	ls := &e.m.Layers[l]
	switch ls.Mixer {
	case devices.MixerAttention:
		return max(durationNS(float64(ls.KVBytesPerToken)*float64(e.ctx.maxCtx), e.cm.memRate),
			durationNS(float64(ls.AttnFLOPsPerPosition)*float64(e.ctx.sumCtx), e.cm.flops))
	case devices.MixerRecurrent:
		return max(durationNS(2*float64(ls.StateBytes), e.cm.memRate),
			durationNS(float64(ls.StateFLOPsPerToken)*float64(e.ctx.tokens), e.cm.flops))
	}
	return 0
}

// computeContext charges layer l's context term (Config.ContextCost).
func (e *engine) computeContext(l int) {
	d := e.long(e.contextTime(l))
	e.compute(d)
	if e.bk.Measure {
		e.res.ContextNS += d
	}
}

// ModelMemory is the RAM a run holds besides the expert cache and the
// device's reserve: the resident (non-expert) weights, the KV cache of
// ctxTokens tokens and, with contextCost, the recurrent state of hybrid
// layers (LayerSpec.StateBytes, one sequence).
func ModelMemory(m *devices.ModelSpec, ctxTokens int, contextCost bool) int64 {
	b := m.NonExpertBytes + m.KVBytesPerToken*int64(ctxTokens)
	if contextCost {
		b += m.RecurrentStateBytes()
	}
	return b
}

// MemoryBudget is DeviceBudget with the recurrent state counted when
// contextCost is set (Config.ContextCost), and, when the device states an app
// limit, no more than the limit leaves after the runtime and the model
// (appLimitBudget): the memory left for the expert cache.
func MemoryBudget(m *devices.ModelSpec, d *devices.Device, ctxTokens int, contextCost bool) int64 {
	b := d.RAMBytes - d.ReserveBytes - ModelMemory(m, ctxTokens, contextCost)
	if d.AppLimitBytes > 0 {
		b = min(b, appLimitBudget(m, d, ctxTokens, contextCost))
	}
	return b
}

// appLimitBudget is what the app limit leaves for the expert cache: app
// limit − runtime − ModelMemory.
func appLimitBudget(m *devices.ModelSpec, d *devices.Device, ctxTokens int, contextCost bool) int64 {
	return d.AppLimitBytes - d.RuntimeBytes - ModelMemory(m, ctxTokens, contextCost)
}
