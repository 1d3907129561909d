package policies

import (
	"fmt"
	"math"

	"github.com/lessim/lessim/sim"
)

var _ sim.Policy = (*Oracle)(nil)

// never is the next-use position of a key that is not used again.
const never = math.MaxInt64

// Oracle is Belady eviction plus perfect one-layer-ahead prefetch: a hit-rate
// reference real policies are compared against, not a throughput bound (it
// reads every expert the next layer needs as early as it can, which can cost
// more flash time than a policy that reads less). It knows the whole trace
// (through its constructor, by design). At moment 1 of layer l it
// prefetches exactly the experts that layer l+1 will select for the pass's
// tokens (at the last layer, layer 0 of the next pass's tokens); it evicts by Belady's rule (Belady 1966): the evictable key whose
// next use is farthest in the future, ties to the lower key. For prefetch room
// it declines when that victim is needed no later than the key being
// prefetched (Belady admission: never trade a sooner use for a later one).
//
// Positions are step×Layers + layer in trace order; uses by other tokens of the
// current pass at the same layer count as one position. With equal-size
// experts and one token per pass this is the optimal demand-paging miss count
// (MIN); with layer-dependent sizes or multi-token passes it is the classic
// heuristic, not a proven optimum.
//
// Each key's use positions are precomputed from the trace's Future (one flat
// array of uint32 positions, CSR-style) with a cursor advanced by Used events; cached keys sit in a lazy max-heap by next use
// (stale entries are dropped when popped, the heap is compacted when mostly
// stale), so a victim costs O(s log n) for s skipped keys, not a scan.
type Oracle struct {
	name       string
	demandOnly bool // belady: no prefetch, demand admission only (MIN)

	fut     *Future
	layers  int
	experts int

	start  []int32  // uses of key k are at[start[k]:start[k+1]]
	at     []uint32 // use positions, ascending per key
	cursor []int32  // index in at of each key's next use

	cached []bool
	ver    []uint32 // bumped whenever a key's heap entry is superseded
	heap   []nextUse
	live   int // cached keys
	stash  []nextUse

	passFirst, passLast int64 // steps of the current pass (from PassStart and Prefetch)
	touched             []sim.Key
	wanted              []sim.Key
	wantedAt            int
	mark                []uint32
	gen                 uint32
}

// nextUse is one heap entry: key's next use as of version ver.
type nextUse struct {
	pos int64
	key sim.Key
	ver uint32
}

// NewOracle builds the oracle for p.Model from the trace's future: p.Future,
// or the full trace p.Trace when it is nil; the engine's step indices must
// index that trace.
func NewOracle(p Params) (*Oracle, error) {
	p, err := p.resolve("oracle")
	if err != nil {
		return nil, err
	}
	return newOracle("oracle", p)
}

// newOracle builds the precomputed next-use index over the trace (p resolved).
func newOracle(name string, p Params) (*Oracle, error) {
	fut, err := p.future()
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	if int64(fut.Len())*int64(fut.layers) > math.MaxUint32 {
		return nil, fmt.Errorf("policy %s: a trace of %d steps × %d layers has more use positions than the next-use index holds (2^32)", name, fut.Len(), fut.layers)
	}
	o := &Oracle{name: name, demandOnly: name == "belady", fut: fut, layers: len(p.Model.Layers), experts: p.Model.Experts, passFirst: -1, passLast: -1}
	n := numKeys(p.Model)
	o.start = make([]int32, n+1)
	o.forEachUse(func(k sim.Key, _ int64) { o.start[k+1]++ })
	for k := range n {
		o.start[k+1] += o.start[k]
	}
	o.at = make([]uint32, o.start[n])
	o.cursor = make([]int32, n)
	copy(o.cursor, o.start[:n])
	o.forEachUse(func(k sim.Key, pos int64) {
		o.at[o.cursor[k]] = uint32(pos)
		o.cursor[k]++
	})
	copy(o.cursor, o.start[:n])
	o.cached = make([]bool, n)
	o.ver = make([]uint32, n)
	o.mark = make([]uint32, n)
	return o, nil
}

