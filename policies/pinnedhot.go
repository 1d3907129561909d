package policies

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

var _ sim.Policy = (*PinnedHot)(nil)

// PinnedHot keeps a static hot list resident: the most popular experts of the
// trace (uses counted over p.Trace, as an offline profiling run would produce
// them), taken in popularity order (ties: lower key) until the next one would
// exceed PinFraction of the cache bytes. The pinned set is fixed at the first
// call, when the cache capacity is first seen. At moment 1 of layer l it
// prefetches the absent pinned experts of layer l+1 (of layer 0 for the next
// pass at the last layer); the rest of the cache is LRU.
//
// Pinned keys are never victims, with one exception so that a PinFraction too
// large for the pass never deadlocks: when a demand miss finds no unpinned key
// to evict, the least popular evictable pinned key goes.
type PinnedHot struct {
	model   *devices.ModelSpec
	frac    float64
	order   []sim.Key         // keys used in the trace, most popular first
	uses    []int64           // trace uses per key
	list    recency[struct{}] // unpinned keys
	ready   bool
	pinned  []bool
	byLayer [][]sim.Key // pinned keys per layer, most popular first
	nPinned int
}

// NewPinnedHot builds the pinned-hot policy for p.Model from the popularity of
// the experts in the trace (p.Future, or p.Trace when it is nil) and
// p.PinFraction.
func NewPinnedHot(p Params) (*PinnedHot, error) {
	p, err := p.resolve("pinned-hot")
	if err != nil {
		return nil, err
	}
	n := numKeys(p.Model)
	h := &PinnedHot{model: p.Model, frac: p.PinFraction, uses: make([]int64, n), list: newRecency[struct{}](n),
		pinned: make([]bool, n), byLayer: make([][]sim.Key, len(p.Model.Layers))}
	fut, err := p.future()
	if err != nil {
		return nil, fmt.Errorf("policy pinned-hot: %w", err)
	}
	for s := range fut.Len() {
		for l := range fut.layers {
			xs := fut.Experts(s, l)
			for i, e := range xs {
				if !dupBefore(xs, i) {
					h.uses[sim.MakeKey(l, int(e), p.Model.Experts)]++
				}
			}
		}
	}
	for k, u := range h.uses {
		if u > 0 {
			h.order = append(h.order, sim.Key(k))
		}
	}
	slices.SortFunc(h.order, func(a, b sim.Key) int {
		if c := cmp.Compare(h.uses[b], h.uses[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return h, nil
}

// Name is the registry name.
func (h *PinnedHot) Name() string { return "pinned-hot" }

// Pinned lists the pinned keys, most popular first (empty before the first call).
func (h *PinnedHot) Pinned() []sim.Key { return h.order[:h.nPinned] }

// ensure fixes the pinned set from the cache capacity on the first call.
func (h *PinnedHot) ensure(view sim.CacheView) {
	if h.ready {
		return
	}
	h.ready = true
	budget := int64(h.frac * float64(view.CapacityBytes()))
	var used int64
	for _, k := range h.order {
		layer, _ := k.Split(h.model.Experts)
		eb := h.model.Layers[layer].ExpertBytes
		if used+eb > budget {
			break
		}
		used += eb
		h.nPinned++
		h.pinned[k] = true
		h.byLayer[layer] = append(h.byLayer[layer], k)
		h.list.remove(k)
	}
}

// Prefetch asks for the pinned experts of the next layer that are absent.
func (h *PinnedHot) Prefetch(la *sim.Lookahead, view sim.CacheView, dst []sim.Key) []sim.Key {
	h.ensure(view)
	if la.Layer < 0 || la.Layer >= len(h.byLayer) {
		return dst
	}
	for _, k := range h.byLayer[(la.Layer+1)%len(h.byLayer)] {
		if view.State(k) == sim.Absent {
			dst = append(dst, k)
		}
	}
	return dst
}

// Observe keeps the recency of the unpinned keys.
func (h *PinnedHot) Observe(ev sim.Event) {
	if !h.list.valid(ev.Key) || h.pinned[ev.Key] {
		return
	}
	h.list.observe(ev)
}

// Victim names the least recently used unpinned evictable key; failing that,
// for a demand miss only, the least popular evictable pinned key.
func (h *PinnedHot) Victim(view sim.CacheView, _ int64, forPrefetch bool) (sim.Key, bool) {
	h.ensure(view)
	for k := h.list.oldest(); k >= 0; k = h.list.newer(k) {
		if view.Evictable(k) {
			return k, true
		}
	}
	if forPrefetch {
		return 0, false
	}
	for i := h.nPinned - 1; i >= 0; i-- {
		if k := h.order[i]; view.Evictable(k) {
			return k, true
		}
	}
	return 0, false
}
