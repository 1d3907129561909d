package policies

import (
	"fmt"
	"math"
	"slices"

	"github.com/lessim/lessim/sim"
)

var (
	_ sim.Policy       = (*Oracle)(nil)
	_ sim.UsesObserver = (*Oracle)(nil)
	_ sim.LoadObserver = (*Oracle)(nil)
)

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
// Next uses are precomputed once per trace by its Future (nextUses: for each
// selection, in trace order, the position of its key's next use; shared by
// every run over the trace); a run keeps each key's next use and advances it
// on Used events from the index beside the selection consumed. The next uses of
// cached keys are members of a bitset over positions with summary levels
// (levelBits), so a victim is the highest position's lowest evictable key,
// found in a few word operations rather than a scan or a heap's log n moves;
// the keys at a position are the trace's selections there. A count per
// position of the cached keys whose next use it is keeps the bitset exact:
// a position leaves it when its last such key is evicted or used, so the
// victim search never visits a position no cached key holds.
type Oracle struct {
	name       string
	demandOnly bool // belady: no prefetch, demand admission only (MIN)

	fut     *Future
	layers  int
	experts int

	uses *nextUses // the trace's, shared and read-only
	keys []oracleKey

	// byUse holds exactly the positions that are the next use of a cached
	// key, held counts (and names) those keys per position; neverUsed holds the cached
	// keys with no use left, lazily: a member whose key has since been
	// evicted or moved back is dropped when Victim meets it.
	byUse     levelBits
	held      []heldAt
	neverUsed levelBits

	passFirst, passLast int64 // steps of the current pass (from PassStart and Prefetch)
	touched             []sim.Key
	wanted              []sim.Key
	wantedAt            int
	mark                []uint32
	gen                 uint32
}

// oracleKey is one key's state in a run.
type oracleKey struct {
	next   uint32 // position of the key's next use, or noUse
	cached bool
}

// noUse is oracleKey.next past a key's last use.
const noUse = math.MaxUint32

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