// forEachUse calls f for every distinct (key, position) of the trace, in trace order.
func (o *Oracle) forEachUse(f func(k sim.Key, pos int64)) {
	for s := range o.fut.Len() {
		for l := range o.layers {
			xs := o.fut.Experts(s, l)
			for i, e := range xs {
				if dupBefore(xs, i) {
					continue
				}
				f(sim.MakeKey(l, int(e), o.experts), int64(s)*int64(o.layers)+int64(l))
			}
		}
	}
}

// dupBefore reports whether xs[i] already occurs in xs[:i] (top-k lists are short).
func dupBefore[T comparable](xs []T, i int) bool {
	for _, x := range xs[:i] {
		if x == xs[i] {
			return true
		}
	}
	return false
}

// Name is the registry name.
func (o *Oracle) Name() string { return o.name }

// next is k's next use position, or never.
func (o *Oracle) next(k sim.Key) int64 {
	if c := o.cursor[k]; c < o.start[k+1] {
		return int64(o.at[c])
	}
	return never
}

// effective maps a position used by any token of the current pass to the
// pass's first step, so same-layer uses within one pass compare equal.
func (o *Oracle) effective(pos int64) int64 {
	if pos == never || o.passFirst < 0 {
		return pos
	}
	step, layer := pos/int64(o.layers), pos%int64(o.layers)
	if step >= o.passFirst && step <= o.passLast {
		return o.passFirst*int64(o.layers) + layer
	}
	return pos
}

// Prefetch asks for the experts layer la.Layer+1 truly selects for la.Steps
// (at the last layer: layer 0 of the steps the next pass may start with).
func (o *Oracle) Prefetch(la *sim.Lookahead, view sim.CacheView, dst []sim.Key) []sim.Key {
	o.wanted, o.wantedAt = o.wanted[:0], 0
	if len(la.Steps) > 0 {
		o.passFirst, o.passLast = la.Steps[0], la.Steps[0]
		for _, s := range la.Steps {
			o.passFirst, o.passLast = min(o.passFirst, s), max(o.passLast, s)
		}
	}
	if o.demandOnly || la.Layer < 0 || la.Layer >= o.layers || len(la.Steps) == 0 {
		return dst
	}
	o.gen++
	if o.gen == 0 {
		clear(o.mark)
		o.gen = 1
	}
	// Within the pass: layer l+1 of the pass's tokens. At the last layer: layer
	// 0 of the next pass, which starts at one of the steps passFirst+1 ..
	// passLast+1 (which one depends on how many speculative drafts are
	// accepted; NB: it may also be a step the engine skips, such as the next
	// prompt's prefill when prefill is not simulated: a wasted read at worst).
	layer, from, to := la.Layer+1, o.passFirst, o.passLast
	if layer == o.layers {
		layer, from, to = 0, o.passFirst+1, o.passLast+1
		if o.passFirst < int64(o.fut.Len()) && o.fut.Prompt(int(o.passFirst)) {
			from = to // a prompt is never re-verified: decoding starts after it
		}
	}
	want := func(s int64) {
		if s < 0 || s >= int64(o.fut.Len()) {
			return
		}
		for _, e := range o.fut.Experts(int(s), layer) {
			k := sim.MakeKey(layer, int(e), o.experts)
			// NB: resident keys are named too (the engine skips them), so the
			// engine's prefetch recall and precision measure the prediction.
			if o.mark[k] == o.gen {
				continue
			}
			o.mark[k] = o.gen
			o.wanted = append(o.wanted, k)
			dst = append(dst, k)
		}
	}
	if layer > 0 {
		for _, s := range la.Steps {
			want(s)
		}
	} else {
		for s := from; s <= to; s++ {
			want(s)
		}
	}
	return dst
}

// startPass handles speculative decoding's re-verification: a pass may start
// at a step the previous pass already covered (its drafts were rejected), so
// the uses of those steps are in the future again. Only keys the previous pass
// used can have consumed them; their cursors move back.
func (o *Oracle) startPass(first int64) {
	if first <= o.passLast {
		from := first * int64(o.layers)
		for _, k := range o.touched {
			c := o.cursor[k]
			for c > o.start[k] && int64(o.at[c-1]) >= from {
				c--
			}
			if c != o.cursor[k] {
				o.cursor[k] = c
				if o.cached[k] {
					o.ver[k]++
					o.push(nextUse{o.next(k), k, o.ver[k]})
				}
			}
		}
	}
	o.touched = o.touched[:0]
}

