package policies

// NewBelady builds Belady's MIN (Belady 1966) as classic replay tools report
// it: demand admission only (no prefetch), evicting the resident expert whose
// next use is farthest in the future. It shares the oracle's precomputed
// next-use index and eviction rule; it differs from oracle only in never
// prefetching. With equal expert sizes and one token per pass its miss count
// is the minimum any demand-paging policy can reach at that cache size (a
// hit-rate bound for lru, lfu and ondemand, not for prefetching policies and
// not a throughput bound).
func NewBelady(p Params) (*Oracle, error) {
	p, err := p.resolve("belady")
	if err != nil {
		return nil, err
	}
	return newOracle("belady", p)
}
