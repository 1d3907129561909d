package sim

import (
	"fmt"
	"slices"

	"github.com/lessim/lessim/traces"
)

// pass simulates one forward pass over steps, trace steps first,
// first+1, ... (one decode token, a speculative verify block, or a prompt),
// layer by layer:
//
//  1. the dense part (attention, router, shared expert) computes;
//  2. moment 1: the layer's router input is known; the policy may prefetch;
//  3. moment 2: the layer's top-k is known for every token; the union of the
//     pass's experts is classified (hit / in-flight / miss), misses are
//     admitted (moment 3 evicts for them) and their reads issued;
//  4. the routed experts compute, each only once resident: resident ones
//     first when CachedFirst, otherwise in rank order.
func (e *engine) pass(steps []*traces.Step, first int) error {
	start := e.now
	if err := e.passBody(steps, first); err != nil {
		return err
	}
	// NB: the sums of one pass can pass 2^63 inside devices' bounds
	// (docs/profile-bounds.md), and a sum that wrapped may be hidden by a
	// later stall (now jumps forward to the flash's clock). hi catches it,
	// at the cost of one OR per layer:
	//   - a large addition (a pass's work that scales with its tokens or
	//     context, at most maxTime+1; a draft block) goes through long,
	//     which marks hi when it would take now past maxTime; a load's is
	//     ORed into hi after it (loads per layer have no bound; each is
	//     below 2^63, so one that wraps now leaves hi negative);
	//   - small ones (one token's table parts, syncs, faults: each below
	//     2^44 ns) add up to less than 2^57 ns in one layer (at most 4096
	//     experts, and the faults of 4 GiB in 4 KiB pages), so from at most
	//     maxTime they cannot wrap now before the layer's end ORs it in. A
	//     stall may first take now anywhere below 2^63, and then they may;
	//     but the flash's clock only moves forward, so every later stall
	//     lands there again, and at the layer's end now is past maxTime or
	//     negative either way.
	// The flash's clock itself never wraps (it moves forward only, to event
	// times at most one read, below 2^57 ns, ahead), but a long wait may take
	// it past maxTime.
	if hi := e.hi | e.now; hi < 0 || hi > maxTime || e.now < start || e.fl.now > maxTime {
		return fmt.Errorf("simulated time passed %d years at step %d: the device is too slow for this trace", maxTime/(365*24*3600*1e9), first)
	}
	return nil
}

// maxTime bounds virtual time well below int64's limit (about 146 years).
const maxTime Time = 1 << 62

// passBody is pass without the overflow check.
func (e *engine) passBody(steps []*traces.Step, first int) error {
	tokens := len(steps)
	e.setPassScale(tokens)
	e.phase = steps[0].Phase
	e.bk.BeginPass(int64(first), tokens)
	if e.cfg.ContextCost {
		e.beginContext(steps)
	}
	if e.press.growth > 0 {
		e.press.grow(steps)
	}
	if e.press.faults > 0 {
		e.refaultWeights()
	}
	e.lookaheadPass(steps, first)
	for l := 0; l < e.nL; l++ {
		e.compute(e.denseTime(l, tokens))
		if e.cfg.ContextCost {
			e.computeContext(l)
		}

		// Moment 1 comes after the previous layer's experts are done: none is in use.
		if e.laSync {
			e.sync() // the lookahead router's scores come back to the host
		}
		if e.predict {
			e.predictCost(tokens) // the lookahead router runs on the CPU
		}
		e.lookahead(steps, l)
		if err := e.bk.Prefetch(&e.la); err != nil {
			return err
		}
		// Then experts that earlier reads brought in whole (gguf-mmap neighbours).
		if err := e.admitNeighbours(l); err != nil {
			return err
		}
		if e.gpuSync > 0 {
			e.sync() // the layer's top-k comes back to the host
		}

		// Moment 2: the union of the pass's selections, in token then rank order.
		e.bk.BeginLayer(l)
		for _, s := range steps {
			e.bk.Select(s.Layers[l].Experts)
		}
		e.fl.advance(e.now)
		if err := e.bk.Classify(); err != nil {
			return err
		}
		if err := e.computeExperts(l); err != nil {
			return err
		}
		e.hi |= e.now // see pass
		if invariants {
			e.checkLayer()
		}
	}
	e.compute(e.headTime(tokens))
	if invariants {
		e.checkPass()
	}
	return nil
}

// compute advances the compute thread by busy time d (a large d has been
// through long; see pass).
func (e *engine) compute(d Time) {
	d = e.cpu(d)
	if e.bk.Measure {
		e.res.ComputeNS += d
	}
}

// sync is one host-device synchronisation on the GPU backend: the compute
// thread waits for the device's queue before reading a result on the host.
func (e *engine) sync() {
	e.compute(e.gpuSync)
	if e.bk.Measure {
		e.res.GPUSyncNS += e.gpuSync
	}
}

