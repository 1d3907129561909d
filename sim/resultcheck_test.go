package sim

import "testing"

// TestResultCheck: a result whose ratios Finish derived from its counters
// passes; each broken invariant is found.
func TestResultCheck(t *testing.T) {
	good := func() *Result {
		r := &Result{Tokens: 4, Passes: 4, TimeNS: 4e6, StallNS: 1e6, Uses: 10, Hits: 6, InflightHits: 1, Misses: 3,
			FlashBytes: 300, FlashReads: 3, PrefetchRequested: 5, PrefetchCovered: 4}
		r.Finish([]int64{1e6, 1e6, 1e6, 1e6})
		return r
	}
	if err := good().Check(); err != nil {
		t.Fatalf("a consistent result: %v", err)
	}
	for name, breakIt := range map[string]func(*Result){
		"stall above time":  func(r *Result) { r.StallNS = r.TimeNS + 1 },
		"uses do not add":   func(r *Result) { r.Misses++ },
		"percentile order":  func(r *Result) { r.LatencyP50NS = r.LatencyMaxNS + 1 },
		"tokens per second": func(r *Result) { r.TokensPerSec *= 1.001 },
		"hit rate":          func(r *Result) { r.HitRate = 0.7 },
		"recall above 1":    func(r *Result) { r.PrefetchRecall = 1.5 },
	} {
		r := good()
		breakIt(r)
		if r.Check() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