// Observe starts passes, advances next-use cursors on Used and tracks cached keys.
func (o *Oracle) Observe(ev sim.Event) {
	if ev.Kind == sim.PassStart {
		o.startPass(ev.Step)
		o.passFirst, o.passLast = ev.Step, ev.Step+int64(max(ev.Tokens, 1))-1
		return
	}
	k := ev.Key
	if k < 0 || int(k) >= len(o.cached) {
		return
	}
	switch ev.Kind {
	case sim.Used:
		// Every use of k by this pass's tokens (same layer) is consumed now.
		limit := max(o.passLast, ev.Step)*int64(o.layers) + int64(int(k)/o.experts)
		end := o.start[k+1]
		o.touched = append(o.touched, k)
		for o.cursor[k] < end && int64(o.at[o.cursor[k]]) <= limit {
			o.cursor[k]++
		}
		if o.cached[k] {
			o.ver[k]++
			o.push(nextUse{o.next(k), k, o.ver[k]})
		}
	case sim.Admitted:
		if !o.cached[k] {
			o.cached[k] = true
			o.live++
		}
		o.ver[k]++
		o.push(nextUse{o.next(k), k, o.ver[k]})
	case sim.Evicted:
		if o.cached[k] {
			o.cached[k] = false
			o.live--
		}
		o.ver[k]++
	}
}

// Victim names the evictable key used farthest in the future (Belady); for a
// prefetch it declines when that key is needed no later than the prefetched one.
func (o *Oracle) Victim(view sim.CacheView, _ int64, forPrefetch bool) (sim.Key, bool) {
	if len(o.heap) > 2*o.live+64 {
		o.compact()
	}
	o.stash = o.stash[:0]
	var found nextUse
	ok := false
	for len(o.heap) > 0 {
		e := o.pop()
		if e.ver != o.ver[e.key] || !o.cached[e.key] {
			continue // superseded: drop for good
		}
		o.stash = append(o.stash, e)
		if evictable(view, e.key) {
			found, ok = e, true
			break
		}
	}
	for _, e := range o.stash {
		o.push(e)
	}
	if !ok {
		return 0, false
	}
	if forPrefetch {
		if pk, has := o.pending(view); has && o.effective(found.pos) <= o.effective(o.next(pk)) {
			return 0, false
		}
	}
	return found.key, true
}

// pending is the prefetch the engine is making room for: the first key of the
// latest request that is still absent (the engine admits in request order).
func (o *Oracle) pending(view sim.CacheView) (sim.Key, bool) {
	for o.wantedAt < len(o.wanted) && view.State(o.wanted[o.wantedAt]) != sim.Absent {
		o.wantedAt++
	}
	if o.wantedAt == len(o.wanted) {
		return 0, false
	}
	return o.wanted[o.wantedAt], true
}

// above is the heap order: later next use first, then lower key.
func above(a, b nextUse) bool {
	if a.pos != b.pos {
		return a.pos > b.pos
	}
	return a.key < b.key
}

func (o *Oracle) push(e nextUse) {
	o.heap = append(o.heap, e)
	h := o.heap
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if !above(h[j], h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

func (o *Oracle) pop() nextUse {
	h := o.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	o.heap = h[:last]
	o.siftDown(0)
	return top
}

func (o *Oracle) siftDown(j int) {
	h := o.heap
	for {
		l := 2*j + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && above(h[r], h[l]) {
			m = r
		}
		if !above(h[m], h[j]) {
			return
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
}

// compact drops superseded entries and restores the heap order.
func (o *Oracle) compact() {
	h := o.heap[:0]
	for _, e := range o.heap {
		if e.ver == o.ver[e.key] && o.cached[e.key] {
			h = append(h, e)
		}
	}
	o.heap = h
	for j := len(h)/2 - 1; j >= 0; j-- {
		o.siftDown(j)
	}
}