// lookaheadPass sets up e.la for a pass over steps: the tokens' trace
// steps, and room for one score vector (and index) per token when the
// policy is shown scores. NB: once per pass; each layer then only points
// them at its own vectors (lookahead).
func (e *engine) lookaheadPass(steps []*traces.Step, first int) {
	la := &e.la
	la.Steps = la.Steps[:0]
	for t := range steps {
		la.Steps = append(la.Steps, int64(first+t))
	}
	if !e.laScores {
		la.Scores, la.Index = nil, nil
		return
	}
	la.Scores = slices.Grow(la.Scores[:0], len(steps))[:len(steps)]
	la.Index = slices.Grow(la.Index[:0], len(steps))[:len(steps)]
}

// lookahead fills e.la for moment 1 of layer l: the pass's router scores.
func (e *engine) lookahead(steps []*traces.Step, l int) {
	la := &e.la
	la.Layer = l
	if !e.laScores {
		return
	}
	for t, s := range steps {
		la.Scores[t] = s.Layers[l].Lookahead
		la.Index[t] = s.Layers[l].LookaheadIndex
	}
}

// computeExperts runs the routed experts of layer l for the current union.
func (e *engine) computeExperts(l int) error {
	union, cnt := e.bk.Union()
	run := func(idx int) {
		e.compute(e.expertTime(l, int(cnt[idx])))
	}
	if e.cfg.Barrier {
		for _, k := range union {
			if err := e.waitResident(k); err != nil {
				return err
			}
		}
		for idx := range union {
			run(idx)
		}
		return nil
	}
	if !e.cfg.CachedFirst {
		for idx, k := range union {
			if err := e.waitResident(k); err != nil {
				return err
			}
			run(idx)
		}
		return nil
	}
	// Each round computes the experts resident now, in union order, and keeps
	// the others pending, so later rounds scan only what is still loading.
	// NB: no flash advance between experts: the compute order of resident
	// experts does not change when the thread idles. When each expert is
	// used by one token (a one-token pass), a round's experts take one
	// table time each, so the round counts them and computes once.
	once := e.bk.once() && e.scale == 1
	e.fl.advance(e.now)
	// NB: a pending expert becomes resident only by a load landing
	// (Books.landed counts them), so a round that none landed before finds
	// nothing to run and is skipped without rescanning. With cores stated,
	// compute itself advances the flash (contend), so loads can land while
	// the scan below computes: the count is taken before it.
	scanned := e.bk.landed
	e.pend = e.pend[:0]
	n := 0
	for idx, k := range union {
		switch {
		case e.bk.keys[k].state != Resident:
			e.pend = append(e.pend, int32(idx))
		case once:
			n++
		default:
			run(idx)
		}
	}
	e.computeOnce(l, n)
	progressed := len(e.pend) < len(union)
	for len(e.pend) > 0 {
		if !progressed && e.bk.landed == scanned {
			// Nothing resident: fault in the first synchronous miss, or wait
			// for a load to land.
			if err := e.faultOrWait(union, l); err != nil {
				return err
			}
		}
		e.fl.advance(e.now)
		if e.bk.landed == scanned {
			progressed = false
			continue
		}
		scanned = e.bk.landed
		kept := e.pend[:0]
		n = 0
		for _, idx := range e.pend {
			switch {
			case e.bk.keys[union[idx]].state != Resident:
				kept = append(kept, idx)
			case once:
				n++
			default:
				run(int(idx))
			}
		}
		e.computeOnce(l, n)
		progressed = len(kept) < len(e.pend)
		e.pend = kept
	}
	return nil
}

// computeOnce computes n experts of layer l used by one token each. NB: n
// one-token times at once, exact (integer time): together below 2^57 ns
// (see pass), so no wrap.
func (e *engine) computeOnce(l, n int) {
	if n > 0 {
		e.compute(Time(n) * e.times.expert[l])
	}
}

// faultOrWait is what the compute thread does when none of its pending
// experts (e.pend, indices into union) is resident: with gguf-mmap it faults
// in the first synchronous miss; otherwise it stalls until a load lands.
func (e *engine) faultOrWait(union []Key, l int) error {
	if e.ggufMmap {
		for _, idx := range e.pend {
			if k := union[idx]; e.bk.keys[k].syncLoad {
				e.faultIn(k)
				return nil
			}
		}
	}
	// NB: until some load lands, no pending expert can become resident (nor
	// a synchronous one appear: only Classify admits those), so the thread
	// waits through flash events without rescanning. After each event it
	// takes the others due at the same time, as a rescan's advance would:
	// one of them may land a load.
	for landed := e.bk.landed; e.bk.landed == landed; {
		if !e.waitAnyRead() {
			return fmt.Errorf("internal: %d experts of layer %d never became resident", len(e.pend), l)
		}
		e.fl.advance(e.now)
	}
	return nil
}
