package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lessim/lessim/traces"
)

// pass simulates one forward pass over steps[i:j] (one decode token, a
// speculative verify block, or a prompt), layer by layer:
//
//  1. the dense part (attention, router, shared expert) computes;
//  2. moment 1: the layer's router input is known; the policy may prefetch;
//  3. moment 2: the layer's top-k is known for every token; the union of the
//     pass's experts is classified (hit / in-flight / miss), misses are
//     admitted (moment 3 evicts for them) and their reads issued;
//  4. the routed experts compute, each only once resident: resident ones
//     first when CachedFirst, otherwise in rank order.
func (e *engine) pass(steps []traces.Step, i, j int) error {
	e.passNo++
	tokens := j - i
	first := int64(i)
	phase := steps[i].Phase
	for l := 0; l < e.nL; l++ {
		e.compute(e.denseTime(l, tokens))

		// Moment 1 comes after the previous layer's experts are done: none is in use.
		e.stamp++
		if err := e.lookahead(steps, i, j, l, first); err != nil {
			return err
		}

		// Moment 2: the union of the pass's selections, in token then rank order.
		e.stamp++
		e.union, e.cnt, e.last = e.union[:0], e.cnt[:0], e.last[:0]
		row := int32(0)
		for t := i; t < j; t++ {
			for _, x := range steps[t].Layers[l].Experts {
				k := Key(l*e.nE + int(x))
				row++
				if e.keys[k].seen == e.stamp {
					e.cnt[e.keys[k].pos]++
					e.last[e.keys[k].pos] = row
					continue
				}
				e.keys[k].seen = e.stamp
				e.keys[k].pos = int32(len(e.union))
				e.union = append(e.union, k)
				e.cnt = append(e.cnt, 1)
				e.last = append(e.last, row)
			}
		}
		e.fl.advance(e.now)
		for _, k := range e.union {
			st := e.keys[k].state
			if e.tap != nil {
				e.tap(UseRecord{Pass: e.passNo - 1, Step: first, Phase: phase, Layer: l, Expert: int(k) % e.nE, State: st})
			}
			if e.measuring {
				e.res.Uses++
				if e.keys[k].requested == e.passNo {
					e.res.PrefetchCovered++
				}
				switch st {
				case Resident:
					e.res.Hits++
				case Loading:
					e.res.InflightHits++
				default:
					e.res.Misses++
				}
			}
			if e.keys[k].prefUnused {
				e.keys[k].prefUnused = false
				if e.measuring {
					e.res.PrefetchUseful++
				}
			}
			if st == Absent {
				ok, err := e.admit(k, false, first)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("internal: demand admission refused")
				}
				if e.cfg.Layout == LayoutGGUFMmap {
					e.keys[k].syncLoad = true
				} else {
					e.startAsync(k, true)
				}
			}
		}
		e.observeUses(l, first, int(row))
		if err := e.computeExperts(l); err != nil {
			return err
		}
	}
	e.compute(e.headTime(tokens))
	return nil
}

// compute advances the compute thread by busy time d.
func (e *engine) compute(d Time) {
	e.now += d
	if e.measuring {
		e.res.ComputeNS += d
	}
}

// lookahead is moment 1 of layer l: offer the policy the pass's router scores
// and admit what it asks for, in its order, while it makes room.
func (e *engine) lookahead(steps []traces.Step, i, j, l int, first int64) error {
	la := &e.la
	la.Layer = l
	la.Steps = la.Steps[:0]
	la.Scores = la.Scores[:0]
	la.Index = la.Index[:0]
	for t := i; t < j; t++ {
		la.Steps = append(la.Steps, int64(t))
		la.Scores = append(la.Scores, steps[t].Layers[l].Lookahead)
		la.Index = append(la.Index, steps[t].Layers[l].LookaheadIndex)
	}
	e.pfBuf = e.pol.Prefetch(la, e.view, e.pfBuf[:0])
	for _, k := range e.pfBuf {
		if k < 0 || int(k) >= len(e.keys) {
			return fmt.Errorf("policy %s asked to prefetch expert key %d: no such expert", e.pol.Name(), k)
		}
		// A naming predicts the key's next use: later in this pass, or in the
		// next pass when it names a layer at or before this one.
		target := e.passNo
		if int(k)/e.nE <= l {
			target++
		}
		if e.keys[k].requested != target {
			e.keys[k].requested = target
			if e.measuring {
				e.res.PrefetchRequested++
			}
		}
		if e.keys[k].state != Absent {
			continue
		}
		ok, err := e.admit(k, true, first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		e.keys[k].prefUnused = true
		if e.measuring {
			e.res.PrefetchLoads++
			e.res.PrefetchBytes += e.keyBytes(k)
		}
		e.startAsync(k, false)
	}
	return nil
}

// computeExperts runs the routed experts of layer l for the current union.
func (e *engine) computeExperts(l int) error {
	run := func(idx int) {
		e.compute(e.expertTime(l, int(e.cnt[idx])))
	}
	if !e.cfg.CachedFirst {
		for idx, k := range e.union {
			if err := e.waitResident(k); err != nil {
				return err
			}
			run(idx)
		}
		return nil
	}
	// Pending experts in union order; each round computes those resident now
	// and drops them, so later rounds scan only what is still loading.
	e.pend = e.pend[:0]
	for idx := range e.union {
		e.pend = append(e.pend, int32(idx))
	}
	for len(e.pend) > 0 {
		e.fl.advance(e.now)
		kept := e.pend[:0]
		for _, idx := range e.pend {
			// NB: no flash advance between experts: the compute order of
			// resident experts does not change when the thread idles.
			if e.keys[e.union[idx]].state == Resident {
				run(int(idx))
			} else {
				kept = append(kept, idx)
			}
		}
		progressed := len(kept) < len(e.pend)
		e.pend = kept
		if progressed || len(e.pend) == 0 {
			continue
		}
		// Nothing resident: fault in the first synchronous miss, or wait for
		// the next read to finish.
		if e.cfg.Layout == LayoutGGUFMmap {
			faulted := false
			for _, idx := range e.pend {
				if k := e.union[idx]; e.keys[k].syncLoad {
					e.faultIn(k)
					faulted = true
					break
				}
			}
			if faulted {
				continue
			}
		}
		if !e.waitAnyRead() {
			return fmt.Errorf("internal: %d experts of layer %d never became resident", len(e.pend), l)
		}
	}
	return nil
}

// observeUses tells the policy of the layer's uses in order of each expert's
// last use in the pass, so recency reflects the latest token that used it
// (for one token this is rank order). NB: this order, not first appearance,
// is what reproduces BigMoeOnEdge's recorded residency on batched prefill.
func (e *engine) observeUses(l int, first int64, rows int) {
	if rows == len(e.union) { // every expert used once: union order is use order
		for _, k := range e.union {
			e.pol.Observe(Event{Kind: Used, Key: k, Layer: l, Step: first})
		}
		return
	}
	e.order = e.order[:0]
	for idx := range e.union {
		e.order = append(e.order, int32(idx))
	}
	slices.SortFunc(e.order, func(a, b int32) int { return cmp.Compare(e.last[a], e.last[b]) })
	for _, idx := range e.order {
		e.pol.Observe(Event{Kind: Used, Key: e.union[idx], Layer: l, Step: first})
	}
}
