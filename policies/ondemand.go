package policies

import "github.com/lessim/lessim/sim"

var _ sim.Policy = (*OnDemand)(nil)

// OnDemand is the stock baseline of the ablation: no prefetch, every miss is
// read when the layer's top-k is known, LRU eviction. It behaves exactly like
// LRU; it is kept as its own name because ablations start from it and the
// baseline should stay put if "lru" ever changes.
type OnDemand struct{ LRU }

// NewOnDemand builds the stock on-demand baseline for p.Model.
func NewOnDemand(p Params) (*OnDemand, error) {
	p, err := p.resolve("ondemand")
	if err != nil {
		return nil, err
	}
	return &OnDemand{*newLRU("ondemand", p.Model)}, nil
}
