package sim

import (
	"github.com/lessim/lessim/traces"
)

// pressure is the memory-pressure model, on when the device states the
// memory the OS lets the app keep resident (Device.AppLimitBytes).
//
// The app's footprint is the expert cache (CacheBytes, full), the resident
// weights, the KV cache of the run's context, the recurrent state (with
// ContextCost) and the runtime (Device.RuntimeBytes). When it exceeds the
// limit by O bytes, the OS reclaims clean file-backed pages: the mapped
// non-expert weights (the expert cache, KV cache and runtime are anonymous
// memory it cannot drop). Every pass reads all non-expert weights, so the
// least recently read O bytes are dropped again while the rest of the pass
// runs, and every pass faults them back: O bytes (at most the non-expert
// weights) re-read per pass through synchronous faults of max(page,
// read-ahead) bytes, each costing FaultNS of CPU, on the compute thread at
// the start of the pass. NB: strict LRU over a cyclic scan larger than
// memory would refault every weight, not O bytes: this is the optimistic
// end, which an OS's active/inactive lists approach.
type pressure struct {
	footprint int64 // bytes the app holds
	overflow  int64 // footprint − app limit (> 0)
	refault   int64 // bytes re-read per pass: min(overflow, non-expert weights)
	chunk     int64 // bytes one fault reads
	faults    int64 // faults per pass: ceil(refault / chunk)
	ctxTokens int

	// Over time (Device.GrowthBytes): the footprint is counted at each
	// pass as base + kv × (the pass's last position + 1) + growth × the
	// tokens processed so far; faults then change pass by pass.
	growth, base, kv, limit, nonExpert, seen int64
}

// newPressure sizes the model for steps: zero when the device states no app
// limit, no faults when the footprint fits under it.
func newPressure(cfg *Config, ctx int) pressure {
	d := cfg.Device
	if d.AppLimitBytes <= 0 {
		return pressure{}
	}
	p := pressure{ctxTokens: ctx, chunk: max(d.Flash.PageBytes, d.Flash.ReadAheadBytes)}
	if d.GrowthBytes > 0 {
		m0 := ModelMemory(cfg.Model, 0, cfg.ContextCost)
		p.growth, p.limit, p.nonExpert = d.GrowthBytes, d.AppLimitBytes, cfg.Model.NonExpertBytes
		p.base = cfg.CacheBytes + m0 + d.RuntimeBytes
		p.kv = ModelMemory(cfg.Model, 1, cfg.ContextCost) - m0
		return p // NB: sized pass by pass (grow)
	}
	p.footprint = cfg.CacheBytes + ModelMemory(cfg.Model, ctx, cfg.ContextCost) + d.RuntimeBytes
	p.overflow = p.footprint - d.AppLimitBytes
	if p.overflow <= 0 {
		return p
	}
	p.refault = min(p.overflow, cfg.Model.NonExpertBytes)
	p.faults = (p.refault + p.chunk - 1) / p.chunk
	return p
}

// grow counts the footprint of the pass over steps (Device.GrowthBytes):
// the KV cache up to its last position and the growth of the tokens so
// far, this pass's included; faults follow it.
func (p *pressure) grow(steps []*traces.Step) {
	p.seen += int64(len(steps))
	p.footprint = p.base + p.kv*(int64(steps[len(steps)-1].Pos)+1) + p.growth*p.seen
	p.overflow = p.footprint - p.limit
	p.refault, p.faults = 0, 0
	if p.overflow > 0 {
		p.refault = min(p.overflow, p.nonExpert)
		p.faults = (p.refault + p.chunk - 1) / p.chunk
	}
}

// refaultWeights faults the dropped weights back in at the start of a pass:
// per fault FaultNS of CPU, then a synchronous read of one chunk through the
// flash (sharing it with reads in flight), the compute thread waiting.
func (e *engine) refaultWeights() {
	p := &e.press
	start := e.now
	for range p.faults {
		e.syncFault(p.chunk)
	}
	if e.bk.Measure {
		e.res.PressureFaults += p.faults
		e.res.PressureFaultBytes += p.faults * p.chunk
		e.res.PressureNS += e.now - start
	}
}

// maxPosSource is a Source that knows its largest position without being
// read (a slice; a trace file, from its footer's statistics).
type maxPosSource interface{ MaxPos() (int32, bool) }

// traceContext is the context the memory-pressure model charges: the
// configured context tokens, or else the trace's longest sequence when the
// source can tell it before the run (0 when it cannot: the KV cache is then
// left out of the footprint).
func traceContext(cfg *Config, src traces.Source) int {
	if cfg.ContextTokens > 0 {
		return cfg.ContextTokens
	}
	if m, ok := src.(maxPosSource); ok {
		if p, ok := m.MaxPos(); ok {
			return int(p) + 1
		}
	}
	return 0
}