// newOracle builds the oracle over the trace's next-use index (p resolved),
// which the Future builds once and shares with every run over the trace.
func newOracle(name string, p Params) (*Oracle, error) {
	fut, err := p.future()
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	u, err := fut.nextUses()
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	o := &Oracle{name: name, demandOnly: name == "belady", fut: fut, layers: len(p.Model.Layers), experts: p.Model.Experts, passFirst: -1, passLast: -1}
	n := numKeys(p.Model)
	o.uses = u
	o.keys = make([]oracleKey, n)
	for k := range o.keys {
		o.keys[k].next = u.first[k]
	}
	o.byUse = newLevelBits(fut.Len() * o.layers)
	o.held = make([]heldAt, fut.Len()*o.layers)
	o.neverUsed = newLevelBits(n)
	o.mark = make([]uint32, n)
	return o, nil
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
	if n := o.keys[k].next; n != noUse {
		return int64(n)
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
// used can have consumed them: each one's next use moves back to its first
// at or after the pass's first step.
func (o *Oracle) startPass(first int64) {
	if first <= o.passLast {
		for _, k := range o.touched {
			layer, e := k.Split(o.experts)
			// NB: the previous pass consumed k's uses up to its last step, so
			// a use from first on, if any, is at one of those steps.
			for s := first; s <= o.passLast && s < int64(o.fut.Len()); s++ {
				if slices.Contains(o.fut.Experts(int(s), layer), uint16(e)) {
					o.setNext(k, uint32(s*int64(o.layers)+int64(layer)))
					break
				}
			}
		}
	}
	o.touched = o.touched[:0]
}

// index records cached key k's next use.
func (o *Oracle) index(k sim.Key) { o.hold(k, o.keys[k].next) }

// unindex forgets cached key k's next use (neverUsed forgets lazily).
func (o *Oracle) unindex(k sim.Key) { o.release(k, o.keys[k].next) }

// heldAt is a position's cached keys whose next use it is: their number
// (high 32 bits) and the XOR of the keys (low 32 bits), which is the key
// itself when there is one, so a victim search needs the trace's
// selections there only when several keys share the position. NB: one
// word, so holding and releasing touch one place per position.
type heldAt uint64

func (h heldAt) count() uint32 { return uint32(h >> 32) }
func (h heldAt) only() sim.Key { return sim.Key(uint32(h)) }

// hold records that n is the next use of cached key k (noUse: k has none).
func (o *Oracle) hold(k sim.Key, n uint32) {
	if n == noUse {
		o.neverUsed.set(int(k))
		return
	}
	h := (o.held[n] + 1<<32) ^ heldAt(uint32(k))
	o.held[n] = h
	if h.count() == 1 {
		o.byUse.set(int(n))
	}
}

// release forgets cached key k, whose next use is n.
func (o *Oracle) release(k sim.Key, n uint32) {
	if n == noUse {
		return
	}
	h := (o.held[n] - 1<<32) ^ heldAt(uint32(k))
	o.held[n] = h
	if h.count() == 0 {
		o.byUse.clear(int(n))
	}
}

// setNext makes n k's next use, keeping the index of a cached key exact.
func (o *Oracle) setNext(k sim.Key, n uint32) {
	ks := &o.keys[k]
	if ks.cached {
		o.unindex(k)
	}
	ks.next = n
	if ks.cached {
		o.index(k)
	}
}

// Observe starts passes, advances next uses on Used and tracks cached keys.
func (o *Oracle) Observe(ev sim.Event) {
	if ev.Kind == sim.PassStart {
		o.startPass(ev.Step)
		o.passFirst, o.passLast = ev.Step, ev.Step+int64(max(ev.Tokens, 1))-1
		return
	}
	k := ev.Key
	if !o.valid(k) {
		return
	}
	switch ev.Kind {
	case sim.Used:
		o.touched = append(o.touched, k)
		layer, e := k.Split(o.experts)
		o.used(k, uint16(e), o.limit(layer, ev.Step))
	case sim.Admitted:
		o.Admitted(k, ev.Prefetch)
	case sim.Evicted:
		o.Evicted(k)
	}
}

// valid reports whether k is one of the model's keys.
func (o *Oracle) valid(k sim.Key) bool { return uint(k) < uint(len(o.keys)) }

// Admitted is Observe for an admission: k joins the victim index.
func (o *Oracle) Admitted(k sim.Key, _ bool) {
	if o.valid(k) && !o.keys[k].cached {
		o.keys[k].cached = true
		o.index(k)
	}
}

// Evicted is Observe for an eviction: k leaves the victim index.
func (o *Oracle) Evicted(k sim.Key) {
	if o.valid(k) && o.keys[k].cached {
		o.unindex(k)
		o.keys[k].cached = false
	}
}

// ObserveUses is Observe for a layer's Used events.
func (o *Oracle) ObserveUses(keys []sim.Key, layer int, step int64) {
	// NB: one limit for every key (they share layer and step), and a local
	// touched kept in registers.
	limit, touched, base := o.limit(layer, step), o.touched, layer*o.experts
	for _, k := range keys {
		if o.valid(k) {
			touched = append(touched, k)
			o.used(k, uint16(int(k)-base), limit)
		}
	}
	o.touched = touched
}

// limit is the last position a use of layer by step's token consumes: every
// use of that layer by the pass's tokens (same layer, steps up to passLast).
func (o *Oracle) limit(layer int, step int64) uint64 {
	return uint64(max(o.passLast, step)*int64(o.layers)) + uint64(layer)
}

// used consumes every use of k (of layer's expert e) up to limit; the
// caller records k in touched.
func (o *Oracle) used(k sim.Key, e uint16, limit uint64) {
	n := o.keys[k].next
	// NB: noUse is above every limit (limit < Len×layers <= noUse).
	if uint64(n) > limit {
		return
	}
	// The index is read at the use being consumed: at the position the run
	// is at (or, in a pass of several tokens, one of its positions).
	for uint64(n) <= limit {
		n = o.fut.followUse(o.uses, n, e)
	}
	o.setNext(k, n)
}

// Victim names the evictable key used farthest in the future (Belady; ties
// to the lower key); for a prefetch it declines when that key is needed no
// later than the prefetched one.
func (o *Oracle) Victim(view sim.CacheView, _ int64, forPrefetch bool) (sim.Key, bool) {
	k, pos, ok := o.farthest(view)
	if !ok {
		return 0, false
	}
	if forPrefetch {
		if pk, has := o.pending(view); has && o.effective(pos) <= o.effective(o.next(pk)) {
			return 0, false
		}
	}
	return k, true
}

// farthest is the evictable cached key whose next use is latest (never
// first), ties to the lower key, with that use; members of neverUsed that no
// cached key holds any more are dropped on the way.
func (o *Oracle) farthest(view sim.CacheView) (sim.Key, int64, bool) {
	for i := o.neverUsed.first(); i >= 0; i = o.neverUsed.next(i + 1) {
		k := sim.Key(i)
		if ks := &o.keys[k]; !ks.cached || ks.next != noUse {
			o.neverUsed.clear(i)
			continue
		}
		if view.Evictable(k) {
			return k, never, true
		}
	}
	for p := o.byUse.last(); p >= 0; p = o.byUse.prev(p - 1) {
		if h := o.held[p]; h.count() == 1 {
			if k := h.only(); view.Evictable(k) {
				return k, int64(p), true
			}
			continue
		}
		step, layer := p/o.layers, p%o.layers
		best := sim.Key(-1)
		for _, e := range o.fut.Experts(step, layer) {
			k := sim.MakeKey(layer, int(e), o.experts)
			if ks := &o.keys[k]; !ks.cached || ks.next != uint32(p) {
				continue
			}
			if (best < 0 || k < best) && view.Evictable(k) {
				best = k
			}
		}
		if best >= 0 {
			return best, int64(p), true
		}
	}
	return 0, 0, false
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
