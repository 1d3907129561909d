package sim

import (
	"fmt"
	"math"
)

// Check reports the first broken invariant of r, a result as a run returns
// it, simulated or measured: times and counters in range, hits + in-flight
// hits + misses = uses, latency percentiles ordered within the run's time,
// each ratio equal to what its counters give (1e-6 relative) and the
// prefetch ratios in [0, 1].
func (r *Result) Check() error {
	if r.TimeNS <= 0 || r.StallNS < 0 || r.StallNS > r.TimeNS || r.ComputeNS < 0 || r.FlashBytes < 0 || r.FlashReads < 0 || r.PeakResidentBytes < 0 {
		return fmt.Errorf("result: time_ns %d, stall_ns %d, compute_ns %d, flash_bytes %d, flash_reads %d, peak_resident_bytes %d out of range",
			r.TimeNS, r.StallNS, r.ComputeNS, r.FlashBytes, r.FlashReads, r.PeakResidentBytes)
	}
	if r.Hits < 0 || r.InflightHits < 0 || r.Misses < 0 || r.Hits+r.InflightHits+r.Misses != r.Uses {
		return fmt.Errorf("result: hits %d + inflight_hits %d + misses %d != uses %d", r.Hits, r.InflightHits, r.Misses, r.Uses)
	}
	if !(r.LatencyP50NS <= r.LatencyP90NS && r.LatencyP90NS <= r.LatencyP99NS && r.LatencyP99NS <= r.LatencyMaxNS && r.LatencyMaxNS <= r.TimeNS) {
		return fmt.Errorf("result: latency percentiles %d ≤ %d ≤ %d ≤ %d ≤ time_ns %d do not hold", r.LatencyP50NS, r.LatencyP90NS, r.LatencyP99NS, r.LatencyMaxNS, r.TimeNS)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"tokens_per_sec", r.TokensPerSec, float64(r.Tokens) * 1e9 / float64(r.TimeNS)},
		{"hit_rate", r.HitRate, ratio(r.Hits, r.Uses)},
		{"accepted_per_pass", r.AcceptedPerPass, ratio(r.Tokens, r.Passes)},
		{"flash_bytes_per_token", r.FlashBytesPerToken, ratio(r.FlashBytes, r.Tokens)},
	} {
		if math.IsNaN(f.got) || math.Abs(f.got-f.want) > 1e-6*math.Max(1, math.Abs(f.want)) {
			return fmt.Errorf("result: %s %g, its counters give %g", f.name, f.got, f.want)
		}
	}
	if p, q := r.PrefetchRecall, r.PrefetchPrecision; !(p >= 0 && p <= 1 && q >= 0 && q <= 1) {
		return fmt.Errorf("result: prefetch_recall %g and prefetch_precision %g must lie in [0,1]", p, q)
	}
	return nil
}
