package sim

// addCounts adds the books' tallies to the result's counters.
func (r *Result) addCounts(c Counts) {
	r.Uses += c.Uses
	r.Hits += c.Hits
	r.InflightHits += c.InflightHits
	r.Misses += c.Misses
	r.PrefetchRequested += c.PrefetchRequested
	r.PrefetchCovered += c.PrefetchCovered
	r.PrefetchLoads += c.PrefetchLoads
	r.PrefetchUseful += c.PrefetchUseful
	r.PrefetchBytes += c.PrefetchBytes
	r.WastedPrefetchBytes += c.WastedPrefetchBytes
	r.PeakResidentBytes = max(r.PeakResidentBytes, c.PeakResidentBytes)
	r.OverBudgetLoads += c.OverBudgetLoads
	r.OverBudgetBytes = max(r.OverBudgetBytes, c.OverBudgetBytes)
	r.NeighbourLoads += c.NeighbourLoads
	r.NeighbourBytes += c.NeighbourBytes
}

// AddCounts adds a Books' tallies to r's counters (the live driver's results
// take them as the simulator's do).
func (r *Result) AddCounts(c Counts) { r.addCounts(c) }

// Finish derives r's ratio and percentile fields from its counters and the
// per-token latencies (sorted in place), as a simulated run does.
func (r *Result) Finish(latencies []int64) { r.finish(latencies) }
