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
}
