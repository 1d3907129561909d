package policies

import (
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/sim"
)

var (
	_ sim.Policy       = (*LRU)(nil)
	_ sim.UsesObserver = (*LRU)(nil)
	_ sim.LoadObserver = (*LRU)(nil)
)

// LRU evicts the least recently used expert and never prefetches. Recency is
// refreshed by Used and Admitted events. Every event and, when the oldest key is
// evictable, every victim choice is O(1): an intrusive list over all
// Layers×Experts keys, no map, no allocation after construction.
type LRU struct {
	name string
	list recency[struct{}]
}

// NewLRU builds an LRU policy for p.Model.
func NewLRU(p Params) (*LRU, error) {
	p, err := p.resolve("lru")
	if err != nil {
		return nil, err
	}
	return newLRU("lru", p.Model), nil
}

func newLRU(name string, m *devices.ModelSpec) *LRU {
	return &LRU{name: name, list: newRecency[struct{}](numKeys(m))}
}

// numKeys is the number of distinct keys of m: MoE layers × experts.
func numKeys(m *devices.ModelSpec) int { return len(m.Layers) * m.Experts }

// Name is the registry name.
func (p *LRU) Name() string { return p.name }

// Prefetch asks for nothing: LRU loads on demand only.
func (p *LRU) Prefetch(_ *sim.Lookahead, _ sim.CacheView, dst []sim.Key) []sim.Key { return dst }

// Observe moves used and admitted keys to the most recent end and forgets evicted ones.
func (p *LRU) Observe(ev sim.Event) {
	p.list.observe(ev)
}

// Admitted is Observe for an admission: k becomes the most recent.
// NB: observe's case written out, here and in ObserveUses: through a shared
// helper the touch stops being inlined (2–13 M more instructions per
// reference run, make bench-instr).
func (p *LRU) Admitted(k sim.Key, _ bool) {
	if p.list.valid(k) {
		p.list.touch(k)
	}
}

// Evicted is Observe for an eviction: k leaves the list.
func (p *LRU) Evicted(k sim.Key) { p.list.remove(k) }

// ObserveUses is Observe for a layer's Used events, in order.
func (p *LRU) ObserveUses(keys []sim.Key, _ int, _ int64) {
	list := p.list // NB: a local copy: stores through its nodes force no reloads
	for _, k := range keys {
		if list.valid(k) {
			list.touch(k)
		}
	}
}

// Victim names the least recently used key that is Resident and not InUse
// (loading keys cannot be evicted), or declines when there is none.
func (p *LRU) Victim(view sim.CacheView, _ int64, _ bool) (sim.Key, bool) {
	for k := p.list.oldest(); k >= 0; k = p.list.newer(k) {
		if view.Evictable(k) {
			return k, true
		}
	}
	return 0, false
}
